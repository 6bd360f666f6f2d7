"""The service-behaviour profile: how slow, how stale and how limited the AWS services we call are,
as numbers every test world, the replay and the benchmarks share (docs/development/service-profile.md).

Each number carries its source: an AWS documentation page, the API model botocore ships, or the word
ASSUMPTION where AWS publishes no figure (queue times, propagation delays); the docs page says how
the results depend on each assumption. A delay is a ``Percentiles`` (p50, p99) read as a log-normal
distribution, so a simulation can draw from it and a test can pin its p99.

Long waits run on a ``SimulatedClock`` (``monotonic``/``sleep``/``time`` as the adapters inject them),
so a test that waits out a p99 Insights query or a task start still takes milliseconds.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

_Z99 = NormalDist().inv_cdf(0.99)


@dataclass(frozen=True)
class Percentiles:
    """A delay in seconds given by its median and 99th percentile (log-normal between and beyond)."""

    p50: float
    p99: float

    def at(self, quantile: float) -> float:
        """The delay at ``quantile`` (0 < quantile < 1): ``at(0.5) == p50``, ``at(0.99) == p99``."""
        if not 0.0 < quantile < 1.0:
            raise ValueError(f"quantile {quantile} must be strictly between 0 and 1")
        if self.p50 <= 0.0:
            return self.p99 * quantile / 0.99
        spread: float = (self.p99 / self.p50) ** (NormalDist().inv_cdf(quantile) / _Z99)
        return self.p50 * spread

    def draw(self, rng: random.Random) -> float:
        """One delay drawn from the distribution (clipped to the 0.1 %..99.9 % range)."""
        return self.at(min(max(rng.random(), 0.001), 0.999))


@dataclass(frozen=True)
class TokenBucket:
    """A throttle as AWS describes it: ``burst`` tokens at most, refilled at ``per_second``."""

    burst: float
    per_second: float


class RateLimiter:
    """A token bucket on an injected clock: ``take`` is False when the call would be throttled."""

    def __init__(self, bucket: TokenBucket, monotonic_now: float = 0.0) -> None:
        self._bucket = bucket
        self._tokens = bucket.burst
        self._at = monotonic_now

    def take(self, monotonic_now: float) -> bool:
        elapsed = max(0.0, monotonic_now - self._at)
        self._tokens = min(self._bucket.burst, self._tokens + elapsed * self._bucket.per_second)
        self._at = monotonic_now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True


class SimulatedClock:
    """``monotonic``, ``sleep`` and ``time`` for the adapters' seams: ``sleep`` advances the clock
    instead of waiting, so minutes of simulated service latency cost nothing in wall time.

    ``real``: ride a real monotonic clock (``time.monotonic`` captured before a test patches it), so
    that code which reads the process's clock directly (a handler's deadline) and the stand-ins that
    sleep on this one see the same time: real time plus every simulated wait."""

    def __init__(
        self, start_epoch_seconds: float = 1_796_000_000.0, real: Callable[[], float] | None = None
    ) -> None:
        self._elapsed = 0.0
        self._epoch = start_epoch_seconds
        self._real = real
        self._origin = real() if real is not None else 0.0

    def monotonic(self) -> float:
        return (self._real() if self._real is not None else 0.0) + self._elapsed

    def time(self) -> float:
        return self._epoch + self.monotonic() - self._origin

    def sleep(self, seconds: float) -> None:
        self._elapsed += max(0.0, seconds)


LOGS_QUOTAS = "https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/cloudwatch_limits_cwl.html"
START_QUERY = "https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_StartQuery.html"
GET_QUERY_RESULTS = (
    "https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_GetQueryResults.html"
)
ECS_THROTTLING = "https://docs.aws.amazon.com/AmazonECS/latest/APIReference/request-throttling.html"
ECS_CONSISTENCY = "https://docs.aws.amazon.com/AmazonECS/latest/APIReference/eventual-consistency.html"
ECS_ROLLING = "https://docs.aws.amazon.com/AmazonECS/latest/developerguide/deployment-type-ecs.html"
ECS_STOP_TIMEOUT = (
    "https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task_definition_parameters.html"
)
ALARMS = "https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html"
LAMBDA_ASYNC = "https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html"
LAMBDA_ASYNC_CONFIG = "https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-configuring.html"
EVENTBRIDGE_RETRY = "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-dlq.html"
ASSUMPTION = "ASSUMPTION"


@dataclass(frozen=True)
class ServiceProfile:
    """One named, versioned set of service behaviours; ``SOURCES`` cites where each number comes from
    (or starts with ``ASSUMPTION``)."""

    name: str
    version: int
    insights_concurrent_queries: int = 100
    insights_query_timeout_seconds: float = 3600.0
    insights_results_per_page: int = 10_000
    insights_results_max: int = 100_000
    insights_start_query: TokenBucket = TokenBucket(burst=5, per_second=5)
    insights_get_query_results: TokenBucket = TokenBucket(burst=5, per_second=5)
    insights_queue_seconds: Percentiles = Percentiles(p50=0.5, p99=6.0)
    insights_run_base_seconds: Percentiles = Percentiles(p50=1.0, p99=4.0)
    insights_seconds_per_gb: Percentiles = Percentiles(p50=1.0, p99=10.0)
    per_task_look_bytes: float = 100e6
    ecs_read: TokenBucket = TokenBucket(burst=50, per_second=20)
    ecs_write: TokenBucket = TokenBucket(burst=20, per_second=5)
    ecs_consistency_seconds: Percentiles = Percentiles(p50=1.0, p99=5.0)
    ecs_task_start_seconds: Percentiles = Percentiles(p50=30.0, p99=90.0)
    ecs_stop_timeout_seconds: float = 30.0
    ecs_rolling_minimum_healthy_percent: int = 100
    ecs_rolling_maximum_percent: int = 200
    log_ingestion_seconds: Percentiles = Percentiles(p50=5.0, p99=30.0)
    metric_visible_seconds: Percentiles = Percentiles(p50=30.0, p99=120.0)
    alarm_evaluation_interval_seconds: float = 60.0
    eventbridge_delivery_seconds: Percentiles = Percentiles(p50=0.5, p99=5.0)
    eventbridge_retry_hours: float = 24.0
    scheduled_tick_jitter_seconds: Percentiles = Percentiles(p50=2.0, p99=30.0)
    sns_delivery_seconds: Percentiles = Percentiles(p50=0.3, p99=5.0)
    lambda_async_retries: int = 2
    lambda_async_retry_delays_seconds: tuple[float, ...] = (60.0, 120.0)
    lambda_max_event_age_seconds: float = 21_600.0
    lambda_cold_start_seconds: Percentiles = Percentiles(p50=0.8, p99=3.0)
    api_call_seconds: Percentiles = Percentiles(p50=0.03, p99=0.3)

    # The behaviours the stand-ins and simulations read.

    def insights_queue_and_run_seconds(self, bytes_scanned: float, quantile: float = 0.5) -> float:
        """From StartQuery to Complete for a query scanning ``bytes_scanned`` (queue, then run)."""
        return (
            self.insights_queue_seconds.at(quantile)
            + self.insights_run_base_seconds.at(quantile)
            + self.insights_seconds_per_gb.at(quantile) * bytes_scanned / 1e9
        )

    def ecs_throttle(self, action: str) -> TokenBucket:
        """The bucket an ECS API action draws from (reads: Describe*, List*, Get*)."""
        return self.ecs_read if action.startswith(("Describe", "List", "Get")) else self.ecs_write

    def throttle_for(self, target: str) -> tuple[str, TokenBucket] | None:
        """The named bucket a JSON-protocol call (``X-Amz-Target``: ``<service prefix>.<action>``)
        draws from, or None where the profile uses no rate for it."""
        prefix, _, action = target.rpartition(".")
        if prefix.startswith("AmazonEC2ContainerService"):
            bucket = self.ecs_throttle(action)
            return ("ecs-read" if bucket is self.ecs_read else "ecs-write"), bucket
        insights = {
            "StartQuery": self.insights_start_query,
            "GetQueryResults": self.insights_get_query_results,
        }
        if prefix.startswith("Logs_") and action in insights:
            return f"logs-{action}", insights[action]
        return None

    def metric_visible_after_seconds(self, quantile: float = 0.5) -> float:
        """A log line's contribution to a metric-filter datapoint, from the end of its minute."""
        return self.log_ingestion_seconds.at(quantile) + self.metric_visible_seconds.at(quantile)

    def alarm_evaluation_delay_seconds(self, quantile: float = 0.5) -> float:
        """From the end of a breaching minute to the alarm's state change: the datapoint becomes
        visible, then the next once-a-minute evaluation (uniformly placed in the minute) sees it."""
        return self.metric_visible_after_seconds(quantile) + quantile * self.alarm_evaluation_interval_seconds

    def event_to_handler_seconds(self, quantile: float = 0.5) -> float:
        """An event put on EventBridge (an alarm's state change, a suspect worker) until the target
        Lambda's handler starts: delivery, then a cold start."""
        return self.eventbridge_delivery_seconds.at(quantile) + self.lambda_cold_start_seconds.at(quantile)

    def tick_start_seconds(self, quantile: float = 0.5) -> float:
        """A scheduled rule's minute until its Lambda's handler starts: lateness, then a cold start."""
        return self.scheduled_tick_jitter_seconds.at(quantile) + self.lambda_cold_start_seconds.at(quantile)

    def notification_seconds(self, quantile: float = 0.5) -> float:
        """An SNS publish until the subscriber (chat, mail) has it."""
        return self.sns_delivery_seconds.at(quantile)

    def lambda_retry_schedule_seconds(self) -> tuple[float, ...]:
        """Seconds after the first attempt at which Lambda retries an asynchronous event."""
        at = 0.0
        schedule = []
        for delay in self.lambda_async_retry_delays_seconds[: self.lambda_async_retries]:
            at += delay
            schedule.append(at)
        return tuple(schedule)


