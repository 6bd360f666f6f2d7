"""ECS adapter for one service's tasks: list, tag, scale-in protection, stop, desired count.

Throttling is retried by botocore's standard retry mode; what is left after the retries becomes an
``AwsApiError`` naming the AWS error code. The codes this adapter understands get their own meaning
(a task that is gone is ``TaskGoneError``); every other code is reported as it came.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from fleet_remediation.adapters.aws_clients import aws_client, client_config, guard_side_effects
from fleet_remediation.adapters.deployments import deploying
from fleet_remediation.contract.budgets import ecs_call
from fleet_remediation.core.errors import AwsApiError, aws_api_errors

# The task model lives in ecs_model; re-exported here ("as" names), where callers have always found it.
from worker_drainer.adapters.ecs_model import RUNNING as RUNNING
from worker_drainer.adapters.ecs_model import EcsTask as EcsTask
from worker_drainer.adapters.ecs_model import ServiceCapacity as ServiceCapacity
from worker_drainer.adapters.ecs_model import TaskProtection as TaskProtection
from worker_drainer.adapters.ecs_model import task_from
from worker_drainer.adapters.ecs_model import task_id_of as task_id_of

if TYPE_CHECKING:
    from botocore.config import Config
    from mypy_boto3_ecs import ECSClient


# DescribeTasks takes at most 100 tasks; UpdateTaskProtection at most 10.
DESCRIBE_BATCH = 100
# ECS answers these for a task that no longer exists or is not part of a service.
TASK_GONE_FAILURES = frozenset({"MISSING", "TASK_NOT_VALID"})

# IAM actions each adapter method needs, by the resource they must be scoped to and the conditions
# they support (Service Authorization Reference, Amazon ECS); the CDK construct builds the function's
# policy from these so code and permissions cannot drift apart.
# Reads of the cluster's tasks: a manual or suspect task is described before it is known to be ours.
ECS_TASK_READ_ACTIONS = ("ecs:DescribeTasks", "ecs:GetTaskProtection")
# Task changes: both support aws:ResourceTag/${TagKey} and ecs:cluster.
ECS_TASK_CHANGE_ACTIONS = ("ecs:StopTask", "ecs:UpdateTaskProtection")
# Task tagging: supports aws:ResourceTag/${TagKey} and aws:TagKeys, not ecs:cluster.
ECS_TASK_TAG_ACTIONS = ("ecs:TagResource", "ecs:UntagResource")
ECS_SERVICE_ACTIONS = ("ecs:DescribeServices", "ecs:UpdateService")
# ListTasks is authorised against container instances; scope it with the ecs:cluster condition.
ECS_CLUSTER_CONDITION_ACTIONS = ("ecs:ListTasks",)


def ecs_client_config(request_timeout_seconds: float) -> Config:
    """The ECS call budget (contract/budgets.py): short socket timeouts, adaptive retries."""
    return client_config(ecs_call(request_timeout_seconds))


class TaskGoneError(AwsApiError):
    """The task is stopped, unknown, or not part of the service."""

    code = "TaskGone"


class EcsTaskService(Protocol):
    """What the drainer needs from ECS, for one cluster and service."""

    calls: int

    def running_tasks(self) -> list[EcsTask]: ...

    def describe_task(self, task: str) -> EcsTask | None: ...

    def tag_task(self, task_arn: str, tags: Mapping[str, str]) -> None: ...

    def untag_task(self, task_arn: str, keys: Sequence[str]) -> None: ...

    def protection(self, task_arn: str) -> TaskProtection: ...

    def set_protection(self, task_arn: str, enabled: bool, expires_in_minutes: int | None = None) -> None:
        """``expires_in_minutes`` only when enabling; None lets ECS apply its default (120)."""
        ...

    def stop_task(self, task_arn: str, reason: str) -> None: ...

    def capacity(self) -> ServiceCapacity: ...

    def ecs_managed_tags(self) -> bool:
        """Whether the service tags its tasks with ``aws:ecs:serviceName`` (enableECSManagedTags)."""
        ...

    def deployment_in_progress(self) -> str | None:
        """Why the service is deploying (a rolling update under way), or None."""
        ...

    def set_desired_count(self, count: int) -> None: ...


class BotoEcsTasks:
    """``EcsTaskService`` over boto3 for ``service`` in ``cluster``."""

    def __init__(
        self,
        cluster: str,
        service: str,
        client: ECSClient | None = None,
        request_timeout_seconds: float = 5.0,
    ) -> None:
        self.cluster = cluster
        self.service = service
        self.calls = 0
        # An injected client gets the same guard: its side effects are never retried after an
        # attempt that may have acted.
        self._client = guard_side_effects(client) if client else aws_client(ecs_call(request_timeout_seconds))

    @property
    def service_group(self) -> str:
        # ECS puts every task a service starts into the group "service:<name>".
        return f"service:{self.service}"

    def running_tasks(self) -> list[EcsTask]:
        arns = list(self._list_task_arns())
        tasks: list[EcsTask] = []
        for start in range(0, len(arns), DESCRIBE_BATCH):
            tasks += self._describe(arns[start : start + DESCRIBE_BATCH])
        return [task for task in tasks if task.running and task.group == self.service_group]

    def describe_task(self, task: str) -> EcsTask | None:
        found = self._describe([task])
        return found[0] if found else None

    def tag_task(self, task_arn: str, tags: Mapping[str, str]) -> None:
        self._call(
            "TagResource",
            task_arn,
            lambda: self._client.tag_resource(
                resourceArn=task_arn, tags=[{"key": k, "value": v} for k, v in tags.items()]
            ),
        )

    def untag_task(self, task_arn: str, keys: Sequence[str]) -> None:
        self._call(
            "UntagResource",
            task_arn,
            lambda: self._client.untag_resource(resourceArn=task_arn, tagKeys=list(keys)),
        )

    def protection(self, task_arn: str) -> TaskProtection:
        response = self._call(
            "GetTaskProtection",
            task_arn,
            lambda: self._client.get_task_protection(cluster=self.cluster, tasks=[task_arn]),
        )
        self._raise_failures("GetTaskProtection", task_arn, response.get("failures", []))
        for found in response.get("protectedTasks", []):
            if found.get("protectionEnabled", False):
                return TaskProtection(True, found.get("expirationDate"))
        return TaskProtection(False)

    def set_protection(self, task_arn: str, enabled: bool, expires_in_minutes: int | None = None) -> None:
        def update() -> Any:
            if enabled and expires_in_minutes:
                return self._client.update_task_protection(
                    cluster=self.cluster,
                    tasks=[task_arn],
                    protectionEnabled=True,
                    expiresInMinutes=expires_in_minutes,
                )
            return self._client.update_task_protection(
                cluster=self.cluster, tasks=[task_arn], protectionEnabled=enabled
            )

        response = self._call("UpdateTaskProtection", task_arn, update)
        self._raise_failures("UpdateTaskProtection", task_arn, response.get("failures", []))

    def stop_task(self, task_arn: str, reason: str) -> None:
        # StopTask on a task that already stopped succeeds: stopping is idempotent.
        self._call(
            "StopTask",
            task_arn,
            lambda: self._client.stop_task(cluster=self.cluster, task=task_arn, reason=reason),
        )

    def capacity(self) -> ServiceCapacity:
        service = self._active_service()
        return ServiceCapacity(int(service["desiredCount"]), int(service.get("runningCount", 0)))

    def ecs_managed_tags(self) -> bool:
        # DescribeServices leaves the field out when the service never set it (ECS's default: off).
        return bool(self._active_service().get("enableECSManagedTags", False))

    def deployment_in_progress(self) -> str | None:
        return deploying(self._active_service())

    def _active_service(self) -> Mapping[str, Any]:
        response = self._call(
            "DescribeServices",
            self.service,
            lambda: self._client.describe_services(cluster=self.cluster, services=[self.service]),
        )
        for service in response.get("services", []):
            if service.get("status") == "ACTIVE":
                return dict(service)
        raise AwsApiError(
            f"ECS service {self.service} not found or not active in cluster {self.cluster}",
            aws_code="ServiceNotFoundException",
            resource=self.service,
        )

    def set_desired_count(self, count: int) -> None:
        self._call(
            "UpdateService",
            self.service,
            lambda: self._client.update_service(
                cluster=self.cluster, service=self.service, desiredCount=count
            ),
        )

    def _list_task_arns(self) -> Iterator[str]:
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {
                "cluster": self.cluster,
                "serviceName": self.service,
                "desiredStatus": RUNNING,
            }
            if token:
                kwargs["nextToken"] = token
            response = self._call(
                "ListTasks", self.service, lambda kwargs=kwargs: self._client.list_tasks(**kwargs)
            )
            yield from response.get("taskArns", [])
            token = response.get("nextToken")
            if not token:
                return

    def _describe(self, tasks: list[str]) -> list[EcsTask]:
        if not tasks:
            return []
        response = self._call(
            "DescribeTasks",
            tasks[0] if len(tasks) == 1 else self.service,
            lambda: self._client.describe_tasks(cluster=self.cluster, tasks=tasks, include=["TAGS"]),
        )
        return [task_from(raw) for raw in response.get("tasks", [])]

    def _raise_failures(self, operation: str, task_arn: str, failures: list[Any]) -> None:
        for failure in failures:
            reason = str(failure.get("reason", "UNKNOWN"))
            error = TaskGoneError if reason in TASK_GONE_FAILURES else AwsApiError
            detail = failure.get("detail", "")
            raise error(
                f"ECS {operation} failed for {task_id_of(task_arn)}: {reason} {detail}".strip(),
                aws_code=reason,
                resource=task_arn,
            )

    def _call(self, operation: str, resource: str, request: Any) -> Any:
        self.calls += 1
        with aws_api_errors(f"ECS {operation}", resource):
            return request()
