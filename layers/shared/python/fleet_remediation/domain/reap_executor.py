"""Deletes (or warns) the planned rooms: re-checked in batches right before acting, with bounded
concurrency inside a deadline, each step journaled; a lost reply is re-read from LiveKit, never guessed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from fleet_remediation.contract.budgets import KILL_SWITCH_READ
from fleet_remediation.core.errors import (
    LiveKitApiError,
    LiveKitBadReplyError,
    LiveKitUnavailableError,
    RemediationError,
)
from fleet_remediation.core.kill_switch import ModeSwitch, still_enforcing
from fleet_remediation.core.report_model import Intent, Outcome
from fleet_remediation.domain.reaping import (
    DEADLINE_REASON,
    DELETE,
    RECHECK_BATCH_SIZE,
    WARN,
    RoomDecision,
    Verdict,
)
from fleet_remediation.domain.room_warnings import (
    WARNING_TOPIC,
    read_warning,
    warning_message,
    with_warning,
)
from fleet_remediation.domain.rooms import NOT_FOUND, LiveRoom, RoomService


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
class _LostReply:
    """A delete whose outcome is unknown until the room is read again."""

    decision: RoomDecision
    intent: Intent | None
    error: RemediationError


@dataclass
class ReapExecutor:
    """Deletes (and, with a grace, warns) the planned rooms inside a deadline (``time.monotonic``):
    the rooms are re-checked in batches of ``RECHECK_BATCH_SIZE`` (one ListRooms with their names),
    each batch's rooms that are still the ones decided on (same sid) are acted on right after,
    ``concurrency`` at once, and the deletes whose replies were lost are re-read with one more
    ListRooms. A step starts only while it (and a re-read after it) can end before the deadline.

    ``journal``: announce each delete and warning before it starts and resolve it after, and record
    every other outcome there too (the reaper); None leaves the results to the caller (the drainer).
    With a ``mode_switch`` the kill switch is re-read right before each step: a switch turned away
    from ``enforce`` mid-run stops the steps not yet started.
    """

    rooms: RoomService
    concurrency: int
    deadline: float
    request_timeout_seconds: float
    journal: Journal | None = None
    mode_switch: ModeSwitch | None = None
    live_room_grace_seconds: float | None = None
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    results: list[ReapResult] = field(default_factory=list)

    async def run(self, to_act: Sequence[RoomDecision]) -> list[ReapResult]:
        self.results = []
        for start in range(0, len(to_act), RECHECK_BATCH_SIZE):
            self.results += await self._act_on_batch(to_act[start : start + RECHECK_BATCH_SIZE])
        return self.results

    def _time_for(self, requests: int) -> bool:
        """Whether ``requests`` LiveKit requests (and the kill switch's read before them) still fit."""
        switch = KILL_SWITCH_READ.worst_case_seconds if self.mode_switch is not None else 0.0
        return time.monotonic() + switch + requests * self.request_timeout_seconds <= self.deadline

    async def _act_on_batch(self, batch: Sequence[RoomDecision]) -> list[ReapResult]:
        # The re-check, then the step, then a re-read of a lost reply.
        if not self._time_for(3):
            return [
                self._noted(ReapResult(d, Outcome.SKIPPED, DEADLINE_REASON, action=_action(d))) for d in batch
            ]
        try:
            current = {room.name: room for room in await self.rooms.list_rooms([d.room.name for d in batch])}
        except RemediationError as exc:
            reason = f"re-check failed: {exc.message}"
            return [self._noted(ReapResult(d, Outcome.FAILED, reason, exc, _action(d))) for d in batch]
        lost: list[_LostReply] = []
        done = await self._steps(batch, current, lost)
        return done + await self._reread(lost)

    async def _steps(
        self, batch: Sequence[RoomDecision], current: dict[str, LiveRoom], lost: list[_LostReply]
    ) -> list[ReapResult]:
        """Each room's step, ``concurrency`` at once. When one step fails with an unexpected error,
        the steps not yet started are not started and those in flight are cancelled; the report
        shows the unfinished ones as unknown."""
        gate = asyncio.Semaphore(self.concurrency)
        halted = False

        async def act(decision: RoomDecision) -> ReapResult | None:
            nonlocal halted
            async with gate:
                if halted:
                    return None
                try:
                    return await self._step(decision, current.get(decision.room.name), lost)
                except BaseException:
                    halted = True
                    raise

        try:
            async with asyncio.TaskGroup() as group:
                steps = [group.create_task(act(d)) for d in batch]
        except ExceptionGroup as failed:
            raise failed.exceptions[0] from None
        return [result for task in steps if (result := task.result()) is not None]

    async def _step(
        self, decision: RoomDecision, fresh: LiveRoom | None, lost: list[_LostReply]
    ) -> ReapResult | None:
        """One room, as the re-check found it (``fresh``): gone, recreated, switched off, joined
        since the plan, emptied since the plan, or as planned."""
        if fresh is None:
            gone = Outcome.ALREADY_DONE if decision.reap else Outcome.SKIPPED
            return self._noted(ReapResult(decision, gone, "room already gone", action=_action(decision)))
        if fresh.sid != decision.room.sid:
            reason = f"room was recreated (sid {fresh.sid} != {decision.room.sid})"
            return self._noted(ReapResult(decision, Outcome.SKIPPED, reason, action=_action(decision)))
        if self.mode_switch is not None:
            # A blocking SSM read (cached for seconds): off the event loop, so the others go on.
            enforcing, why_not = await asyncio.to_thread(still_enforcing, self.mode_switch)
            if not enforcing:
                return self._noted(ReapResult(decision, Outcome.SKIPPED, why_not, action=_action(decision)))
        if self._warn_instead(decision, fresh):
            return await self._warn(_joined(decision, fresh))
        if decision.verdict is Verdict.WARN and fresh.num_participants == 0:
            emptied = RoomDecision(
                fresh, Verdict.REAP, f"{decision.reason}; empty by now", *_numbers(decision)
            )
            return await self._delete(emptied, lost)
        if decision.verdict is Verdict.WARN:
            return await self._warn(decision)
        return await self._delete(decision, lost)

    def _warn_instead(self, decision: RoomDecision, fresh: LiveRoom) -> bool:
        """A room decided empty that has participants by the re-check gets the warning first."""
        return (
            decision.reap
            and self.live_room_grace_seconds is not None
            and decision.room.num_participants == 0
            and fresh.num_participants > 0
        )

    async def _delete(self, decision: RoomDecision, lost: list[_LostReply]) -> ReapResult | None:
        if not self._time_for(2):
            return self._noted(ReapResult(decision, Outcome.SKIPPED, DEADLINE_REASON))
        name = decision.room.name
        intent = self.journal.intend(name, DELETE, decision.reason) if self.journal else None
        try:
            await self.rooms.delete_room(name)
        except RemediationError as exc:
            if isinstance(exc, LiveKitApiError) and exc.twirp_code == NOT_FOUND:
                return self._resolved(intent, ReapResult(decision, Outcome.ALREADY_DONE, "room already gone"))
            if may_have_acted(exc):
                lost.append(_LostReply(decision, intent, exc))
                return None
            return self._resolved(intent, ReapResult(decision, Outcome.FAILED, exc.message, exc))
        # The candidate and the journal's intent carry the reason; a done step's record stays small.
        return self._resolved(intent, ReapResult(decision, Outcome.DONE, ""))

    async def _warn(self, decision: RoomDecision) -> ReapResult:
        """Record the warning's time in the metadata (where it can be), then tell the participants.
        Not re-read on failure: the next run's listing shows whether the record landed."""
        if not self._time_for(2):
            return self._noted(ReapResult(decision, Outcome.SKIPPED, DEADLINE_REASON, action=WARN))
        name = decision.room.name
        grace = self.live_room_grace_seconds or 0.0
        intent = self.journal.intend(name, WARN, decision.reason) if self.journal else None
        try:
            if decision.record_warning:
                await self.rooms.update_room_metadata(name, with_warning(decision.room.metadata, self.now))
            message = warning_message(name, decision.age_seconds, decision.max_age_seconds, grace, self.now)
            await self.rooms.send_data(name, message, WARNING_TOPIC)
        except RemediationError as exc:
            return self._resolved(intent, ReapResult(decision, warning_outcome(exc), exc.message, exc, WARN))
        return self._resolved(intent, ReapResult(decision, Outcome.DONE, "", action=WARN))

    async def _reread(self, lost: list[_LostReply]) -> list[ReapResult]:
        """Resolve the deletes whose replies were lost from what LiveKit says now."""
        if not lost:
            return []
        if not self._time_for(1):
            return [
                self._resolved(
                    item.intent,
                    ReapResult(
                        item.decision, Outcome.UNKNOWN, _unknown(item, "no time left to re-read"), item.error
                    ),
                )
                for item in lost
            ]
        try:
            found = {
                room.name: room for room in await self.rooms.list_rooms([i.decision.room.name for i in lost])
            }
        except RemediationError as exc:
            return [
                self._resolved(
                    item.intent,
                    ReapResult(
                        item.decision, Outcome.UNKNOWN, _unknown(item, f"re-read failed: {exc.code}"), exc
                    ),
                )
                for item in lost
            ]
        return [
            self._resolved(item.intent, _reread_outcome(item, found.get(item.decision.room.name)))
            for item in lost
        ]

    def _resolved(self, intent: Intent | None, result: ReapResult) -> ReapResult:
        if self.journal is not None and intent is not None:
            self.journal.resolve(intent, result.outcome, result.reason, result.error)
        return result

    def _noted(self, result: ReapResult) -> ReapResult:
        """An outcome without a step of its own (skipped, already gone): recorded, not journaled."""
        if self.journal is not None:
            self.journal.action(
                result.decision.room.name, result.action, result.outcome, result.reason, result.error
            )
        return result


def _action(decision: RoomDecision) -> str:
    return WARN if decision.verdict is Verdict.WARN else DELETE


def _numbers(decision: RoomDecision) -> tuple[float | None, float | None, str | None]:
    return decision.age_seconds, decision.max_age_seconds, decision.rule


def _joined(decision: RoomDecision, fresh: LiveRoom) -> RoomDecision:
    reason = f"{decision.reason}; {fresh.num_participants} participant(s) joined since: warned first"
    return RoomDecision(
        fresh, Verdict.WARN, reason, *_numbers(decision), record_warning=read_warning(fresh.metadata).writable
    )


def _reread_outcome(item: _LostReply, room: LiveRoom | None) -> ReapResult:
    """A lost reply's delete, from what LiveKit lists now: gone or replaced means it was done."""
    code = item.error.code
    if room is None:
        return ReapResult(item.decision, Outcome.DONE, f"deleted; the reply was lost ({code}); re-read: gone")
    if room.sid != item.decision.room.sid:
        reason = f"deleted; the reply was lost ({code}); re-read: a new room of that name ({room.sid})"
        return ReapResult(item.decision, Outcome.DONE, reason)
    reason = f"not deleted ({code}: {item.error.message}); re-read: still there"
    return ReapResult(item.decision, Outcome.FAILED, reason, item.error)


def _unknown(item: _LostReply, why: str) -> str:
    return f"outcome unknown: the reply was lost ({item.error.code}) and {why}"
