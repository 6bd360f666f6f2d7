"""Deletes (or warns) the planned rooms: re-checked in batches right before acting, with bounded
concurrency inside a deadline, each step journaled; a lost reply is re-read from LiveKit, never guessed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from fleet_remediation.contract.budgets import KILL_SWITCH_READ
from fleet_remediation.core.errors import LiveKitApiError, RemediationError
from fleet_remediation.core.kill_switch import ModeSwitch, enforcing, still_enforcing
from fleet_remediation.core.report_model import Intent, Mode, Outcome
from fleet_remediation.domain.reap_outcomes import (
    Journal,
    LostReply,
    ReapResult,
    action_of,
    joined,
    may_have_acted,
    numbers_of,
    reread_outcome,
    unknown_outcome,
    warning_outcome,
)
from fleet_remediation.domain.reaping import (
    DEADLINE_REASON,
    DELETE,
    RECHECK_BATCH_SIZE,
    WARN,
    RoomDecision,
    Verdict,
)
from fleet_remediation.domain.room_warnings import WARNING_TOPIC, warning_message, with_warning
from fleet_remediation.domain.rooms import NOT_FOUND, LiveRoom, RoomService

__all__ = ["Journal", "ReapExecutor", "ReapResult", "may_have_acted"]


class SwitchReads:
    """The kill switch's re-reads before the steps, off the event loop (a read may call SSM).

    The steps that ask in the same turn of the event loop share one read, started after the last
    of them asked: each step's answer is as fresh as a read of its own would be, and a wave of
    steps costs one thread hand-off instead of one each."""

    def __init__(self, switch: ModeSwitch) -> None:
        self.switch = switch
        self.reads = 0
        self._next: asyncio.Future[tuple[bool, str]] | None = None
        self._running: set[asyncio.Task[None]] = set()

    async def still_enforcing(self) -> tuple[bool, str]:
        # A switch that can tell its read would not block (SsmModeSwitch while its cache is fresh)
        # is answered right here: the same answer, without the thread.
        cached = getattr(self.switch, "cached", None)
        mode = cached() if cached is not None else None
        if isinstance(mode, Mode):
            return enforcing(mode)
        if self._next is None:
            loop = asyncio.get_running_loop()
            self._next = loop.create_future()
            # Started on the loop's next turn: every step asking before then shares this read.
            loop.call_soon(self._start)
        # One step's cancellation must not cancel the read the others wait for.
        return await asyncio.shield(self._next)

    def _start(self) -> None:
        answer, self._next = self._next, None
        if answer is None:
            return
        self.reads += 1
        task = asyncio.ensure_future(self._read(answer))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _read(self, answer: asyncio.Future[tuple[bool, str]]) -> None:
        try:
            answer.set_result(await asyncio.to_thread(still_enforcing, self.switch))
        except asyncio.CancelledError:
            answer.cancel()
            raise
        except Exception as exc:
            answer.set_exception(exc)


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
    switch_reads: SwitchReads | None = field(default=None, init=False)

    async def run(self, to_act: Sequence[RoomDecision]) -> list[ReapResult]:
        self.results = []
        self.switch_reads = None if self.mode_switch is None else SwitchReads(self.mode_switch)
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
                self._noted(ReapResult(d, Outcome.SKIPPED, DEADLINE_REASON, action=action_of(d)))
                for d in batch
            ]
        try:
            current = {room.name: room for room in await self.rooms.list_rooms([d.room.name for d in batch])}
        except RemediationError as exc:
            reason = f"re-check failed: {exc.message}"
            return [self._noted(ReapResult(d, Outcome.FAILED, reason, exc, action_of(d))) for d in batch]
        lost: list[LostReply] = []
        done = await self._steps(batch, current, lost)
        return done + await self._reread(lost)

    async def _steps(
        self, batch: Sequence[RoomDecision], current: dict[str, LiveRoom], lost: list[LostReply]
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
        self, decision: RoomDecision, fresh: LiveRoom | None, lost: list[LostReply]
    ) -> ReapResult | None:
        """One room, as the re-check found it (``fresh``): gone, recreated, switched off, joined
        since the plan, emptied since the plan, or as planned."""
        if fresh is None:
            gone = Outcome.ALREADY_DONE if decision.reap else Outcome.SKIPPED
            return self._noted(ReapResult(decision, gone, "room already gone", action=action_of(decision)))
        if fresh.sid != decision.room.sid:
            reason = f"room was recreated (sid {fresh.sid} != {decision.room.sid})"
            return self._noted(ReapResult(decision, Outcome.SKIPPED, reason, action=action_of(decision)))
        if self.switch_reads is not None:
            enforcing, why_not = await self.switch_reads.still_enforcing()
            if not enforcing:
                return self._noted(ReapResult(decision, Outcome.SKIPPED, why_not, action=action_of(decision)))
        if self._warn_instead(decision, fresh):
            return await self._warn(joined(decision, fresh))
        if decision.verdict is Verdict.WARN and fresh.num_participants == 0:
            emptied = RoomDecision(
                fresh, Verdict.REAP, f"{decision.reason}; empty by now", *numbers_of(decision)
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

    async def _delete(self, decision: RoomDecision, lost: list[LostReply]) -> ReapResult | None:
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
                lost.append(LostReply(decision, intent, exc))
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

    async def _reread(self, lost: list[LostReply]) -> list[ReapResult]:
        """Resolve the deletes whose replies were lost from what LiveKit says now."""
        if not lost:
            return []
        if not self._time_for(1):
            why = "no time left to re-read"
            return [self._resolved(i.intent, unknown_outcome(i, why, i.error)) for i in lost]
        try:
            found = {
                room.name: room for room in await self.rooms.list_rooms([i.decision.room.name for i in lost])
            }
        except RemediationError as exc:
            why = f"re-read failed: {exc.code}"
            return [self._resolved(i.intent, unknown_outcome(i, why, exc)) for i in lost]
        return [
            self._resolved(item.intent, reread_outcome(item, found.get(item.decision.room.name)))
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
