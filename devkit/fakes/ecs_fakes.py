"""Explicit fakes for what moto 5.2.1 does not implement, behind the real boto3 client.

- ``FakeEcsTaskProtection``: moto has no UpdateTaskProtection / GetTaskProtection. The fake answers
  those two operations on a moto-backed client (botocore ``before-send`` hook: per attempt, below
  botocore's retries, where the fault fakes of ``aws_faults`` act too), keeping per-task
  protection state and ECS's documented behaviour: ``expiresInMinutes`` (1-2,880, default 120 when
  enabling) sets an ``expirationDate`` after which the task reads as unprotected (by the fake's
  clock), and the failures ``MISSING`` / ``TASK_NOT_VALID`` (a task that is not part of a service),
  so ``BotoEcsTasks`` runs its real request and failure handling.
- ``EcsManagedTagsSetting``: moto 5.2.1 drops ``enableECSManagedTags`` at CreateService (its
  UpdateService keeps it); the fake remembers what CreateService set and adds it to DescribeServices'
  answer where moto left it out, as ECS answers, so the drainer's check of the setting runs on boto3.
- ``EcsRollingDeployment``: moto 5.2.1 keeps one deployment per service (it never starts a rolling
  update); while ``rolling`` is on, the fake adds the old deployment a rolling update runs beside
  the new PRIMARY to DescribeServices' answer, as ECS lists it.
- ``EcsThrottling``: makes chosen ECS operations answer ``ThrottlingException`` without reaching moto.
- ``EcsTaskPlacement``: moto 5.2.1 answers DescribeTasks without ``availabilityZone`` and
  ``startedAt``, which ECS gives every running Fargate task; the fake places each task RunTask
  started in a zone (round robin, in the order started) and adds both to DescribeTasks' answer.
- ``FakeEcsTaskMetadataEndpoint``: a local HTTP server standing in for the ECS task metadata
  endpoint v4 (``/taskWithTags``), serving the tags a callable returns (e.g. moto's). Like the ECS
  agent it omits ``TaskTags`` when the task has none, and when the tag lookup fails it omits them
  and reports the failure in ``Errors`` (``ErrorField: "TaskTags"``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders

from devkit.fakes.aws_faults import ANSWERED_URL, answered

# UpdateTaskProtection: expiresInMinutes defaults to 120 and accepts 1 to 2,880.
DEFAULT_PROTECTION_MINUTES = 120
MAX_PROTECTION_MINUTES = 2880


class FakeEcsTaskProtection:
    def __init__(
        self,
        client: Any,
        shared_with: FakeEcsTaskProtection | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        """``shared_with``: another client's fake whose protection state (and clock) this one serves."""
        self.client = client
        self.protected: dict[str, bool] = shared_with.protected if shared_with else {}
        self.updates: list[tuple[str, bool]] = shared_with.updates if shared_with else []
        self.expires: dict[str, datetime] = shared_with.expires if shared_with else {}
        self._owner = shared_with
        self._clock = clock or (lambda: datetime.now(UTC))
        client.meta.events.register("before-send.ecs.UpdateTaskProtection", self._update)
        client.meta.events.register("before-send.ecs.GetTaskProtection", self._get)

    def now(self) -> datetime:
        return self._owner.now() if self._owner else self._clock()

    def set_clock(self, clock: Callable[[], datetime]) -> None:
        self._clock = clock

    def enabled(self, task_arn: str) -> bool:
        """Protected right now: enabled and not yet expired."""
        expiry = self.expires.get(task_arn)
        return self.protected.get(task_arn, False) and (expiry is None or expiry > self.now())

    def _resolve(self, cluster: str, task: str) -> tuple[str | None, str | None]:
        found = self.client.describe_tasks(cluster=cluster, tasks=[task])["tasks"]
        if not found or found[0]["lastStatus"] == "STOPPED":
            return None, "MISSING"
        if not found[0].get("group", "").startswith("service:"):
            return found[0]["taskArn"], "TASK_NOT_VALID"
        return found[0]["taskArn"], None

    def _answer(
        self, params: dict[str, Any], enable: bool | None, minutes: int | None = None
    ) -> dict[str, Any]:
        protected, failures = [], []
        for task in params["tasks"]:
            arn, failure = self._resolve(params["cluster"], task)
            if failure:
                failures.append({"arn": arn or task, "reason": failure})
                continue
            assert arn is not None
            if enable is not None:
                self.protected[arn] = enable
                self.updates.append((arn, enable))
                if enable:
                    self.expires[arn] = self.now() + timedelta(minutes=minutes or DEFAULT_PROTECTION_MINUTES)
                else:
                    self.expires.pop(arn, None)
            answer: dict[str, Any] = {"taskArn": arn, "protectionEnabled": self.enabled(arn)}
            if self.enabled(arn):
                answer["expirationDate"] = self.expires[arn].timestamp()
            protected.append(answer)
        return {"protectedTasks": protected, "failures": failures}

    def serve(self, request: Any) -> tuple[int, dict[str, Any]]:
        """Carry out one UpdateTaskProtection or GetTaskProtection request: its status and answer."""
        body = _request_body(request)
        target = request.headers.get("X-Amz-Target", "")
        if not (target.decode() if isinstance(target, bytes) else target).endswith("UpdateTaskProtection"):
            return 200, self._answer(body, None)
        minutes = body.get("expiresInMinutes")
        if minutes is not None and not 1 <= int(minutes) <= MAX_PROTECTION_MINUTES:
            message = f"expiresInMinutes must be between 1 and {MAX_PROTECTION_MINUTES}"
            return 400, {"__type": "InvalidParameterException", "message": message}
        return 200, self._answer(body, bool(body["protectionEnabled"]), minutes)

    def _update(self, request: Any, **_: Any) -> AWSResponse | None:
        return self._send(request)

    def _get(self, request: Any, **_: Any) -> AWSResponse | None:
        return self._send(request)

    def _send(self, request: Any) -> AWSResponse | None:
        if request.url == ANSWERED_URL:
            return None  # a fault fake answered this attempt already
        status, answer = self.serve(request)
        return answered(request, status, answer)


