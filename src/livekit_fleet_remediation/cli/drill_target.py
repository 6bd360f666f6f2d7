"""Which task a drill touches: a running task of the agent service, never an excluded one, one the
drainer already marked, or a second one while a drill runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleet_remediation.contract.drills import DRILL_TAG
from fleet_remediation.contract.naming import DRAINER_TAG_PREFIX, EXCLUDE_TAG
from livekit_fleet_remediation.cli.common import CommandFailed

DRAINER_STATE_TAG = f"{DRAINER_TAG_PREFIX}state"


@dataclass(frozen=True)
class DrillTarget:
    cluster: str
    task_arn: str

    @property
    def task_id(self) -> str:
        return self.task_arn.rsplit("/", 1)[-1]


def running_tasks(ecs: Any, cluster: str, service: str) -> list[dict[str, Any]]:
    arns: list[str] = []
    for page in ecs.get_paginator("list_tasks").paginate(
        cluster=cluster, serviceName=service, desiredStatus="RUNNING"
    ):
        arns += page["taskArns"]
    tasks: list[dict[str, Any]] = []
    for start in range(0, len(arns), 100):
        tasks += ecs.describe_tasks(cluster=cluster, tasks=arns[start : start + 100], include=["TAGS"])[
            "tasks"
        ]
    return [task for task in tasks if task.get("lastStatus") == "RUNNING"]


def choose_task(tasks: list[dict[str, Any]], wanted: str | None, service: str) -> str:
    def tags(task: dict[str, Any]) -> dict[str, str]:
        return {tag["key"]: tag.get("value", "") for tag in task.get("tags", [])}

    drilled = [task["taskArn"] for task in tasks if DRILL_TAG in tags(task)]
    if drilled:
        raise CommandFailed(
            "DrillRunning", f"task {drilled[0]} already carries a drill marker: one drill at a time"
        )
    if wanted is not None:
        matching = [
            task for task in tasks if task["taskArn"] == wanted or task["taskArn"].endswith(f"/{wanted}")
        ]
        if not matching:
            raise CommandFailed("UnknownTask", f"{wanted} is not a running task of service {service}")
        candidates = matching
    else:
        candidates = sorted(tasks, key=lambda task: (str(task.get("startedAt", "")), task["taskArn"]))
    for task in candidates:
        marks = tags(task)
        if marks.get(EXCLUDE_TAG, "").lower() == "true":
            reason = "excluded (livekit-drainer:exclude=true)"
        elif marks.get(DRAINER_STATE_TAG):
            reason = f"already marked by the drainer ({marks[DRAINER_STATE_TAG]})"
        else:
            return str(task["taskArn"])
        if wanted is not None:
            raise CommandFailed("TaskNotDrillable", f"task {wanted} is {reason}")
    raise CommandFailed("NoTaskToDrill", f"service {service} has no running task a drill may touch")
