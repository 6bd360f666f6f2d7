"""What a drainer run has to tell (pure): one line per step done, failed, of unknown outcome or
skipped, per step a dry run would have taken, per refusal the plan made that an operator must
know (a guardrail, an excluded task, a protected live room, a cooldown), per typed error (with
what it leaves unknown), and fleet-wide slowness. ``message.compose`` makes the message of them.

A line about a condition that persists across ticks (a refusal, a dry-run step, an error,
fleet-wide slowness) carries a notice key, so ``delivery`` tells it once an hour; what was done,
failed or is unknown is always told.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleet_remediation.core.report_model import Mode, Outcome, RunFacts
from worker_drainer.decide.plan_model import LadderPlan, PlannedStep, Snapshot

# The trigger's detail key of a group event (``silent_task_tick.GROUP_EVENT``).
GROUP_EVENT = "group_event"

UNKNOWN_NOTE = "the reply was lost or the run interrupted: the next tick re-reads the task and finishes it"
# What each error leaves unknown, so a partial run never reads as a clean one.
CONSEQUENCES = {
    "LiveKitUnavailable": "rooms unknown: nothing reaped; no stop on log evidence",
    "LiveKitApiError": "rooms unknown: nothing reaped; no stop on log evidence",
    "DeadlineExceeded": "evidence or steps left for the next tick",
    "ResultTruncated": "job sightings incomplete: no stop on log evidence",
    "KillSwitchError": "the mode could not be read: ran as a dry run",
    "UntrustedEvent": "the event was refused: nothing was read or changed for it",
    "CapacityAmbiguous": "the service's desired count needs a look",
    "EcsManagedTagsOff": "no task was tagged, protected or stopped until the service or the scope is fixed",
}
_SECTION_OF = {
    Outcome.DONE: "done",
    Outcome.FAILED: "failed",
    Outcome.UNKNOWN: "unknown",
    Outcome.SKIPPED: "refused",
}


@dataclass(frozen=True)
class Line:
    """One thing to tell: ``section`` is done, failed, unknown, refused, would, fleet or error."""

    section: str
    text: str
    # The step's name (a ``plan_model.Step`` value) and task, for lines about one task's step.
    action: str | None = None
    task_id: str | None = None
    # Told at most once per ``delivery.NOTICE_REPEAT`` (None: always told).
    key: str | None = None
    # The planned step it is about (its evidence, undo command and task link), if any.
    step: PlannedStep | None = None
    # The outcome of an action the run took (None: a line about the plan, an error, the fleet).
    outcome: Outcome | None = None
    # An error line's code.
    code: str | None = None


def _action_lines(facts: RunFacts, plan: LadderPlan) -> list[Line]:
    planned = {(s.task_id, s.step.value): s for s in plan.steps}
    lines = []
    for action in facts.actions:
        section = _SECTION_OF.get(action.outcome)
        if section is None:
            continue  # already done: nothing new happened
        code = f" [{action.error.code}]" if action.error else ""
        note = f" ({UNKNOWN_NOTE})" if action.outcome is Outcome.UNKNOWN else ""
        text = f"{action.action} {action.resource}: {action.outcome.value} — {action.reason}{code}{note}"
        key = f"{action.resource}#{action.action}#skipped" if section == "refused" else None
        step = planned.get((action.resource, action.action))
        lines.append(Line(section, text, action.action, action.resource, key, step, action.outcome))
    return lines


def message_lines(facts: RunFacts, plan: LadderPlan, snapshot: Snapshot | None) -> list[Line]:
    lines = _action_lines(facts, plan)
    if facts.mode is Mode.DRY_RUN:
        for step in plan.acting():
            key = f"dry-run#{step.task_id}#{step.step.value}"
            text = f"would {step.step.value} {step.task_id}"
            lines.append(Line("would", text, step.step.value, step.task_id, key, step))
    for step in plan.steps:
        if step.notify:
            kind = " ".join(step.reason.split()[:2])
            text = f"{step.task_id}: not acted on — {step.reason}"
            lines.append(Line("refused", text, step.step.value, step.task_id, f"{step.task_id}#{kind}", step))
    for error in facts.errors:
        consequence = CONSEQUENCES.get(error.code)
        text = f"{error.code}: {error.message}" + (f" — {consequence}" if consequence else "")
        lines.append(Line("error", text, key=f"error#{error.code}#{error.resource or ''}", code=error.code))
    group_event = facts.trigger.detail.get(GROUP_EVENT) if facts.trigger else None
    if group_event:
        text = f"TTS {group_event}"
        text += " (held for the group's hold time after it was last seen)" if "group event:" in text else ""
        lines.append(Line("fleet", text, key=f"group#{group_event.split(' fail', 1)[0]}"))
    fleet = snapshot.fleet if snapshot else None
    if fleet is not None and fleet.fleet_wide and snapshot is not None and snapshot.start_new:
        slow = "; ".join(f"{w.task_id}: {w.reason}" for w in fleet.workers if w.pattern.elevated)
        text = (
            f"fleet-wide slow inference, nothing drained: {fleet.reason}. Suspect shared causes (host "
            f"contention, CPU credits, a provider outage). {slow}"
        )
        lines.append(Line("fleet", text, key="fleet"))
    return lines
