"""What a manual drain or undrain may name (docs/manual-commands.md has the table): a task the
drainer cannot act on is refused with a typed error that says why and what to do; a second word
about a task the drainer already handled (drained, undrained, stopped) is a quiet, recorded no-op.

Checked before anything is planned, from the service's running tasks (their tags) and, for a task
not among them, ECS's own description of it.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleet_remediation.contract.naming import EXCLUDE_TAG
from fleet_remediation.core.errors import ManualTargetRefusedError, RemediationError
from worker_drainer.adapters.ecs_model import EcsTask
from worker_drainer.decide.task_tags import STOP_REASON_PREFIX, State, TaskMarks
from worker_drainer.dependencies import DrainerDependencies

NEVER_DRAINED = "was never drained by the drainer: there is nothing to undrain"
EXCLUDED = f"is excluded (tag {EXCLUDE_TAG}=true): the drainer never touches it"


def _refuse(task_id: str, why: str, what_to_do: str) -> ManualTargetRefusedError:
    return ManualTargetRefusedError(f"task {task_id} {why}: {what_to_do}", resource=task_id)


def check_running_target(task: EcsTask, marks: TaskMarks, action: str) -> None:
    """A running task of our service: refuse an excluded one, and an undrain of one never drained
    (a task the drainer undid carries its cooldown: undraining it again is the ladder's quiet skip)."""
    if marks.excluded:
        raise _refuse(
            task.task_id, EXCLUDED, f"remove the tag if you mean the drainer to {action} it, then run again"
        )
    if action == "undrain" and marks.state is State.HEALTHY and marks.cooldown_until is None:
        raise _refuse(task.task_id, NEVER_DRAINED, "check the task id against the drain message")


def check_absent_target(task_id: str, deps: DrainerDependencies, action: str) -> None:
    """A task that is not one of the service's running tasks: the drainer already stopped it (the
    ladder records the quiet no-op, ``ALREADY_STOPPED``), or the typed refusal with its reason."""
    settings = deps.settings
    cluster, service = settings.ecs_cluster, settings.ecs_service
    try:
        task = deps.ecs.describe_task(task_id)
    except RemediationError as exc:
        raise _refuse(
            task_id, f"could not be read ({exc.code}: {exc})", f"run the {action} again in a minute"
        ) from exc
    if task is None:
        raise _refuse(
            task_id,
            f"does not exist in cluster {cluster} (or stopped long enough ago that ECS forgot it)",
            f"check the id: aws ecs list-tasks --cluster {cluster} --service-name {service}",
        )
    if task.group != f"service:{service}":
        raise _refuse(
            task_id,
            f"belongs to {task.group or 'no service'}, not service {service}",
            "ask the drainer of that service (lkfr undo --service NAME)",
        )
    if not task.running and task.stopped_reason.startswith(STOP_REASON_PREFIX):
        return
    raise _refuse(
        task_id,
        f"is not running ({task.last_status or 'unknown'}: {task.stopped_reason or 'no reason given'})",
        f"there is nothing to {action}; the service replaces a stopped task by itself",
    )


def running_target(tasks: Sequence[EcsTask], task_id: str) -> EcsTask | None:
    return next((task for task in tasks if task.task_id == task_id), None)
