"""The pipeline's action-event stage: after the run is recorded, one event per action, would-be
action, held step and refusal (``contract.action_events``), put once per invocation — a retry of
the same event (same request id) finds them sent and does not put them again."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from fleet_remediation.contract.action_events import (
    MAX_EVENTS_PER_RUN,
    REASON_MAX_CHARS,
    ActionEvent,
    ActionKind,
    event_id,
)
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Decision, Mode


@dataclass
class Announced:
    """How a put went: events sent, of unknown outcome (may have landed: never re-sent), refused."""

    sent: int = 0
    unknown: int = 0
    failed: int = 0
    problems: list[str] = field(default_factory=list)


class ActionEventSink(Protocol):
    def put(self, events: list[ActionEvent]) -> Announced: ...


def action_events(report: ReportBuilder, incident_id: str | None, now: datetime) -> list[ActionEvent]:
    """What the report says happened, as events (at most ``MAX_EVENTS_PER_RUN``)."""
    mode = report.mode
    if mode is not Mode.ENFORCE and mode is not Mode.DRY_RUN:
        return []
    facts: list[tuple[ActionKind, str, str, str, str]] = [
        (ActionKind.ACTION, a.resource, a.action, a.outcome.value, a.reason) for a in report.actions
    ]
    for candidate in report.candidates:
        kind = _KIND_OF.get(candidate.decision)
        if kind is not None:
            facts.append((kind, candidate.resource, "act", kind.value, candidate.reason))
    facts += [(ActionKind.REFUSAL, r.resource, r.action, "refused", r.reason) for r in report.refusals]

    def event(kind: ActionKind, resource: str, action: str, outcome: str, reason: str) -> ActionEvent:
        return ActionEvent(
            id=event_id(report.function, report.invocation_id, kind.value, resource, action, outcome),
            environment=report.environment or "unknown",
            function=report.function,
            agent_service=report.agent_service,
            version=report.version,
            invocation_id=report.invocation_id,
            incident_id=incident_id,
            mode="enforce" if mode is Mode.ENFORCE else "dry-run",
            kind=kind,
            resource=resource[:512],
            action=action[:64],
            outcome=outcome,
            reason=reason[:REASON_MAX_CHARS],
            at=now,
        )

    if len(facts) > MAX_EVENTS_PER_RUN:
        report.summary["action_events_not_sent"] = len(facts) - MAX_EVENTS_PER_RUN
    return [event(*fact) for fact in facts[:MAX_EVENTS_PER_RUN]]


_KIND_OF = {Decision.WOULD_ACT: ActionKind.WOULD_ACT, Decision.HELD: ActionKind.HELD}


def announce(
    report: ReportBuilder, events: list[ActionEvent], sink: ActionEventSink | None, once: Any | None
) -> None:
    """Put the events once per invocation; the report says how many went, may have gone, failed."""
    if sink is None or not events:
        return

    def put() -> dict[str, Any]:
        announced = sink.put(events)
        counts = {"sent": announced.sent, "unknown": announced.unknown, "failed": announced.failed}
        return {**counts, "problems": announced.problems[:3]}

    try:
        if once is not None and report.invocation_id:
            key = {"function": report.function, "request": report.invocation_id, "step": "action-events"}
            result, replayed = once.run_once(key, put)
        else:
            result, replayed = put(), False
    except RemediationError as exc:
        report.error(exc)
        return
    report.summary["action_events"] = {**result, "replayed": True} if replayed else result
