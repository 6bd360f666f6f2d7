"""A drill's calls on the fleet, for ``lkfr drill`` and the scheduled drill alike: the drilled
service's switches, its running tasks with their tags, and the marker written on the one task and
removed from it. Each client comes from the budgeted factory (``contract.budgets``: the switches'
``KILL_SWITCH_READ``, the tasks' ``DRILL_TASKS_READ``, the marker's ``DRILL_TAG_CALL``)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from fleet_remediation.contract.drills import DRILL_TAG, DrillMarker
from fleet_remediation.contract.naming import mode_parameter_name, service_mode_parameter_name
from fleet_remediation.core.errors import aws_api_errors
from fleet_remediation.domain.drill_steps import DrillRefusedError, DrillTarget, drilled_mode


def read_drilled_mode(ssm: Any, env: str, service: str) -> str:
    """The drilled service's effective mode (``drill_steps.drilled_mode``); unreadable is a refusal."""
    names = [mode_parameter_name(env), service_mode_parameter_name(env, service)]
    values = []
    for name in names:
        try:
            values.append(ssm.get_parameter(Name=name)["Parameter"]["Value"])
        except ssm.exceptions.ParameterNotFound:
            continue
        except (ClientError, BotoCoreError) as exc:
            raise DrillRefusedError("ModeUnknown", f"cannot read the kill switch {name}: {exc}") from exc
    return drilled_mode(values, env, service, names[0])


def running_tasks(ecs: Any, cluster: str, service: str) -> list[dict[str, Any]]:
    """The service's running tasks, described with their tags."""
    arns: list[str] = []
    with aws_api_errors("ECS ListTasks", service):
        for page in ecs.get_paginator("list_tasks").paginate(
            cluster=cluster, serviceName=service, desiredStatus="RUNNING"
        ):
            arns += page["taskArns"]
    tasks: list[dict[str, Any]] = []
    for start in range(0, len(arns), 100):
        with aws_api_errors("ECS DescribeTasks", service):
            described = ecs.describe_tasks(cluster=cluster, tasks=arns[start : start + 100], include=["TAGS"])
        tasks += described["tasks"]
    return [task for task in tasks if task.get("lastStatus") == "RUNNING"]


def put_marker(ecs: Any, target: DrillTarget, marker: DrillMarker) -> None:
    """The marker on the drilled task; a refusal or no reply is ``DrillNotStarted``."""
    try:
        ecs.tag_resource(resourceArn=target.task_arn, tags=[{"key": DRILL_TAG, "value": marker.value()}])
    except (ClientError, BotoCoreError) as exc:
        raise DrillRefusedError(
            "DrillNotStarted", f"could not mark task {target.task_id}: {exc}", resource=target.task_arn
        ) from exc


def remove_marker(ecs: Any, target: DrillTarget, until: str) -> str | None:
    """Take the marker off; what to tell when it could not be (it ends by itself at ``until``)."""
    try:
        ecs.untag_resource(resourceArn=target.task_arn, tagKeys=[DRILL_TAG])
    except (ClientError, BotoCoreError) as exc:
        return (
            f"could not remove the marker ({exc}); it ends by itself at {until}, or: "
            f"aws ecs untag-resource --resource-arn {target.task_arn} --tag-keys {DRILL_TAG}"
        )
    return None
