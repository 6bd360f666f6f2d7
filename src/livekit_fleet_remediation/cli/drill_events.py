"""A drill is recorded like any action: an action event when its fault is in effect and one with its
verdict, on the account's default bus (the functions' own contract, ``contract.action_events``), so
whatever listens to the functions' actions sees the drills beside them. Each is sent once; a reply
that never came is said, not sent again."""

from __future__ import annotations

from datetime import datetime

from fleet_remediation import __version__
from fleet_remediation.contract.action_events import ActionEvent, ActionKind, event_id
from fleet_remediation.core.announce import ActionEventSink
from livekit_fleet_remediation.cli.drill_run import DrillRun

DRILL_FUNCTION = "lkfr drill"


def drill_event(
    run: DrillRun, env: str, service: str, action: str, outcome: str, at: datetime
) -> ActionEvent:
    """``action``: ``drill-start`` (outcome ``started``) or ``drill-verdict`` (``pass`` or ``fail``)."""
    drill_id, task = run.marker.drill_id, run.target.task_arn
    reason = f"drill {drill_id}: {run.fault.value} on task {run.target.task_id}"
    if action == "drill-verdict":
        after = run.answered_after()
        reason += f", answered after {after:.0f} s" if after is not None else ", no answer in time"
    return ActionEvent(
        id=event_id(DRILL_FUNCTION, drill_id, task, action, outcome),
        environment=env,
        function=DRILL_FUNCTION,
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
    """Send one drill event; what to tell the operator when it was not surely delivered."""
    announced = sink.put([event])
    if announced.sent:
        return None
    said = "; ".join(announced.problems) or "not sent"
    return f"drill: the {event.action} action event was not surely delivered ({said}); it is not sent again"
