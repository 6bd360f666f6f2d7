"""The reaper's stages: read the rooms, decide (pure), warn or delete within the caps, record.

The LiveKit client's HTTP session binds to the event loop that creates it, so the read and the act
each build their own client inside their own loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import Field, StrictInt

from fleet_remediation.adapters.livekit_rooms import LiveRoom
from fleet_remediation.contract.policies import MIN_MANUAL_MAX_AGE_SECONDS
from fleet_remediation.core.errors import InvalidEventError
from fleet_remediation.core.holds import hold_reason
from fleet_remediation.core.pipeline import Run, Work
from fleet_remediation.core.report_model import Outcome
from fleet_remediation.core.routing import ManualEvent, Routed
from fleet_remediation.domain.reap_executor import ReapExecutor, ReapResult
from fleet_remediation.domain.reaping import ReapPlan, Verdict, collector_paused, plan_reap
from zombie_reaper.accounting import count_outcome, deletes_of, record_metrics, record_plan, warnings_of
from zombie_reaper.dependencies import ReaperDependencies


class ReaperManualEvent(ManualEvent):
    max_age_seconds: StrictInt | None = Field(
        default=None,
        ge=MIN_MANUAL_MAX_AGE_SECONDS,
        description="Stricter max age for this run (a JSON integer, at least a minute).",
    )


@dataclass(frozen=True)
class ReaperEvent:
    routed: Routed[Any]
    # A manual run's stricter max age, in seconds.
    max_age_override: int | None

    @classmethod
    def of(cls, routed: Routed[Any], max_age_minutes: int) -> ReaperEvent:
        """A manual run may only be stricter than the configured max age."""
        override = routed.manual.max_age_seconds if routed.manual else None
        if override is not None and override >= max_age_minutes * 60:
            raise InvalidEventError(
                f"max_age_seconds={override} must be stricter than the configured "
                f"{max_age_minutes * 60}s (max_age_minutes={max_age_minutes})"
            )
        return cls(routed, override)


@dataclass(frozen=True)
class RoomSnapshot:
    rooms: list[LiveRoom]
    now: datetime
    livekit_calls: int = 0


@dataclass(frozen=True)
class Reaped:
    """Each warned or deleted room's result, and the LiveKit calls it took."""

    results: list[ReapResult]
    livekit_calls: int = 0


NOTHING_REAPED = Reaped([])


ReaperRun = Run[ReaperDependencies, ReaperEvent]
ReaperWork = Work[RoomSnapshot, ReapPlan, Reaped]


def calls_of(rooms: object) -> int:
    """The LiveKit calls a room service counted (the real client counts them; stand-ins may not)."""
    calls = getattr(rooms, "calls", 0)
    return calls if isinstance(calls, int) else 0


def read(run: ReaperRun) -> RoomSnapshot:
    # The snapshot leaves the event loop through this list, not as the coroutine's result, which
    # asyncio.run would format (a repr of every room) when the loop closes.
    read: list[RoomSnapshot] = []

    async def listed() -> None:
        rooms = run.deps.room_service_factory()
        try:
            with collector_paused():
                found = await rooms.list_rooms()
            read.append(RoomSnapshot(found, run.deps.clock(), calls_of(rooms)))
        finally:
            await rooms.aclose()

    asyncio.run(listed())
    return read[0]


def decide(run: ReaperRun, snapshot: RoomSnapshot) -> ReapPlan:
    policy = run.deps.settings.reaper.policy
    with collector_paused():
        return plan_reap(
            snapshot.rooms,
            policy,
            snapshot.now,
            max_age_override_seconds=run.event.max_age_override,
            live_room_grace_seconds=policy.live_room_grace_seconds,
        )


def hold(run: ReaperRun, snapshot: RoomSnapshot, plan: ReapPlan) -> tuple[ReapPlan, str | None]:
    """Outside the disruption window, and while an agent service deploys, no room is warned or
    deleted (a manual run may override)."""
    if not plan.to_act or run.event.routed.manual is not None:
        return plan, None
    deployments = run.deps.deployments
    reading = deployments.in_progress if deployments is not None else None
    why = hold_reason(run.deps.settings.disruption_window, run.deps.clock(), reading, run.report)
    if why is None:
        return plan, None
    return ReapPlan(plan.decisions, plan.trimmed, to_act=()), why


def act(run: ReaperRun, snapshot: RoomSnapshot, plan: ReapPlan) -> Reaped:
    """Warn and delete, re-checking each room first; each step is journaled in the report."""
    if not plan.to_act:
        return NOTHING_REAPED
    settings = run.deps.settings

    done: list[Reaped] = []  # out of the loop by this list, not as a result asyncio.run would format

    async def carried_out() -> None:
        rooms = run.deps.room_service_factory()
        executor = ReapExecutor(
            rooms=rooms,
            concurrency=settings.reaper.policy.delete_concurrency,
            deadline=run.deadline,
            request_timeout_seconds=settings.reaper.livekit_request_timeout_seconds,
            journal=run.report,
            mode_switch=run.deps.mode_switch,
            live_room_grace_seconds=settings.reaper.policy.live_room_grace_seconds,
            now=run.deps.clock(),
        )
        try:
            done.append(Reaped(await executor.run(plan.to_act), calls_of(rooms)))
        finally:
            await rooms.aclose()

    asyncio.run(carried_out())
    return done[0]


def record(run: ReaperRun, work: Work[RoomSnapshot, ReapPlan, Reaped]) -> None:
    if work.snapshot is None or work.plan is None:
        return
    done = work.done or NOTHING_REAPED
    record_plan(work.plan, run.report, held=work.held is not None)
    record_metrics(len(work.snapshot.rooms), work.plan, done.results)
    run.report.summary = summary(work.snapshot, work.plan, done)
    if work.held is not None:
        run.report.summary["held"] = work.held


def summary(snapshot: RoomSnapshot, plan: ReapPlan, done: Reaped) -> dict[str, Any]:
    deletes, warnings = deletes_of(done.results), warnings_of(done.results)
    return {
        "rooms_seen": len(snapshot.rooms),
        "rooms_over_age": len(plan.to_act)
        + plan.trimmed
        + sum(d.verdict is Verdict.IN_GRACE for d in plan.decisions),
        "to_reap": len(plan.to_reap),
        "to_warn": len(plan.to_warn),
        "trimmed_by_cap": plan.trimmed,
        "reaped": count_outcome(deletes, Outcome.DONE),
        "already_gone": count_outcome(deletes, Outcome.ALREADY_DONE),
        "failed": count_outcome(deletes, Outcome.FAILED),
        "unknown": count_outcome(deletes, Outcome.UNKNOWN),
        "warned": count_outcome(warnings, Outcome.DONE),
        "warnings_failed": count_outcome(warnings, Outcome.FAILED),
        "livekit_calls": snapshot.livekit_calls + done.livekit_calls,
    }
