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
from fleet_remediation.core.kill_switch import ModeSwitch, still_enforcing
from fleet_remediation.core.report import Outcome


class Verdict(StrEnum):
    REAP = "reap"
    UNMANAGED = "unmanaged"
    PROTECTED = "protected"
    UNDER_AGE = "under-age"
    CREATION_IN_FUTURE = "creation-time-in-future"
    CREATION_MISSING = "creation-time-missing"
    OVER_CAP = "over-cap"


@dataclass(frozen=True)
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


def _limit_for(policy: ReaperPolicy, name: str) -> tuple[float | None, str]:
    """The max age (seconds) that applies to a room, or None when it is protected, and which rule."""
    for index, rule in enumerate(policy.rules):
        if re.fullmatch(rule.name_pattern, name):
            label = f"rules[{index}] {rule.name_pattern}"
            if rule.protected:
                return None, label
            assert rule.max_age_minutes is not None  # the model guarantees one of the two
            return rule.max_age_minutes * 60.0, label
    return policy.max_age_minutes * 60.0, "default"


def _decide_one(room: LiveRoom, policy: ReaperPolicy, now: datetime, override: float | None) -> RoomDecision:
    if not re.fullmatch(policy.managed_room_pattern, room.name):
        return RoomDecision(room, Verdict.UNMANAGED, "name outside the managed room pattern")
    limit, rule = _limit_for(policy, room.name)
    if limit is None:
        return RoomDecision(room, Verdict.PROTECTED, f"protected by {rule}", rule=rule)
    if override is not None and override < limit:
        limit, rule = override, f"{rule} + manual max_age_seconds"
    if room.created_at is None:
        return RoomDecision(room, Verdict.CREATION_MISSING, "room has no creation time", rule=rule)
    age = (now - room.created_at).total_seconds()
    if age < 0:
        return RoomDecision(
            room, Verdict.CREATION_IN_FUTURE, f"creation time is {-age:.0f}s in the future", age, limit, rule
        )
    if age < limit:
        return RoomDecision(room, Verdict.UNDER_AGE, f"age {age:.0f}s < max {limit:.0f}s", age, limit, rule)
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
    decisions = [_decide_one(room, policy, now, max_age_override_seconds) for room in rooms]
    reap = sorted((d for d in decisions if d.reap), key=lambda d: (-(d.age_seconds or 0.0), d.room.name))
    others = sorted((d for d in decisions if not d.reap), key=lambda d: d.room.name)
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
    """Deletes the planned rooms with bounded concurrency inside a deadline (``time.monotonic``).
    With a ``mode_switch`` it re-reads the kill switch right before each delete: a switch turned
    away from ``enforce`` mid-run stops the deletions not yet started."""

    rooms: RoomService
    concurrency: int
    deadline: float
    request_timeout_seconds: float
    mode_switch: ModeSwitch | None = None
    results: list[ReapResult] = field(default_factory=list)

    async def run(self, to_reap: Sequence[RoomDecision]) -> list[ReapResult]:
        gate = asyncio.Semaphore(self.concurrency)

        async def guarded(decision: RoomDecision) -> ReapResult:
            async with gate:
                return await self._reap_one(decision)

        self.results = list(await asyncio.gather(*(guarded(d) for d in to_reap)))
        return self.results

    async def _reap_one(self, decision: RoomDecision) -> ReapResult:
        # A re-check and a delete each may take a full request timeout.
        if time.monotonic() + 2 * self.request_timeout_seconds > self.deadline:
            return ReapResult(decision, Outcome.SKIPPED, "deadline: not enough time left for this room")
        name = decision.room.name
        try:
            current = [room for room in await self.rooms.list_rooms([name]) if room.name == name]
            if not current:
                return ReapResult(decision, Outcome.ALREADY_DONE, "room already gone")
            if current[0].sid != decision.room.sid:
                return ReapResult(
                    decision,
                    Outcome.SKIPPED,
                    f"room was recreated (sid {current[0].sid} != {decision.room.sid})",
                )
            if self.mode_switch is not None:
                # A blocking SSM read (cached for seconds): off the event loop, so the others go on.
                enforcing, why_not = await asyncio.to_thread(still_enforcing, self.mode_switch)
                if not enforcing:
                    return ReapResult(decision, Outcome.SKIPPED, why_not)
            await self.rooms.delete_room(name)
        except LiveKitApiError as exc:
            if exc.twirp_code == NOT_FOUND:
                return ReapResult(decision, Outcome.ALREADY_DONE, "room already gone")
            return ReapResult(decision, Outcome.FAILED, exc.message, exc)
        except RemediationError as exc:
            return ReapResult(decision, Outcome.FAILED, exc.message, exc)
        return ReapResult(decision, Outcome.DONE, decision.reason)
