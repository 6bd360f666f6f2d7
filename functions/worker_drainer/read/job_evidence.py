"""Evidence about tasks' jobs and rooms, read for the decision: which live LiveKit rooms each task's
jobs are in (its ``received job request`` lines matched to LiveKit's room list), and a suspect
worker's TTS outcomes since its cordon.

Unknown is never zero: a failed read, a truncated result, or a live room that no worker's job line
accounts for yet (its line may not be indexed) makes a task's job count unknown, not 0.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from fleet_remediation.adapters.livekit_rooms import LiveRoom
from fleet_remediation.adapters.scan_budget import note_look_error
from fleet_remediation.contract.budgets import DRAINER_STEP_BUDGET_SECONDS
from fleet_remediation.contract.policies import ReaperPolicy
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.notes import Noted
from fleet_remediation.domain.reaping import Verdict, plan_reap
from worker_drainer.adapters.ecs_model import EcsTask
from worker_drainer.adapters.worker_logs import JobSighting
from worker_drainer.decide.recovery_evidence import TtsEvidence
from worker_drainer.dependencies import DrainerDependencies

# How far back to look for a task's "received job request" lines when its start time is unknown.
JOB_LOOKBACK = timedelta(hours=6)
# A job line reaches Logs Insights after a delay: a live managed room younger than this that no
# worker's job line accounts for may be on any worker, so no worker's job count is known to be zero.
JOB_LINE_INDEXING_MARGIN = timedelta(minutes=5)
# The fleet-wide read reaches this much further back than the margin: a room's job line can be logged
# a little before LiveKit stamps its creation (their clocks differ).
JOB_LINE_READ_SLACK = timedelta(minutes=1)


def query_deadline(deps: DrainerDependencies, deadline: float) -> float:
    return min(
        deadline - DRAINER_STEP_BUDGET_SECONDS,
        time.monotonic() + deps.settings.drainer.insights_timeout_seconds,
    )


@dataclass(frozen=True)
class RoomsSeen:
    """Live rooms (None: LiveKit unknown) and job sightings per task (None: logs unknown)."""

    live: dict[str, LiveRoom] | None
    sightings: dict[str, list[JobSighting]] | None
    now: datetime
    managed_room_pattern: str = ".*"

    def rooms_of(self, task_id: str) -> list[LiveRoom] | None:
        """The live rooms this task's jobs are in (the same room sid as the job request saw)."""
        if self.live is None or self.sightings is None:
            return None
        rooms: dict[str, LiveRoom] = {}
        for sighting in self.sightings.get(task_id, []):
            room = self.live.get(sighting.room)
            if room is not None and (not sighting.room_id or room.sid == sighting.room_id):
                rooms[room.name] = room
        return list(rooms.values())

    def unaccounted_recent_rooms(self) -> list[str]:
        if self.live is None or self.sightings is None:
            return []
        seen = {s.room for found in self.sightings.values() for s in found}
        recent = self.now - JOB_LINE_INDEXING_MARGIN
        return [
            room.name
            for room in self.live.values()
            if room.name not in seen
            and re.fullmatch(self.managed_room_pattern, room.name)
            and (room.created_at is None or room.created_at >= recent)
        ]

    def active_jobs(self, task_id: str) -> int | None:
        rooms = self.rooms_of(task_id)
        if rooms is None or self.unaccounted_recent_rooms():
            return None
        return len(rooms)

    def protected_rooms(self, task_id: str, policy: ReaperPolicy) -> tuple[str, ...] | None:
        rooms = self.rooms_of(task_id)
        if rooms is None:
            return None
        decisions = plan_reap(rooms, policy, self.now).decisions
        return tuple(sorted(d.room.name for d in decisions if d.verdict is Verdict.PROTECTED))


def read_rooms(
    tasks: Sequence[EcsTask],
    deps: DrainerDependencies,
    noted: Noted,
    now: datetime,
    deadline: float,
    of_interest: Sequence[EcsTask] | None = None,
) -> tuple[RoomsSeen, int]:
    """The job sightings of the tasks the decision is about (``of_interest``, default all) since
    they started, every running task's recent ones (so a young room on another worker is accounted
    for), and the live rooms; how many LiveKit calls that took."""
    sightings = _job_sightings(
        tasks, tasks if of_interest is None else of_interest, deps, noted, now, deadline
    )
    live, calls = _live_rooms(deps, noted)
    return RoomsSeen(live, sightings, now, deps.settings.reaper.policy.managed_room_pattern), calls


def _job_sightings(
    tasks: Sequence[EcsTask],
    of_interest: Sequence[EcsTask],
    deps: DrainerDependencies,
    noted: Noted,
    now: datetime,
    deadline: float,
) -> dict[str, list[JobSighting]] | None:
    """Two bounded reads instead of every job line of the fleet since its oldest task started (millions
    of rows at 1,000 tasks): the tasks of interest since their start, and every task since the
    accounting margin (the only lines ``unaccounted_recent_rooms`` needs)."""
    streams = {deps.settings.log_stream_for(task.task_id): task.task_id for task in tasks}
    mine = [deps.settings.log_stream_for(task.task_id) for task in of_interest]
    starts = [task.started_at for task in of_interest if task.started_at is not None]
    since = min(starts) if starts and len(starts) == len(of_interest) else now - JOB_LOOKBACK
    recent = now - JOB_LINE_INDEXING_MARGIN - JOB_LINE_READ_SLACK
    reads = [(mine, since)] if mine else []
    if len(mine) < len(streams) or since > recent:
        reads.append((list(streams), recent))
    found: dict[str, dict[tuple[str, str], JobSighting]] = {}
    try:
        for wanted, start in reads:
            for sighting in deps.worker_logs.job_sightings(
                wanted, start, now, query_deadline(deps, deadline)
            ):
                if sighting.log_stream in streams:
                    seen = found.setdefault(streams[sighting.log_stream], {})
                    seen[(sighting.job_id, sighting.room)] = sighting
    except RemediationError as exc:
        note_look_error(noted, exc)
        return None
    return {task_id: list(seen.values()) for task_id, seen in found.items()}


def _live_rooms(deps: DrainerDependencies, noted: Noted) -> tuple[dict[str, LiveRoom] | None, int]:
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
        noted.error(exc)
        live = None
    return live, calls


def read_tts_evidence(
    task: EcsTask,
    since: datetime,
    deps: DrainerDependencies,
    noted: Noted,
    now: datetime,
    deadline: float,
) -> TtsEvidence | None:
    stream = deps.settings.log_stream_for(task.task_id)
    try:
        outcomes = deps.worker_logs.tts_outcomes(stream, since, now, query_deadline(deps, deadline))
    except RemediationError as exc:
        note_look_error(noted, exc)
        return None
    return TtsEvidence.from_outcomes(outcomes)
