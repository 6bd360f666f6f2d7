"""Per-worker statistics from the agents' logs: slow-VAD warnings per log stream, and the jobs each
stream received. Queries are built from the one slow-VAD signal definition (``signals.py``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from fleet_remediation.adapters.logs_insights import LogsInsights, Row
from fleet_remediation.contract.signals import Signal
from fleet_remediation.core.errors import InvalidEventError

# The agents log this when a job is offered to the worker (livekit-agents worker.py).
JOB_REQUEST_MESSAGE = "received job request"
# awslogs stream names: "<prefix>/<container>/<task id>"; nothing here needs quoting in a query.
STREAM_NAME = re.compile(r"^[A-Za-z0-9._\-/]+$")
# Insights prints @timestamp as "2026-09-15 17:32:53.000" (UTC).
INSIGHTS_TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f"
MAX_JOB_ROWS = 10000


@dataclass(frozen=True)
class SlowVadStats:
    """Slow-inference warnings seen on one log stream (one worker task) within the window."""

    log_stream: str
    warnings: int
    max_delay: float
    first_seen: datetime
    last_seen: datetime
    jobs: int

    @property
    def span_seconds(self) -> float:
        return (self.last_seen - self.first_seen).total_seconds()


@dataclass(frozen=True)
class JobSighting:
    """A ``received job request`` line: which room a job on this stream belongs to."""

    log_stream: str
    job_id: str
    room: str
    room_id: str
    seen_at: datetime


class WorkerLogs(Protocol):
    calls: int

    def worker_stats(self, start: datetime, end: datetime, deadline: float) -> list[SlowVadStats]: ...

    def job_sightings(
        self, log_streams: Sequence[str], start: datetime, end: datetime, deadline: float
    ) -> list[JobSighting]: ...


def parse_insights_time(value: str) -> datetime:
    return datetime.strptime(value, INSIGHTS_TIME_FORMAT).replace(tzinfo=UTC)


def stats_query(slow_vad: Signal) -> str:
    delay = slow_vad.value_field or "delay"
    return slow_vad.insights_query(
        f"stats count(*) as warnings, max({delay}) as max_delay, min(@timestamp) as first_seen, "
        "max(@timestamp) as last_seen, count_distinct(job_id) as jobs by @logStream"
    )


def job_sightings_query(log_streams: Sequence[str]) -> str:
    for stream in log_streams:
        if not STREAM_NAME.fullmatch(stream):
            raise InvalidEventError(f"log stream name {stream!r} has characters a query cannot carry")
    listed = ", ".join(f'"{stream}"' for stream in log_streams)
    return "\n| ".join(
        [
            f'filter message = "{JOB_REQUEST_MESSAGE}" and @logStream in [{listed}]',
            "fields @logStream, @timestamp, job_id, room, room_id",
            "sort @timestamp desc",
            f"limit {MAX_JOB_ROWS}",
        ]
    )


def _stats_from(row: Row) -> SlowVadStats:
    return SlowVadStats(
        log_stream=row["@logStream"],
        warnings=int(float(row.get("warnings", "0") or 0)),
        max_delay=float(row.get("max_delay", "0") or 0),
        first_seen=parse_insights_time(row["first_seen"]),
        last_seen=parse_insights_time(row["last_seen"]),
        jobs=int(float(row.get("jobs", "0") or 0)),
    )


class InsightsWorkerLogs:
    """``WorkerLogs`` over Logs Insights on the agents' log group."""

    def __init__(self, insights: LogsInsights, log_group: str, slow_vad: Signal) -> None:
        self.insights = insights
        self.log_group = log_group
        self.slow_vad = slow_vad
        self.calls = 0

    def worker_stats(self, start: datetime, end: datetime, deadline: float) -> list[SlowVadStats]:
        self.calls += 1
        result = self.insights.run_query(self.log_group, stats_query(self.slow_vad), start, end, deadline)
        return [_stats_from(row) for row in result.rows if row.get("@logStream")]

    def job_sightings(
        self, log_streams: Sequence[str], start: datetime, end: datetime, deadline: float
    ) -> list[JobSighting]:
        if not log_streams:
            return []
        self.calls += 1
        result = self.insights.run_query(
            self.log_group, job_sightings_query(log_streams), start, end, deadline
        )
        return [
            JobSighting(
                log_stream=row["@logStream"],
                job_id=row.get("job_id", ""),
                room=row.get("room", ""),
                room_id=row.get("room_id", ""),
                seen_at=parse_insights_time(row["@timestamp"]),
            )
            for row in result.rows
            if row.get("@logStream") and row.get("room")
        ]