def _request_body(request: Any) -> dict[str, Any]:
    """The JSON body (ECS speaks JSON) of a sent request, or of ``before-call``'s request dict."""
    body = request["body"] if isinstance(request, dict) else request.body
    return dict(json.loads(body.decode() if isinstance(body, bytes) else body))


class EcsManagedTagsSetting:
    def __init__(self, client: Any, shared_with: EcsManagedTagsSetting | None = None) -> None:
        """``shared_with``: another client's fake whose services' settings this one serves."""
        self.created_with: dict[str, bool] = shared_with.created_with if shared_with else {}
        client.meta.events.register("before-call.ecs.CreateService", self._remember)
        client.meta.events.register("after-call.ecs.DescribeServices", self._answer)

    def _remember(self, params: dict[str, Any], **_: Any) -> None:
        request = _request_body(params)
        if "enableECSManagedTags" in request:
            self.created_with[request["serviceName"]] = bool(request["enableECSManagedTags"])

    def _answer(self, parsed: dict[str, Any], **_: Any) -> None:
        for service in parsed.get("services", []):
            if service.get("serviceName") in self.created_with:
                service.setdefault("enableECSManagedTags", self.created_with[service["serviceName"]])


class EcsRollingDeployment:
    def __init__(self, client: Any) -> None:
        self.rolling = False
        client.meta.events.register("after-call.ecs.DescribeServices", self._answer)

    def _answer(self, parsed: dict[str, Any], **_: Any) -> None:
        if not self.rolling:
            return
        for service in parsed.get("services", []):
            deployments = service.setdefault("deployments", [])
            if deployments and len(deployments) == 1:
                old = {
                    **deployments[0],
                    "id": f"{deployments[0].get('id', 'ecs-svc/0')}-old",
                    "status": "ACTIVE",
                }
                deployments.append(old)


class EcsThrottling:
    """Answer ``operation`` with ``ThrottlingException`` for its next ``times`` calls.

    At ``before-call`` the call never reaches moto, so nothing changes behind the error. (At
    ``before-send`` botocore would still let moto apply the request: it emits to every handler.)
    botocore's retries sit below ``before-call``, so each throttled call is one client call.
    """

    def __init__(self, client: Any, operation: str, times: int) -> None:
        self.remaining = times
        self.throttled = 0
        client.meta.events.register_first(f"before-call.ecs.{operation}", self._call)

    def _call(self, **_: Any) -> tuple[Any, dict[str, Any]] | None:
        if self.remaining <= 0:
            return None
        self.remaining -= 1
        self.throttled += 1
        error = {
            "Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }
        return AWSResponse("https://ecs.fake", 400, HTTPHeaders(), None), error


class EcsTaskPlacement:
    def __init__(self, client: Any, zones: tuple[str, ...], started_at: datetime) -> None:
        self.zones, self.started_at = zones, started_at
        self.zone_of: dict[str, str] = {}
        client.meta.events.register("after-call.ecs.RunTask", self._place)
        client.meta.events.register("after-call.ecs.DescribeTasks", self._answer)

    def _place(self, parsed: dict[str, Any], **_: Any) -> None:
        for task in parsed.get("tasks", []):
            self.zone_of[task["taskArn"]] = self.zones[len(self.zone_of) % len(self.zones)]

    def _answer(self, parsed: dict[str, Any], **_: Any) -> None:
        for task in parsed.get("tasks", []):
            if task["taskArn"] in self.zone_of:
                task.setdefault("availabilityZone", self.zone_of[task["taskArn"]])
                task.setdefault("startedAt", self.started_at)


class FakeEcsTaskMetadataEndpoint:
    """Serves ``GET /taskWithTags`` as ECS task metadata endpoint v4 does (``TaskARN``, ``TaskTags``)."""

    def __init__(
        self,
        task_arn: str,
        tags: Callable[[], dict[str, str]],
        tag_lookup_error: Callable[[], str | None] = lambda: None,
    ) -> None:
        """``tag_lookup_error``: an AWS error code while the agent's tag lookup fails, else None."""
        self.task_arn = task_arn
        self.tags = tags
        self.tag_lookup_error = tag_lookup_error
        self.requests = 0
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                endpoint.requests += 1
                if not self.path.rstrip("/").endswith("/taskWithTags"):
                    self.send_error(404)
                    return
                body = json.dumps(endpoint.body()).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"TaskARN": self.task_arn}
        error = self.tag_lookup_error()
        if error is not None:
            body["Errors"] = [
                {
                    "ErrorField": "TaskTags",
                    "ErrorCode": error,
                    "ErrorMessage": f"ListTagsForResource failed: {error}",
                    "StatusCode": 400,
                    "ResourceARN": self.task_arn,
                }
            ]
            return body
        tags = self.tags()
        if tags:  # the agent leaves an empty map out (omitempty)
            body["TaskTags"] = tags
        return body

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v4/fake"

    def start(self) -> FakeEcsTaskMetadataEndpoint:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
