"""The snapshot the decision needs, read once per invocation: the service's running tasks, the
slow-VAD statistics per worker, each draining task's active jobs, the over-age rooms of candidates."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Sequence
from datetime import datetime, timedelta

# How far back to look for a task's "received job request" lines when its start time is unknown.
from fleet_remediation.adapters.livekit_rooms import LiveRoom
from fleet_remediation.contract.budgets import DRAINER_STEP_BUDGET_SECONDS
from fleet_remediation.contract.events import SuspectWorkerDetail
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.domain.reaping import RoomDecision, plan_reap
from worker_drainer.adapters.ecs_tasks import EcsTask, task_id_of
from worker_drainer.adapters.worker_logs import JobSighting
from worker_drainer.attribution import FleetAssessment, assess_fleet
from worker_drainer.dependencies import DrainerDependencies
from worker_drainer.events import DrainerTrigger
from worker_drainer.ladder import ManualRequest, Snapshot
from worker_drainer.tags import (
    State,
    state_of,
)

JOB_LOOKBACK = timedelta(hours=6)


def _needs_logs(parsed: DrainerTrigger, tasks: Sequence[EcsTask]) -> bool:
    return parsed.start_new or any(state_of(t) is not State.HEALTHY for t in tasks)


def read_snapshot(
    parsed: DrainerTrigger, deps: DrainerDependencies, report: ReportBuilder, deadline: float
) -> tuple[Snapshot, int]:
    """Everything the decision needs, and how many LiveKit calls reading it took."""
    now = deps.clock()
    tasks = deps.ecs.running_tasks()
    streams = {deps.settings.log_stream_for(t.task_id): t.task_id for t in tasks}
    fleet = _assess(parsed, deps, tasks, streams, now, deadline) if _needs_logs(parsed, tasks) else None
    candidates = [
        task
        for task in tasks
        if fleet and parsed.start_new and state_of(task) is State.HEALTHY and _degraded(fleet, task.task_id)
    ]
    draining = [t for t in tasks if state_of(t) is State.DRAINING]
    active_jobs = {t.task_id: deps.worker_probe.active_jobs(t) for t in draining}
    unreachable = [t for t in draining if active_jobs[t.task_id] is None]
    rooms_to_reap: dict[str, Sequence[RoomDecision] | None] = {}
    livekit_calls = 0
    if candidates or unreachable:
        jobs_by_task = _job_sightings(candidates + unreachable, streams, deps, now, deadline)
        live, livekit_calls = _live_rooms(deps, report)
        policy = deps.settings.reaper.policy
        for task in candidates:
            mine = _rooms_of(jobs_by_task.get(task.task_id, []), live)
            rooms_to_reap[task.task_id] = None if mine is None else plan_reap(mine, policy, now).to_reap
        for task in unreachable:
            mine = _rooms_of(jobs_by_task.get(task.task_id, []), live)
            active_jobs[task.task_id] = None if mine is None else len(mine)
    manual = parsed.manual
    snapshot = Snapshot(
        now=now,
        tasks=tasks,
        fleet=fleet,
        rooms_to_reap=rooms_to_reap,
        active_jobs=active_jobs,
        capacity_debts=deps.ledger.capacity_debts(),
        start_new=parsed.start_new,
        manual=ManualRequest(manual.action, task_id_of(manual.task) if manual.task else None)
        if manual
        else None,
    )
    return snapshot, livekit_calls


def _degraded(fleet: FleetAssessment, task_id: str) -> bool:
    worker = fleet.for_task(task_id)
    return worker is not None and worker.degraded


def _assess(
    parsed: DrainerTrigger,
    deps: DrainerDependencies,
    tasks: Sequence[EcsTask],
    streams: dict[str, str],
    now: datetime,
    deadline: float,
) -> FleetAssessment:
    """The window's slow-VAD statistics per worker, judged against the fleet."""
    settings = deps.settings
    policy = settings.drainer.policy
    query_deadline = min(
        deadline - DRAINER_STEP_BUDGET_SECONDS, time.monotonic() + settings.drainer.insights_timeout_seconds
    )
    stats = deps.worker_logs.worker_stats(now - timedelta(minutes=policy.window_minutes), now, query_deadline)
    fleet = assess_fleet(stats, streams, [t.task_id for t in tasks], policy)
    return fleet if parsed.suspect is None else _with_suspect(fleet, parsed.suspect)


def _with_suspect(fleet: FleetAssessment, suspect: SuspectWorkerDetail) -> FleetAssessment:
    """tts_reach_alarm found the failing rooms concentrated on this worker: that is attribution
    enough, unless the slowness is fleet-wide."""
    if fleet.fleet_wide:
        return fleet
    workers = tuple(
        dataclasses.replace(
            w,
            degraded=True,
            reason=f"suspect worker ({suspect.alarm_name}, p={suspect.p_value:.4f}); {w.reason}",
        )
        if w.task_id == suspect.task_id
        else w
        for w in fleet.workers
    )
    return dataclasses.replace(fleet, workers=workers)


def _job_sightings(
    tasks: Sequence[EcsTask],
    streams: dict[str, str],
    deps: DrainerDependencies,
    now: datetime,
    deadline: float,
) -> dict[str, list[JobSighting]]:
    wanted = {task.task_id for task in tasks}
    names = [stream for stream, task_id in streams.items() if task_id in wanted]
    starts = [task.started_at for task in tasks if task.started_at is not None]
    since = min(starts) if len(starts) == len(tasks) else now - JOB_LOOKBACK
    query_deadline = min(
        deadline - DRAINER_STEP_BUDGET_SECONDS,
        time.monotonic() + deps.settings.drainer.insights_timeout_seconds,
    )
    found: dict[str, list[JobSighting]] = {}
    for sighting in deps.worker_logs.job_sightings(names, since, now, query_deadline):
        found.setdefault(streams[sighting.log_stream], []).append(sighting)
    return found


def _live_rooms(deps: DrainerDependencies, report: ReportBuilder) -> tuple[dict[str, LiveRoom] | None, int]:
    calls = 0

    async def list_all() -> list[LiveRoom]:
        nonlocal calls
        # Created inside the loop: the LiveKit client binds its HTTP session to the running loop.
        rooms = deps.room_service_factory()
        try:
            return await rooms.list_rooms()
        finally:
            calls = int(getattr(rooms, "calls", 0))
            await rooms.aclose()

    try:
        live: dict[str, LiveRoom] | None = {room.name: room for room in asyncio.run(list_all())}
    except RemediationError as exc:
        # Without LiveKit the drainer still cordons; it cannot reap or count jobs from rooms.
        report.error(exc)
        live = None
    return live, calls


def _rooms_of(sightings: list[JobSighting], live: dict[str, LiveRoom] | None) -> list[LiveRoom] | None:
    """The live rooms this worker's jobs are in (the same room sid as the job request saw)."""
    if live is None:
        return None
    rooms: dict[str, LiveRoom] = {}
    for sighting in sightings:
        room = live.get(sighting.room)
        if room is not None and (not sighting.room_id or room.sid == sighting.room_id):
            rooms[room.name] = room
    return list(rooms.values())
