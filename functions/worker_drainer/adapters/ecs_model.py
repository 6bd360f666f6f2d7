"""The ECS task as the drainer sees it, parsed from DescribeTasks; pure data, no AWS client."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

RUNNING = "RUNNING"


@dataclass(frozen=True)
class EcsTask:
    arn: str
    last_status: str
    desired_status: str
    group: str
    tags: Mapping[str, str] = field(default_factory=dict)
    private_ip: str | None = None
    started_at: datetime | None = None
    stopped_reason: str = ""
    # The groups a shared failure may follow (DescribeTasks' availabilityZone, taskDefinitionArn).
    availability_zone: str = ""
    task_definition_arn: str = ""

    @property
    def task_id(self) -> str:
        return task_id_of(self.arn)

    @property
    def running(self) -> bool:
        return self.last_status == RUNNING and self.desired_status == RUNNING


@dataclass(frozen=True)
class ServiceCapacity:
    desired_count: int
    running_count: int


@dataclass(frozen=True)
class TaskProtection:
    """Scale-in protection as GetTaskProtection reports it; ``expires_at`` only while enabled."""

    enabled: bool
    expires_at: datetime | None = None


def task_id_of(task: str) -> str:
    """The task id from an ARN (``…:task/cluster/id`` or the old ``…:task/id``) or an id."""
    return task.rsplit("/", 1)[-1]


def _private_ip(task: Mapping[str, Any]) -> str | None:
    for attachment in task.get("attachments", []):
        for detail in attachment.get("details", []):
            if detail.get("name") == "privateIPv4Address":
                return str(detail["value"])
    for container in task.get("containers", []):
        for interface in container.get("networkInterfaces", []):
            if interface.get("privateIpv4Address"):
                return str(interface["privateIpv4Address"])
    return None


def task_from(raw: Mapping[str, Any]) -> EcsTask:
    return EcsTask(
        arn=raw["taskArn"],
        last_status=raw.get("lastStatus", ""),
        desired_status=raw.get("desiredStatus", ""),
        group=raw.get("group", ""),
        tags={tag["key"]: tag["value"] for tag in raw.get("tags", [])},
        private_ip=_private_ip(raw),
        started_at=raw.get("startedAt"),
        stopped_reason=str(raw.get("stoppedReason", "")),
        availability_zone=str(raw.get("availabilityZone", "")),
        task_definition_arn=str(raw.get("taskDefinitionArn", "")),
    )
