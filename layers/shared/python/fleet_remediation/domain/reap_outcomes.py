"""What the reap executor produces and records: each room's result, the journal it writes to, and
how a delete whose reply was lost is resolved from a re-read (never guessed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from fleet_remediation.core.errors import (
    LiveKitApiError,
    LiveKitBadReplyError,
    LiveKitUnavailableError,
    RemediationError,
)
from fleet_remediation.core.report_model import Intent, Outcome
from fleet_remediation.domain.reaping import DELETE, WARN, RoomDecision, Verdict
from fleet_remediation.domain.room_warnings import read_warning
from fleet_remediation.domain.rooms import LiveRoom


@dataclass
class ReapResult:
    decision: RoomDecision
    outcome: Outcome
    reason: str
    error: RemediationError | None = None
    action: str = DELETE


class Journal(Protocol):
    """Where the executor records its steps (the report's ``ReportBuilder``)."""

    def intend(self, resource: str, action: str, reason: str) -> Intent: ...

    def resolve(
        self, intent: Intent, outcome: Outcome, reason: str = "", error: RemediationError | None = None
    ) -> Any: ...

    def action(
        self,
        resource: str,
        action: str,
        outcome: Outcome,
        reason: str = "",
        error: RemediationError | None = None,
    ) -> Any: ...


def may_have_acted(error: RemediationError) -> bool:
    """Whether LiveKit may have carried out a request that ended in ``error``: anything but an
    error answer of the server itself (4xx). A timeout, a reset connection, a corrupt reply or a
    5xx (often a proxy's, after the server answered) leaves it unknown."""
    if isinstance(error, LiveKitApiError):
        return error.http_status is None or error.http_status >= 500
    return isinstance(error, LiveKitUnavailableError | LiveKitBadReplyError)


def warning_outcome(error: RemediationError) -> Outcome:
    """A warning whose record or message may have landed is UNKNOWN (never sent again: the next
    run's listing shows the record, and the grace it starts holds any second message back)."""
    return Outcome.UNKNOWN if may_have_acted(error) else Outcome.FAILED


@dataclass
class LostReply:
    """A delete whose outcome is unknown until the room is read again."""

    decision: RoomDecision
    intent: Intent | None
    error: RemediationError


def action_of(decision: RoomDecision) -> str:
    return WARN if decision.verdict is Verdict.WARN else DELETE


def numbers_of(decision: RoomDecision) -> tuple[float | None, float | None, str | None]:
    return decision.age_seconds, decision.max_age_seconds, decision.rule


def joined(decision: RoomDecision, fresh: LiveRoom) -> RoomDecision:
    """A room decided empty that has participants by the re-check: warned first."""
    reason = f"{decision.reason}; {fresh.num_participants} participant(s) joined since: warned first"
    return RoomDecision(
        fresh,
        Verdict.WARN,
        reason,
        *numbers_of(decision),
        record_warning=read_warning(fresh.metadata).writable,
    )


def reread_outcome(item: LostReply, room: LiveRoom | None) -> ReapResult:
    """A lost reply's delete, from what LiveKit lists now: gone or replaced means it was done."""
    code = item.error.code
    if room is None:
        return ReapResult(item.decision, Outcome.DONE, f"deleted; the reply was lost ({code}); re-read: gone")
    if room.sid != item.decision.room.sid:
        reason = f"deleted; the reply was lost ({code}); re-read: a new room of that name ({room.sid})"
        return ReapResult(item.decision, Outcome.DONE, reason)
    reason = f"not deleted ({code}: {item.error.message}); re-read: still there"
    return ReapResult(item.decision, Outcome.FAILED, reason, item.error)


def unknown_outcome(item: LostReply, why: str, error: RemediationError) -> ReapResult:
    reason = f"outcome unknown: the reply was lost ({item.error.code}) and {why}"
    return ReapResult(item.decision, Outcome.UNKNOWN, reason, error)
