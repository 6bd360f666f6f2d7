"""Explicit faults for boto3 clients (moto-backed in tests), injected with botocore's own event hooks
so the code under test runs its real request, retry and error handling.

- ``LostReply``: the request reaches the service and takes effect, then its reply never comes back
  (a ``ReadTimeoutError`` after the call, past botocore's retries): what a caller sees when a
  network path drops the response.
- ``KillBefore`` / ``KillAfter``: the invocation dies right before a request is sent, or right after
  it took effect — an exception that is not an ``Exception`` (like Lambda stopping the process), so
  no handler in the function can catch it and nothing after it runs.
- ``TookEffect``: the request is carried out, then the attempt ends ambiguously (``Ambiguous``):
  a 5xx, a reset whose retries are throttled, or a hang.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from botocore.exceptions import ConnectionClosedError, ReadTimeoutError
from moto.core.botocore_stubber import MockRawResponse
from moto.core.models import botocore_stubber


class InvocationKilled(BaseException):
    """The Lambda process stopped here (timeout, out of memory, a redeploy)."""


class _Hook:
    """Fires on matching calls after letting ``skip`` of them through, ``times`` times."""

    def __init__(self, client: Any, event: str, times: int, skip: int) -> None:
        self.event = event
        self.remaining = times
        self.skip = skip
        self.fired = 0
        client.meta.events.register_first(event, self._fire)

    def _fire(self, **_: Any) -> None:
        if self.skip > 0:
            self.skip -= 1
            return
        if self.remaining <= 0:
            return
        self.remaining -= 1
        self.fired += 1
        self.fault()

    def fault(self) -> None:
        raise NotImplementedError


class LostReply(_Hook):
    """``operation`` (e.g. ``ecs.UpdateService``) succeeds at the service; the caller gets a timeout."""

    def __init__(self, client: Any, operation: str, times: int = 1, skip: int = 0) -> None:
        super().__init__(client, f"after-call.{operation}", times, skip)

    def fault(self) -> None:
        raise ReadTimeoutError(endpoint_url="https://fake-endpoint/lost-reply")


class KillBefore(_Hook):
    """The invocation dies before ``operation`` (e.g. ``ecs.UpdateService``) is sent."""

    def __init__(self, client: Any, operation: str, times: int = 1, skip: int = 0) -> None:
        super().__init__(client, f"before-call.{operation}", times, skip)

    def fault(self) -> None:
        raise InvocationKilled(f"killed at {self.event}")


class KillAfter(_Hook):
    """The invocation dies after ``operation`` took effect, before its caller sees the reply."""

    def __init__(self, client: Any, operation: str, times: int = 1, skip: int = 0) -> None:
        super().__init__(client, f"after-call.{operation}", times, skip)

    def fault(self) -> None:
        raise InvocationKilled(f"killed at {self.event}")


class Ambiguous(StrEnum):
    """The three faults after which the caller cannot know whether its request acted."""

    SERVER_ERROR = "took effect, then 5xx"
    RESET_THEN_THROTTLED = "took effect, then reset; retries throttled"
    HUNG = "took effect, then hung"


# Where an attempt a fake has answered is pointed, so moto's own ``before-send`` handler (which runs
# after ours: botocore calls every handler) passes it by instead of carrying it out again.
ANSWERED_URL = "http://fault.invalid/"


def answered(request: Any, status: int, answer: dict[str, Any], query: bool = False) -> AWSResponse:
    """The reply to one attempt, answered here: JSON (``__type`` for an error) or, for the query
    protocol (SNS), an XML ``ErrorResponse`` carrying ``answer["__type"]``."""
    url, request.url = request.url, ANSWERED_URL
    if query:
        body = (
            f"<ErrorResponse><Error><Type>Receiver</Type><Code>{answer['__type']}</Code>"
            f"<Message>{answer['message']}</Message></Error><RequestId>fault</RequestId></ErrorResponse>"
        ).encode()
        headers = {"Content-Type": "text/xml"}
    else:
        body = json.dumps(answer).encode()
        headers = {"Content-Type": "application/x-amz-json-1.1"}
        if "__type" in answer:
            headers["x-amzn-ErrorType"] = str(answer["__type"])
    return AWSResponse(url, status, _headers(headers), MockRawResponse(body))


def _headers(values: dict[str, str]) -> HTTPHeaders:
    headers = HTTPHeaders()
    for name, value in values.items():
        headers[name] = value
    return headers


def _moto(request: Any) -> None:
    botocore_stubber.process_request(request)


class TookEffect:
    """An explicit fake in front of in-process moto, per botocore attempt (``before-send``, ahead of
    moto's own handler): the first ``times`` attempts of ``operation`` (e.g. ``ecs.UpdateService``)
    are carried out by moto, then answered with ``fault``. A botocore retry of a faulted call (same
    ``amz-sdk-invocation-id``) reaches moto and acts again, as a real retry would, except after a
    reset: then every retry is throttled (HTTP 400), the reply that hides the ambiguous first attempt.
    A hung attempt waits the client's read timeout before its ``ReadTimeoutError``, as a silent
    endpoint makes it wait."""

    def __init__(
        self,
        client: Any,
        operation: str,
        fault: Ambiguous,
        times: int = 1,
        serve: Callable[[Any], object] = _moto,
    ) -> None:
        """``serve`` carries the request out: moto, or the explicit fake of an operation moto lacks."""
        self.fault = fault
        self._serve = serve
        self.remaining = times
        self.took_effect = 0
        self.throttled = 0
        # Attempts that sent the faulted request again, byte for byte (a botocore retry, or a new
        # call with the same parameters): "never repeated" is that this stays 0.
        self.repeated = 0
        self._bodies: set[bytes] = set()
        self._read_timeout = float(client.meta.config.read_timeout)
        self._query = client.meta.service_model.protocol == "query"
        self._faulted: set[str] = set()
        client.meta.events.register_first(f"before-send.{operation}", self._send)

    def _send(self, request: Any, **_: Any) -> AWSResponse | None:
        call = str(request.headers.get("amz-sdk-invocation-id", ""))
        body = bytes(request.body or b"") if not isinstance(request.body, str) else request.body.encode()
        self.repeated += body in self._bodies
        if call in self._faulted:
            if self.fault is not Ambiguous.RESET_THEN_THROTTLED:
                return None
            self.throttled += 1
            return self._answer(request, 400, "Throttling" if self._query else "ThrottlingException")
        if self.remaining <= 0:
            return None
        self.remaining -= 1
        self._faulted.add(call)
        self._bodies.add(body)
        self._serve(request)
        self.took_effect += 1
        match self.fault:
            case Ambiguous.SERVER_ERROR:
                return self._answer(request, 500, "InternalFailure")
            case Ambiguous.RESET_THEN_THROTTLED:
                raise ConnectionClosedError(endpoint_url=request.url)
            case Ambiguous.HUNG:
                time.sleep(self._read_timeout)
                raise ReadTimeoutError(endpoint_url=request.url)

    def _answer(self, request: Any, status: int, code: str) -> AWSResponse:
        return answered(request, status, {"__type": code, "message": self.fault.value}, self._query)