AWS_PROFILE = ServiceProfile(name="aws-2026-12", version=1)

SOURCES: dict[str, str] = {
    "insights_concurrent_queries": f"{START_QUERY} (botocore logs model: up to 100, dashboards included)",
    "insights_query_timeout_seconds": f"{START_QUERY} (queries time out after 60 minutes of runtime)",
    "insights_results_per_page": f"{GET_QUERY_RESULTS} (botocore logs model: maxItems <= 10,000)",
    "insights_results_max": f"{GET_QUERY_RESULTS} (up to 100,000 results by pagination)",
    "insights_start_query": (
        f"{ASSUMPTION}: 5 per second, the lowest documented Logs API rate ({LOGS_QUOTAS}); "
        "the quotas page's StartQuery figure was not read here"
    ),
    "insights_get_query_results": f"{ASSUMPTION}: as StartQuery ({LOGS_QUOTAS})",
    "insights_queue_seconds": f"{ASSUMPTION}: time in Scheduled before Running; AWS publishes none",
    "insights_run_base_seconds": f"{ASSUMPTION}: Running time of a query scanning almost nothing",
    "insights_seconds_per_gb": f"{ASSUMPTION}: Running time per GB scanned (1 GB/s median, 100 MB/s p99)",
    "per_task_look_bytes": (
        f"{ASSUMPTION}: what the drainer's per-task look scans (3 minutes of a 1,000-task fleet's agent "
        "logs at about 0.5 KB/s per task is 90 MB); the synth-time check uses it"
    ),
    "ecs_read": (
        f"{ECS_THROTTLING} (its cluster-read example: bucket 50, refill 20 per second); applied to every "
        f"Describe/List/Get call ({ASSUMPTION} for the task and service reads)"
    ),
    "ecs_write": (
        f"{ASSUMPTION}: TagResource, UntagResource, UpdateTaskProtection, StopTask, UpdateService, below "
        f"the read bucket ({ECS_THROTTLING} lists per-action figures not read here)"
    ),
    "ecs_consistency_seconds": (
        f"{ASSUMPTION}: how long DescribeTasks shows the old tags, and GetTaskProtection the old "
        f"protection, after a write ({ECS_CONSISTENCY} documents the behaviour, not a figure); the "
        "drainer completes a cordon younger than 30 s from a later protection read"
    ),
    "ecs_task_start_seconds": (
        f"{ASSUMPTION}: a replacement task from scheduling to RUNNING (Fargate); AWS publishes none"
    ),
    "ecs_stop_timeout_seconds": f"{ECS_STOP_TIMEOUT} (stopTimeout default: 30 s from SIGTERM to SIGKILL)",
    "ecs_rolling_minimum_healthy_percent": f"{ECS_ROLLING} (rolling update default)",
    "ecs_rolling_maximum_percent": f"{ECS_ROLLING} (rolling update default)",
    "log_ingestion_seconds": (
        f"{ASSUMPTION}: a log line from the container to Insights and metric filters "
        "(the awslogs driver batches for up to 5 s)"
    ),
    "metric_visible_seconds": f"{ASSUMPTION}: a metric-filter datapoint, end of its minute to alarms",
    "alarm_evaluation_interval_seconds": f"{ALARMS} (periods of a minute or more: evaluated every minute)",
    "eventbridge_delivery_seconds": f"{ASSUMPTION}: event put to target invoked; AWS publishes none",
    "eventbridge_retry_hours": f"{EVENTBRIDGE_RETRY} (targets retried for up to 24 hours, 185 attempts)",
    "scheduled_tick_jitter_seconds": f"{ASSUMPTION}: a rate(1 minute) rule's run after its minute starts",
    "sns_delivery_seconds": f"{ASSUMPTION}: publish to subscriber delivery",
    "lambda_async_retries": f"{LAMBDA_ASYNC} (two more attempts after a function error)",
    "lambda_async_retry_delays_seconds": f"{LAMBDA_ASYNC} (one minute, then two minutes)",
    "lambda_max_event_age_seconds": f"{LAMBDA_ASYNC_CONFIG} (maximum age of event: 6 hours, the default)",
    "lambda_cold_start_seconds": f"{ASSUMPTION}: a python3.13 init with boto3 and the shared layer",
    "api_call_seconds": f"{ASSUMPTION}: one AWS API call's round trip in-region; AWS publishes none",
}


def profile_rows(profile: ServiceProfile = AWS_PROFILE) -> list[tuple[str, str, str]]:
    """(behaviour, number, source) per field: the table docs/development/service-profile.md shows."""
    return [(name, _shown(getattr(profile, name)), source) for name, source in SOURCES.items()]


def _shown(value: object) -> str:
    if isinstance(value, Percentiles):
        return f"p50 {value.p50:g} s, p99 {value.p99:g} s"
    if isinstance(value, TokenBucket):
        return f"burst {value.burst:g}, {value.per_second:g}/s"
    if isinstance(value, tuple):
        return ", ".join(f"{item:g} s" for item in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
