"""A drill's steps, one implementation for ``lkfr drill`` and the scheduled drill: the refusals (not
named for drills, remediation off or its switch unknown, outside the disruption window, a task
excluded, draining or unknown, a second drill), the choice of the one task, the run with its marker,
the answer read from the product's record, the verdict, and the drill's own action events.

What a refusal says is a ``DrillRefusedError`` with its own code (``DrillNotAllowed``, ``DrillHeld``,
``DrillRunning``, ...): the console command prints it as ``code: message``, the function reports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fleet_remediation import __version__
from fleet_remediation.contract.action_events import ActionEvent, ActionKind, event_id
from fleet_remediation.contract.disruption_window import DisruptionWindow
from fleet_remediation.contract.drill_schedule import ANSWERS
from fleet_remediation.contract.drills import DRILL_TAG, DrillFault, DrillMarker
from fleet_remediation.contract.naming import DRAINER_TAG_PREFIX, EXCLUDE_TAG
from fleet_remediation.core.announce import ActionEventSink
from fleet_remediation.core.audit_timeline import ACTED, WOULD_ACT, Entry
from fleet_remediation.core.errors import RemediationError

DRAINER_STATE_TAG = f"{DRAINER_TAG_PREFIX}state"
PASS, FAIL = "pass", "fail"


class DrillRefusedError(RemediationError):
    """A drill that may not run, or could not start: nothing was changed (``code`` says which)."""

    code = "DrillRefused"

    def __init__(self, code: str, message: str, *, resource: str | None = None) -> None:
        super().__init__(message, resource=resource)
        self.code = code


@dataclass(frozen=True)
class DrillTarget:
    cluster: str
    task_arn: str

    @property
    def task_id(self) -> str:
        return self.task_arn.rsplit("/", 1)[-1]


def check_allowed(enabled: bool, env: str, window: DisruptionWindow | None, now: datetime) -> None:
    """The environment is named for drills and ``now`` is inside its disruption window."""
    if not enabled:
        raise DrillRefusedError(
            "DrillNotAllowed",
            f"environment {env} is not named for drills: set drills.enabled in its configuration",
        )
    if window is not None and not window.allows(now):
        raise DrillRefusedError(
            "DrillHeld", "outside the disruption window: a drill disrupts like the drainer does"
        )


def drilled_mode(values: Sequence[str], env: str, service: str, switch: str) -> str:
    """The drilled service's effective mode from its switches' values (the environment's is the
    ceiling): none read is unknown and ``off`` is a refusal, since nothing would answer."""
    if not values:
        raise DrillRefusedError(
            "ModeUnknown", f"no kill switch {switch}: is environment {env} deployed here?"
        )
    if "off" in values:
        raise DrillRefusedError(
            "DrillNotAllowed", f"remediation is off in {env}/{service}: nothing would answer"
        )
    return "dry-run" if "dry-run" in values else "enforce"


def _tags(task: dict[str, Any]) -> dict[str, str]:
    return {tag["key"]: tag.get("value", "") for tag in task.get("tags", [])}


def choose_task(tasks: list[dict[str, Any]], wanted: str | None, service: str) -> str:
    """The task to drill among the service's running ``tasks`` (described with their tags): the one
    ``wanted`` (id or ARN), else the longest-running one neither excluded nor marked by the drainer."""
    drilled = [task["taskArn"] for task in tasks if DRILL_TAG in _tags(task)]
    if drilled:
        raise DrillRefusedError(
            "DrillRunning", f"task {drilled[0]} already carries a drill marker: one drill at a time"
        )
    if wanted is not None:
        matching = [
            task for task in tasks if task["taskArn"] == wanted or task["taskArn"].endswith(f"/{wanted}")
        ]
        if not matching:
            raise DrillRefusedError("UnknownTask", f"{wanted} is not a running task of service {service}")
        candidates = matching
    else:
        candidates = sorted(tasks, key=lambda task: (str(task.get("startedAt", "")), task["taskArn"]))
    for task in candidates:
        marks = _tags(task)
        if marks.get(EXCLUDE_TAG, "").lower() == "true":
            reason = "excluded (livekit-drainer:exclude=true)"
        elif marks.get(DRAINER_STATE_TAG):
            reason = f"already marked by the drainer ({marks[DRAINER_STATE_TAG]})"
        else:
            return str(task["taskArn"])
        if wanted is not None:
            raise DrillRefusedError("TaskNotDrillable", f"task {wanted} is {reason}")
    raise DrillRefusedError("NoTaskToDrill", f"service {service} has no running task a drill may touch")


def answer_of(fault: DrillFault, entries: Sequence[Entry], task_id: str, mode: str) -> Entry | None:
    """The first step of the record that answers ``fault`` on the drilled task (in ``dry-run``: the
    step the function would have taken)."""
    function, actions = ANSWERS[fault]
    wanted_kind = WOULD_ACT if mode == "dry-run" else ACTED
    for entry in sorted(entries, key=lambda e: e.at):
        on_target = fault is DrillFault.ABANDONED_SESSION or task_id in entry.target
        if entry.function == function and entry.action in actions and entry.kind == wanted_kind and on_target:
            return entry
    return None


@dataclass
class DrillRun:
    """One drill: the fault, the task, the drilled service's mode, what the watch saw and the verdict;
    through the hook the marker's removal, through AWS FIS the experiment's stop."""

    fault: DrillFault
    target: DrillTarget
    marker: DrillMarker
    started: datetime
    mode: str
    seen: list[Entry] = field(default_factory=list)
    answered: Entry | None = None
    # Through the hook: the marker came off; through FIS: the experiment stopped (or had ended).
    marker_removed: bool = False
    experiment_id: str | None = None

    @property
    def until(self) -> datetime:
        return datetime.fromtimestamp(self.marker.until, UTC)

    @property
    def verdict(self) -> str:
        return PASS if self.answered else FAIL

    def answered_after(self) -> float | None:
        return (self.answered.at - self.started).total_seconds() if self.answered else None

    def look(self, entries: Sequence[Entry]) -> None:
        """Take one read of the record: what it shows since the drill began, and the answer."""
        self.seen = [entry for entry in entries if entry.at >= self.started]
        self.answered = answer_of(self.fault, self.seen, self.target.task_id, self.mode)


def drill_event(
    run: DrillRun, function: str, env: str, service: str, action: str, outcome: str, at: datetime
) -> ActionEvent:
    """``action``: ``drill-start`` (outcome ``started``) or ``drill-verdict`` (``pass`` or ``fail``);
    ``function``: who drills (``lkfr drill``, or the scheduled drill)."""
    drill_id, task = run.marker.drill_id, run.target.task_arn
    reason = f"drill {drill_id}: {run.fault.value} on task {run.target.task_id}"
    if action == "drill-verdict":
        after = run.answered_after()
        reason += f", answered after {after:.0f} s" if after is not None else ", no answer in time"
    return ActionEvent(
        id=event_id(function, drill_id, task, action, outcome),
        environment=env,
        function=function,
        agent_service=service,
        version=__version__,
        invocation_id=drill_id,
        mode="dry-run" if run.mode == "dry-run" else "enforce",
        kind=ActionKind.ACTION,
        resource=task,
        action=action,
        outcome=outcome,
        reason=reason,
        at=at,
    )


def told(sink: ActionEventSink, event: ActionEvent) -> str | None:
    """Send one drill event; what to tell the operator when it was not surely delivered (each is
    sent once; a reply that never came is said, not sent again)."""
    announced = sink.put([event])
    if announced.sent:
        return None
    said = "; ".join(announced.problems) or "not sent"
    return f"drill: the {event.action} action event was not surely delivered ({said}); it is not sent again"
