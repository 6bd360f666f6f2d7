"""``WorkerLogs`` over exported log events: the drainer's statistics without AWS (backtests, the
replay, local runs and tests). Never deployed."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from fleet_remediation.contract.signals import Signal, SignalCatalog
from fleet_remediation.domain.job_outcomes import JobOutcome, JobOutcomeCounter
from livekit_fleet_remediation.offline.log_export import LogEvent, tts_counts_by_stream
from worker_drainer.adapters.worker_logs import JOB_REQUEST_MESSAGE, JobSighting, SlowVadStats
from worker_drainer.decide.task_reach import TaskReach


class OfflineWorkerLogs:
    """``WorkerLogs`` evaluated over exported log events: the same statistics the Insights queries
    compute, for backtests, local runs and tests without AWS."""

    def __init__(
        self, events: Sequence[LogEvent], slow_vad: Signal, catalog: SignalCatalog | None = None
    ) -> None:
        self.events = list(events)
        self.slow_vad = slow_vad
        self.catalog = catalog or SignalCatalog.default()
        self.calls = 0

    def _in_window(self, start: datetime, end: datetime) -> list[LogEvent]:
        return [event for event in self.events if start <= event.at < end]

    def task_reach(self, start: datetime, end: datetime, deadline: float) -> list[TaskReach]:
        """The per-task query's rows: each stream's responses, first frames and timeouts."""
        self.calls += 1
        found = tts_counts_by_stream(self._in_window(start, end), self.catalog)
        return [
            TaskReach(stream, counts[0], counts[1], counts[2], counts[3], endpoint)
            for stream, (counts, endpoint) in sorted(found.items())
        ]

    def worker_stats(self, start: datetime, end: datetime, deadline: float) -> list[SlowVadStats]:
        self.calls += 1
        by_stream: dict[str, list[LogEvent]] = {}
        for event in self._in_window(start, end):
            if self.slow_vad.matches(event.record):
                by_stream.setdefault(event.stream, []).append(event)
        return [
            SlowVadStats(
                log_stream=stream,
                warnings=len(rows),
                max_delay=max((self.slow_vad.value(event.record) or 0.0) for event in rows),
                first_seen=min(event.at for event in rows),
                last_seen=max(event.at for event in rows),
                jobs=len({str(event.record.get("job_id")) for event in rows if event.record.get("job_id")}),
            )
            for stream, rows in sorted(by_stream.items())
        ]

    def job_sightings(
        self, log_streams: Sequence[str], start: datetime, end: datetime, deadline: float
    ) -> list[JobSighting]:
        if not log_streams:
            return []
        self.calls += 1
        wanted = set(log_streams)
        return [
            JobSighting(
                log_stream=event.stream,
                job_id=str(event.record.get("job_id", "")),
                room=str(event.record.get("room", "")),
                room_id=str(event.record.get("room_id", "")),
                seen_at=event.at,
            )
            for event in self._in_window(start, end)
            if event.stream in wanted
            and event.record.get("message") == JOB_REQUEST_MESSAGE
            and event.record.get("room")
        ]

    def tts_outcomes(
        self, log_stream: str, start: datetime, end: datetime, deadline: float
    ) -> list[JobOutcome]:
        self.calls += 1
        counter = JobOutcomeCounter(self.catalog)
        for event in self._in_window(start, end):
            if event.stream == log_stream:
                counter.add(event.stream, event.record)
        return counter.outcomes()
