"""Per-worker statistics from the agents' logs: slow-VAD warnings per log stream, the jobs each
stream received, and a stream's TTS outcomes per job (does its audio reach the listener again?).
Queries are built from the signal definitions (``signals.py``).

What Insights returns is checked, not trusted: a timestamp in another format is a typed error, and
a result at its row cap is split in time and read again (``windowed_insights``); only a smallest
piece still at the cap is a typed error (the caller then treats that evidence as unknown), never a
crash, and never a decision on part of the rows."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from fleet_remediation.adapters.logs_insights import LogsInsights, Row
from fleet_remediation.adapters.windowed_insights import ResultTruncatedError as ResultTruncatedError
from fleet_remediation.adapters.windowed_insights import run_in_pieces, summed
from fleet_remediation.contract.signals import TTS_COLUMNS, Signal, SignalCatalog
from fleet_remediation.core.errors import AwsApiError, InvalidEventError
from fleet_remediation.domain.job_outcomes import JobOutcome
from worker_drainer.decide.task_reach import TaskReach
from worker_drainer.read.task_reach_query import read_task_reach

# The agents log this when a job is offered to the worker (livekit-agents worker.py).
JOB_REQUEST_MESSAGE = "received job request"
# awslogs stream names: "<prefix>/<container>/<task id>"; nothing here needs quoting in a query.
STREAM_NAME = re.compile(r"^[A-Za-z0-9._\-/]+$")
# Insights prints @timestamp as "2026-09-15 17:32:53.000" (UTC).
INSIGHTS_TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f"
# Logs Insights returns at most 10,000 rows: a result that size may have been cut.
MAX_JOB_ROWS = 10000
# StartQuery refuses a query string longer than this (InvalidParameterException).
MAX_QUERY_CHARS = 10000
MAX_TTS_JOBS = 1000


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
    ) -> list[JobSighting]:
        """Raises ``ResultTruncatedError`` when the result may be incomplete."""
        ...

    def tts_outcomes(
        self, log_stream: str, start: datetime, end: datetime, deadline: float
    ) -> list[JobOutcome]: ...

    def task_reach(self, start: datetime, end: datetime, deadline: float) -> list[TaskReach]:
        """One row per task (log stream): responses, first frames, first-audio timeouts."""
        ...


def bad_result(message: str, log_group: str | None = None) -> AwsApiError:
    return AwsApiError(message, aws_code="BadResult", resource=log_group)


def parse_insights_time(value: str) -> datetime:
    try:
        return datetime.strptime(value, INSIGHTS_TIME_FORMAT).replace(tzinfo=UTC)
    except (TypeError, ValueError):
        raise bad_result(f"Logs Insights returned a timestamp not in its own format: {value!r}") from None


def _number(row: Row, name: str) -> float:
    raw = row.get(name, "0") or "0"
    try:
        return float(raw)
    except ValueError:
        raise bad_result(f"Logs Insights returned a non-numeric {name}: {raw!r}") from None


def stats_query(slow_vad: Signal) -> str:
    delay = slow_vad.value_field or "delay"
    return slow_vad.insights_query(
        f"stats count(*) as warnings, max({delay}) as max_delay, min(@timestamp) as first_seen, "
        "max(@timestamp) as last_seen, count_distinct(job_id) as jobs by @logStream"
    )


def job_sightings_query(log_streams: Sequence[str]) -> str:
    """The job requests on the named streams. Naming each stream fits a fleet of about 150 tasks;
    beyond StartQuery's 10,000 characters the query matches the streams' common prefix instead (one
    query whatever the fleet's size) and the caller keeps only the streams it asked for."""
    for stream in log_streams:
        if not STREAM_NAME.fullmatch(stream):
            raise InvalidEventError(f"log stream name {stream!r} has characters a query cannot carry")
    listed = ", ".join(f'"{stream}"' for stream in log_streams)
    query = _sightings_query(f"@logStream in [{listed}]")
    if len(query) <= MAX_QUERY_CHARS:
        return query
    prefix = _common_folder(log_streams)
    if not prefix:
        return _sightings_query("ispresent(@logStream)")
    return _sightings_query(f"@logStream like /^{_regex_literal(prefix + '/')}/")


def _common_folder(log_streams: Sequence[str]) -> str:
    """The folders every stream name starts with ("" when none, or when some names are absolute
    and others not)."""
    try:
        return posixpath.commonpath(log_streams)
    except ValueError:
        return ""


def _sightings_query(streams_filter: str) -> str:
    return "\n| ".join(
        [
            f'filter message = "{JOB_REQUEST_MESSAGE}" and {streams_filter}',
            "fields @logStream, @timestamp, job_id, room, room_id",
            "sort @timestamp desc",
            f"limit {MAX_JOB_ROWS}",
        ]
    )


def _regex_literal(text: str) -> str:
    """``text`` matched literally inside an Insights ``/regex/`` (stream names hold only
    ``STREAM_NAME``'s characters: of those, ``.`` and the delimiter ``/`` need escaping)."""
    return text.replace(".", "\\.").replace("/", "\\/")


def tts_outcomes_query(catalog: SignalCatalog, log_stream: str) -> str:
    """Per job on one stream: responses started, first audio frames and first-audio timeouts."""
    if not STREAM_NAME.fullmatch(log_stream):
        raise InvalidEventError(f"log stream name {log_stream!r} has characters a query cannot carry")
    return "\n| ".join(
        [
            f'filter ({catalog.tts_selector()}) and ispresent(job_id) and @logStream = "{log_stream}"',
            f"stats {catalog.tts_sums()} by job_id, @logStream",
            f"limit {MAX_TTS_JOBS}",
        ]
    )


def _stats_from(row: Row) -> SlowVadStats:
    return SlowVadStats(
        log_stream=row["@logStream"],
        warnings=int(_number(row, "warnings")),
        max_delay=_number(row, "max_delay"),
        first_seen=parse_insights_time(row.get("first_seen", "")),
        last_seen=parse_insights_time(row.get("last_seen", "")),
        jobs=int(_number(row, "jobs")),
    )


class InsightsWorkerLogs:
    """``WorkerLogs`` over Logs Insights on the agents' log group."""

    def task_reach(self, start: datetime, end: datetime, deadline: float) -> list[TaskReach]:
        self.calls += 1
        return read_task_reach(self.insights, self.log_group, self.catalog, (start, end), deadline)

    def __init__(self, insights: LogsInsights, log_group: str, catalog: SignalCatalog) -> None:
        self.insights = insights
        self.log_group = log_group
        self.catalog = catalog
        self.slow_vad = catalog.slow_vad
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
        wanted = set(log_streams)
        pieces = run_in_pieces(
            self.insights,
            self.log_group,
            job_sightings_query(log_streams),
            (start, end),
            deadline,
            limit=MAX_JOB_ROWS,
        )
        self.calls += len(pieces)
        rows = [row for piece in pieces for row in piece]
        return [
            JobSighting(
                log_stream=row["@logStream"],
                job_id=row.get("job_id", ""),
                room=row.get("room", ""),
                room_id=row.get("room_id", ""),
                seen_at=parse_insights_time(row.get("@timestamp", "")),
            )
            for row in rows
            if row.get("@logStream") in wanted and row.get("room")
        ]

    def tts_outcomes(
        self, log_stream: str, start: datetime, end: datetime, deadline: float
    ) -> list[JobOutcome]:
        query = tts_outcomes_query(self.catalog, log_stream)
        pieces = run_in_pieces(
            self.insights, self.log_group, query, (start, end), deadline, limit=MAX_TTS_JOBS
        )
        self.calls += len(pieces)
        rows = summed(pieces, ("job_id", "@logStream"), TTS_COLUMNS)
        return [
            JobOutcome(row["job_id"], row["@logStream"], *SignalCatalog.tts_totals(row))
            for row in rows
            if row.get("@logStream") and row.get("job_id")
        ]
