"""The drainer's job sightings at 1,000 tasks: every job line since the oldest task started is
millions of rows (refused at the row limit: the rooms were unknown and no stop was decided on log
evidence). The tasks of interest are read since they started and the fleet only over the
accounting margin, so each task's live rooms are known."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

from devkit.fakes.drainer_world import offline_settings
from fleet_remediation.adapters.windowed_insights import DEFAULT_MAX_QUERIES, ResultTruncatedError
from fleet_remediation.core.notes import Noted
from fleet_remediation.domain.rooms import LiveRoom
from worker_drainer.adapters.ecs_model import EcsTask
from worker_drainer.adapters.worker_logs import MAX_JOB_ROWS, JobSighting
from worker_drainer.dependencies import DrainerDependencies
from worker_drainer.read.job_evidence import read_rooms

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
STARTED = NOW - timedelta(days=3)
SETTINGS = offline_settings("it")


class OneJobAMinute:
    """Each stream logs a job request every minute (room ``<task>-<minute>``); a read holding more
    rows than the time pieces can take is refused, as ``run_in_pieces`` refuses it."""

    def __init__(self) -> None:
        self.reads: list[tuple[int, timedelta]] = []

    def job_sightings(
        self, log_streams: Sequence[str], start: datetime, end: datetime, deadline: float
    ) -> list[JobSighting]:
        minutes = int((end - start).total_seconds() // 60)
        self.reads.append((len(log_streams), end - start))
        if len(log_streams) * minutes > MAX_JOB_ROWS * DEFAULT_MAX_QUERIES:
            raise ResultTruncatedError("at the row limit", aws_code="ResultTruncated")
        return [
            JobSighting(
                stream,
                f"J{minute}",
                f"{stream.rsplit('/', 1)[1]}-{minute}",
                "",
                end - timedelta(minutes=minute),
            )
            for stream in log_streams
            for minute in range(minutes)
        ]


class Rooms:
    def __init__(self, live: list[LiveRoom]) -> None:
        self.live = live

    async def list_rooms(self) -> list[LiveRoom]:
        return self.live

    async def aclose(self) -> None:
        return None


def _task(number: int) -> EcsTask:
    arn = f"arn:aws:ecs:eu-west-1:123456789012:task/agents/t{number:04d}"
    return EcsTask(arn, "RUNNING", "RUNNING", "service:agent-svc", started_at=STARTED)


def _read(live: list[LiveRoom], of_interest: list[EcsTask] | None) -> tuple[Any, OneJobAMinute]:
    tasks = [_task(n) for n in range(1000)]
    logs = OneJobAMinute()
    deps = SimpleNamespace(settings=SETTINGS, worker_logs=logs, room_service_factory=lambda: Rooms(live))
    rooms, _ = read_rooms(tasks, cast(DrainerDependencies, deps), Noted(), NOW, 1e12, of_interest)
    return rooms, logs


def test_a_draining_task_at_a_thousand_tasks_has_known_live_rooms() -> None:
    draining = _task(7)
    live = [
        LiveRoom("t0007-100", "", NOW - timedelta(minutes=100), 2),  # the draining task's, from long ago
        LiveRoom("t0300-2", "", NOW - timedelta(minutes=2), 1),  # another task's, young: accounted for
        LiveRoom("t0400-900", "", NOW - timedelta(minutes=900), 1),  # another task's, old: not ours
    ]
    rooms, logs = _read(live, [draining])
    assert rooms.active_jobs(draining.task_id) == 1
    assert [room.name for room in rooms.rooms_of(draining.task_id)] == ["t0007-100"]
    assert logs.reads == [(1, NOW - STARTED), (1000, timedelta(minutes=6))]


def test_every_job_line_since_the_oldest_task_started_is_refused_and_unknown() -> None:
    """What reading the whole fleet since its start leaves at this size: no count, never a zero."""
    rooms, logs = _read([LiveRoom("t0007-100", "", NOW - timedelta(minutes=100), 2)], None)
    assert rooms.active_jobs(_task(7).task_id) is None
    assert logs.reads == [(1000, NOW - STARTED)]
