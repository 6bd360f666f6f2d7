"""The reaper's stages, one class the pipeline calls (``core.pipeline``, ``core.stages``): list the
rooms, decide (pure), warn or delete the over-age ones oldest first within the caps, record, tell
once per set of rooms. A retry of the same event replays the first attempt's results
(``replays_retries``): only the delivery repeats.

The LiveKit client's HTTP session binds to the event loop that creates it, so the read and the act
each build their own client inside their own loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fleet_remediation.adapters.livekit_rooms import LiveRoom
from fleet_remediation.adapters.notifier import preview_or_deliver
from fleet_remediation.contract.events import REAPER_EVENT_AGES, EventAges
from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.core import messages
from fleet_remediation.core.door import Door
from fleet_remediation.core.holds import hold_reason
from fleet_remediation.core.pipeline import Run, Work
from fleet_remediation.core.report_model import Refusal
from fleet_remediation.core.routing import Routed
from fleet_remediation.core.stages import Settled, StageDefaults, Start
from fleet_remediation.core.told import Told
from fleet_remediation.domain.reap_executor import ReapExecutor, ReapResult
from fleet_remediation.domain.reaping import ReapPlan, Verdict, collector_paused, plan_reap
from zombie_reaper.accounting import record_metrics, record_plan, summary
from zombie_reaper.dependencies import ReaperDependencies
from zombie_reaper.events import ReaperEvent, reaper_router
from zombie_reaper.messages import compose, compose_failure


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

Deps = ReaperDependencies
ReaperRun = Run[Deps, ReaperEvent]
ReaperWork = Work[RoomSnapshot, ReapPlan, Reaped]


def calls_of(rooms: object) -> int:
    """The LiveKit calls a room service counted (the real client counts them; stand-ins may not)."""
    calls = getattr(rooms, "calls", 0)
    return calls if isinstance(calls, int) else 0


class ReaperStages(StageDefaults[Deps, ReaperEvent, RoomSnapshot, ReapPlan, Reaped, messages.Notification]):
    function = FunctionName.ZOMBIE_REAPER
    replays_retries = True
    note_type = messages.Notification

    def route(self, event: Any, deps: Deps, door: Door) -> Routed[Any]:
        settings = deps.settings
        services = (service.name for service in settings.agent_services)
        return reaper_router(settings.environment_name, services).route(event, door)

    def event_ages(self, deps: Deps) -> EventAges:
        return REAPER_EVENT_AGES

    def begin(self, start: Start[Deps]) -> ReaperEvent | Settled:
        routed = start.routed
        if routed.alarm is not None and routed.alarm.state.value != "ALARM":
            return Settled(f"alarm state {routed.alarm.state.value}: nothing to reap on recovery")
        event = ReaperEvent.of(routed, start.deps.settings.reaper.policy.max_age_minutes)
        start.resolve_mode(routed.manual.dry_run if routed.manual else None)
        return event

    def read(self, run: ReaperRun) -> RoomSnapshot:
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

    def decide(self, run: ReaperRun, snapshot: RoomSnapshot) -> ReapPlan:
        policy = run.deps.settings.reaper.policy
        with collector_paused():
            return plan_reap(
                snapshot.rooms,
                policy,
                snapshot.now,
                max_age_override_seconds=run.event.max_age_override,
                live_room_grace_seconds=policy.live_room_grace_seconds,
            )

    def hold(self, run: ReaperRun, snapshot: RoomSnapshot, plan: ReapPlan) -> tuple[ReapPlan, str | None]:
        """Outside the disruption window, and while an agent service deploys, no room is warned or
        deleted (a manual run may override)."""
        if not plan.to_act or run.event.routed.manual is not None:
            return plan, None
        deployments = run.deps.deployments
        reading = deployments.in_progress if deployments is not None else None
        why = hold_reason(run.deps.settings.disruption_window, run.deps.clock(), reading, run.noted)
        if why is None:
            return plan, None
        return ReapPlan(plan.decisions, plan.trimmed, to_act=()), why

    def act(self, run: ReaperRun, snapshot: RoomSnapshot, plan: ReapPlan) -> Reaped:
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

    def record(self, run: ReaperRun, work: ReaperWork) -> None:
        snapshot, plan = work.snapshot, work.plan
        if snapshot is None or plan is None:
            return
        done = work.done or NOTHING_REAPED
        record_plan(plan, run.report, held=work.held is not None)
        record_metrics(len(snapshot.rooms), plan, done.results)
        calls = snapshot.livekit_calls + done.livekit_calls
        run.report.summary = summary(len(snapshot.rooms), plan, done.results, calls)
        if work.held is not None:
            run.report.summary["held"] = work.held

    def refusals(self, run: ReaperRun, work: ReaperWork) -> list[Refusal]:
        """Over-age rooms the per-run cap left for the next run."""
        decisions = work.plan.decisions if work.plan else ()
        return [
            Refusal(d.room.name, "delete-room", d.reason) for d in decisions if d.verdict is Verdict.OVER_CAP
        ]

    def compose(self, run: ReaperRun, work: ReaperWork) -> messages.Notification | None:
        routed = run.event.routed
        if work.error is not None:
            return compose_failure(work.error, run.facts(), run.deps, routed)
        if work.plan is None:
            return None
        return compose(work.plan, (work.done or NOTHING_REAPED).results, run.facts(), run.deps, routed)

    def tell(self, run: ReaperRun, note: messages.Notification) -> Told:
        preview = run.event.routed.manual is not None and not run.acts
        return preview_or_deliver(note, run.deps.delivery, run.mode, preview)

    def incident_of(self, note: messages.Notification) -> str:
        return note.incident_id
