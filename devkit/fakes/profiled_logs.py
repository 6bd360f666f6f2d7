"""The drainer's log reads as Logs Insights would serve them under the service profile.

The per-task look runs through the real ``CloudWatchLogsInsights`` adapter against
``FakeInsightsClient``, timed by the profile (Scheduled, then Running, for as long as its p99 says
for the bytes it scans) on a simulated clock. The other reads answer from ``OfflineWorkerLogs`` after
the same profile latency, or end as the adapter would end them (``DeadlineExceededError``) when that
latency cannot fit before the read's deadline: a stand-in no kinder than the service."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TypeVar

from devkit.fakes.logs_insights import FakeInsightsClient, insights_over
from fleet_remediation.adapters.logs_insights import LogsInsights, QueryResult
from fleet_remediation.contract.budgets import LOGS_INSIGHTS_STOP
from fleet_remediation.contract.signals import SignalCatalog
from fleet_remediation.core.errors import DeadlineExceededError
from fleet_remediation.domain.job_outcomes import JobOutcome
from livekit_fleet_remediation.offline.log_export import LogEvent
from livekit_fleet_remediation.offline.service_profile import AWS_PROFILE, ServiceProfile, SimulatedClock
from livekit_fleet_remediation.offline.worker_logs import OfflineWorkerLogs
from worker_drainer.adapters.worker_logs import InsightsWorkerLogs, JobSighting, SlowVadStats
from worker_drainer.decide.task_reach import TaskReach

LOG_GROUP = "/lkfr/test/agent"
Answer = TypeVar("Answer")


class ProfiledWorkerLogs:
    """``WorkerLogs`` over ``events`` with the service's latency; ``client`` is the per-task look's
    Insights stand-in (its queries, statistics and stops are there to assert on)."""

    def __init__(
        self,
        events: Sequence[LogEvent],
        clock: SimulatedClock,
        *,
        scan_bytes: float = AWS_PROFILE.per_task_look_bytes,
        quantile: float = 0.99,
        profile: ServiceProfile = AWS_PROFILE,
    ) -> None:
        catalog = SignalCatalog.default()
        self.offline = OfflineWorkerLogs(events, catalog.slow_vad, catalog)
        self.clock = clock
        self.latency = profile.insights_queue_and_run_seconds(scan_bytes, quantile)
        self.client = FakeInsightsClient(
            self._task_rows, clock=clock, scan_bytes=scan_bytes, quantile=quantile, profile=profile
        )
        self.insights = InsightsWorkerLogs(insights_over(self.client), LOG_GROUP, catalog)
        self.calls = 0

    def _task_rows(self, query: str, start: datetime, end: datetime) -> list[dict[str, object]]:
        return [
            {
                "@logStream": r.log_stream,
                "responses": r.responses,
                "first_frames": r.first_frames,
                "timeouts": r.timeouts,
            }
            for r in self.offline.task_reach(start, end, 0.0)
        ]

    def task_reach(self, start: datetime, end: datetime, deadline: float) -> list[TaskReach]:
        self.calls += 1
        return self.insights.task_reach(start, end, deadline)

    def worker_stats(self, start: datetime, end: datetime, deadline: float) -> list[SlowVadStats]:
        return self._after_latency(lambda: self.offline.worker_stats(start, end, deadline), deadline)

    def job_sightings(
        self, log_streams: Sequence[str], start: datetime, end: datetime, deadline: float
    ) -> list[JobSighting]:
        return self._after_latency(
            lambda: self.offline.job_sightings(log_streams, start, end, deadline), deadline
        )

    def tts_outcomes(
        self, log_stream: str, start: datetime, end: datetime, deadline: float
    ) -> list[JobOutcome]:
        return self._after_latency(
            lambda: self.offline.tts_outcomes(log_stream, start, end, deadline), deadline
        )

    def _after_latency(self, read: Callable[[], Answer], deadline: float) -> Answer:
        self.calls += 1
        return after_latency(self.clock, self.latency, deadline, read)


class ProfiledLogsInsights:
    """``LogsInsights`` (the responder's) over an offline answerer, after the profile's latency."""

    def __init__(
        self,
        inner: LogsInsights,
        clock: SimulatedClock,
        *,
        scan_bytes: float = AWS_PROFILE.per_task_look_bytes,
        quantile: float = 0.99,
        profile: ServiceProfile = AWS_PROFILE,
    ) -> None:
        self.inner = inner
        self.clock = clock
        self.latency = profile.insights_queue_and_run_seconds(scan_bytes, quantile)

    def run_query(
        self, log_group: str, query: str, start: datetime, end: datetime, deadline: float
    ) -> QueryResult:
        return after_latency(
            self.clock,
            self.latency,
            deadline,
            lambda: self.inner.run_query(log_group, query, start, end, deadline),
        )


def after_latency(
    clock: SimulatedClock, latency: float, deadline: float, read: Callable[[], Answer]
) -> Answer:
    """``read``'s answer once ``latency`` has passed on ``clock``; past the deadline (the stop's time
    kept, as the adapter keeps it), the adapter's ``DeadlineExceededError`` instead."""
    if clock.monotonic() + latency + LOGS_INSIGHTS_STOP.worst_case_seconds > deadline:
        clock.sleep(max(0.0, deadline - clock.monotonic() - LOGS_INSIGHTS_STOP.worst_case_seconds))
        raise DeadlineExceededError("Logs Insights query still Running at the deadline", resource=LOG_GROUP)
    clock.sleep(latency)
    return read()
