"""Room reaping: a pure decision over a room snapshot, and an executor that re-checks each room
right before deleting it. Used by the zombie reaper and by the worker drainer's first step."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from fleet_remediation.adapters.livekit_rooms import NOT_FOUND, LiveRoom, RoomService
from fleet_remediation.contract.policies import ReaperPolicy
from fleet_remediation.core.errors import LiveKitApiError, RemediationError
from fleet_remediation.core.report import Outcome

# Rooms re-checked with one ListRooms before they are deleted. A batch's deletes follow its
# re-check at once, so a room is re-read at most one batch's worth of deletes before it goes.
RECHECK_BATCH_SIZE = 100
DEADLINE_REASON = "deadline: not enough time left for this room"
UNDER_AGE_REASON = "younger than its max age"


class Verdict(StrEnum):
    REAP = "reap"
    UNMANAGED = "unmanaged"
    PROTECTED = "protected"
    UNDER_AGE = "under-age"
    CREATION_IN_FUTURE = "creation-time-in-future"
    CREATION_MISSING = "creation-time-missing"
    OVER_CAP = "over-cap"


@dataclass(frozen=True, slots=True)
class RoomDecision:
    room: LiveRoom
    verdict: Verdict
    reason: str
    age_seconds: float | None = None
    max_age_seconds: float | None = None
    rule: str | None = None

    @property
    def reap(self) -> bool:
        return self.verdict is Verdict.REAP


@dataclass(frozen=True)
class ReapPlan:
    decisions: tuple[RoomDecision, ...]
    trimmed: int

    @property
    def to_reap(self) -> tuple[RoomDecision, ...]:
        return tuple(d for d in self.decisions if d.reap)


class _Limits:
    """The policy compiled once per decision: patterns compiled, limits in seconds, labels made."""

    def __init__(self, policy: ReaperPolicy, override: float | None) -> None:
        self.managed = re.compile(policy.managed_room_pattern)
        self.override = override
        self.rules: list[tuple[re.Pattern[str], float | None, str]] = []
        for index, rule in enumerate(policy.rules):
            limit = None if rule.protected else (rule.max_age_minutes or 0) * 60.0
            self.rules.append((re.compile(rule.name_pattern), limit, f"rules[{index}] {rule.name_pattern}"))
        self.default: tuple[float | None, str] = (policy.max_age_minutes * 60.0, "default")

    def limit_for(self, name: str) -> tuple[float | None, str]:
        """The max age (seconds) that applies to a room, or None when it is protected, and which rule."""
        limit, label = self.default
        for pattern, rule_limit, rule_label in self.rules:
            if pattern.fullmatch(name):
                limit, label = rule_limit, rule_label
                break
        if limit is not None and self.override is not None and self.override < limit:
            return self.override, f"{label} + manual max_age_seconds"
        return limit, label


def _decide_one(room: LiveRoom, limits: _Limits, now: datetime) -> RoomDecision:
    if not limits.managed.fullmatch(room.name):
        return RoomDecision(room, Verdict.UNMANAGED, "name outside the managed room pattern")
    limit, rule = limits.limit_for(room.name)
    if limit is None:
        return RoomDecision(room, Verdict.PROTECTED, f"protected by {rule}", rule=rule)
    if room.created_at is None:
        return RoomDecision(room, Verdict.CREATION_MISSING, "room has no creation time", rule=rule)
    age = (now - room.created_at).total_seconds()
    if age < 0:
        return RoomDecision(
            room, Verdict.CREATION_IN_FUTURE, f"creation time is {-age:.0f}s in the future", age, limit, rule
        )
    if age < limit:
        # Most rooms end here: one shared reason (the numbers are in the decision), no formatting.
        return RoomDecision(room, Verdict.UNDER_AGE, UNDER_AGE_REASON, age, limit, rule)
    return RoomDecision(room, Verdict.REAP, f"age {age:.0f}s >= max {limit:.0f}s", age, limit, rule)


def plan_reap(
    rooms: Iterable[LiveRoom],
    policy: ReaperPolicy,
    now: datetime,
    *,
    max_age_override_seconds: float | None = None,
) -> ReapPlan:
    """Decide every room. Rooms to reap are ordered oldest first and trimmed to the per-run cap;
    trimming never aborts the run, it turns the newest surplus into ``over-cap`` skips."""
    limits = _Limits(policy, max_age_override_seconds)
    decisions = [_decide_one(room, limits, now) for room in rooms]
    reap = sorted((d for d in decisions if d.reap), key=lambda d: (-(d.age_seconds or 0.0), d.room.name))
    # The rest keep LiveKit's order: sorting the whole fleet by name would cost more than the decision.
    others = [d for d in decisions if not d.reap]
    cap = policy.max_deletions_per_run
    kept, surplus = reap[:cap], reap[cap:]
    trimmed = [
        RoomDecision(
            d.room,
            Verdict.OVER_CAP,
            f"over the cap of {cap} deletions per run (older rooms first)",
            d.age_seconds,
            d.max_age_seconds,
            d.rule,
        )
        for d in surplus
    ]
    return ReapPlan(decisions=(*kept, *trimmed, *others), trimmed=len(trimmed))


@dataclass
class ReapResult:
    decision: RoomDecision
    outcome: Outcome
    reason: str
    error: RemediationError | None = None


@dataclass
class ReapExecutor:
    """Deletes the planned rooms inside a deadline (``time.monotonic``): the rooms are re-checked
    in batches of ``RECHECK_BATCH_SIZE`` (one ListRooms with their names), and each batch's rooms
    that are still the ones decided on (same sid) are deleted right after, ``concurrency`` at once.
    """

    rooms: RoomService
    concurrency: int
    deadline: float
    request_timeout_seconds: float
    results: list[ReapResult] = field(default_factory=list)

    async def run(self, to_reap: Sequence[RoomDecision]) -> list[ReapResult]:
        self.results = []
        for start in range(0, len(to_reap), RECHECK_BATCH_SIZE):
            self.results += await self._reap_batch(to_reap[start : start + RECHECK_BATCH_SIZE])
        return self.results

    async def _reap_batch(self, batch: Sequence[RoomDecision]) -> list[ReapResult]:
        # The re-check and then a delete each may take a full request timeout.
        if time.monotonic() + 2 * self.request_timeout_seconds > self.deadline:
            return [ReapResult(d, Outcome.SKIPPED, DEADLINE_REASON) for d in batch]
        try:
            current = {
                room.name: room.sid for room in await self.rooms.list_rooms([d.room.name for d in batch])
            }
        except RemediationError as exc:
            return [ReapResult(d, Outcome.FAILED, f"re-check failed: {exc.message}", exc) for d in batch]
        gate = asyncio.Semaphore(self.concurrency)

        async def reap(decision: RoomDecision) -> ReapResult:
            sid = current.get(decision.room.name)
            if sid is None:
                return ReapResult(decision, Outcome.ALREADY_DONE, "room already gone")
            if sid != decision.room.sid:
                return ReapResult(
                    decision, Outcome.SKIPPED, f"room was recreated (sid {sid} != {decision.room.sid})"
                )
            async with gate:
                return await self._delete(decision)

        return list(await asyncio.gather(*(reap(d) for d in batch)))

    async def _delete(self, decision: RoomDecision) -> ReapResult:
        if time.monotonic() + self.request_timeout_seconds > self.deadline:
            return ReapResult(decision, Outcome.SKIPPED, DEADLINE_REASON)
        try:
            await self.rooms.delete_room(decision.room.name)
        except LiveKitApiError as exc:
            if exc.twirp_code == NOT_FOUND:
                return ReapResult(decision, Outcome.ALREADY_DONE, "room already gone")
            return ReapResult(decision, Outcome.FAILED, exc.message, exc)
        except RemediationError as exc:
            return ReapResult(decision, Outcome.FAILED, exc.message, exc)
        return ReapResult(decision, Outcome.DONE, "")
