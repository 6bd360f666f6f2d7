"""When a detection decision happens and what it can see, under a named service profile: the delays
between a log line and the decision that acts on it (CloudWatch's metric filters and alarm evaluation,
EventBridge delivery and schedule jitter, late log events, Logs Insights queue and run time, Lambda
cold starts, ECS bringing a replacement to RUNNING). The replay and ``bench.detection`` draw them
here, seeded, so a run is repeatable; ``none`` keeps the instant model for comparison.

Each delay is a ``Spread`` (its p50 and p99, drawn from the lognormal through both). The numbers come
from one profile (``DelayProfile``); ``delay_profiles`` builds it from the service profile.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from statistics import NormalDist

# z of the 99th percentile of the standard normal: a lognormal's sigma from its p50 and p99.
_Z99 = NormalDist().inv_cdf(0.99)
_Z999 = NormalDist().inv_cdf(0.999)
GIGABYTE = 1e9


@dataclass(frozen=True)
class Spread:
    """A delay in seconds, lognormal through its median and 99th percentile (0 when both are 0)."""

    p50: float
    p99: float

    def __post_init__(self) -> None:
        if not 0 <= self.p50 <= self.p99:
            raise ValueError(f"a spread needs 0 <= p50 <= p99, got {self.p50} and {self.p99}")

    @property
    def sigma(self) -> float:
        return math.log(self.p99 / self.p50) / _Z99 if self.p50 > 0 and self.p99 > self.p50 else 0.0

    def draw(self, rng: random.Random) -> float:
        if self.p50 <= 0:
            return 0.0
        # Clipped to the 0.1 % .. 99.9 % range, as the service profile draws.
        z = min(max(rng.gauss(0.0, 1.0), -_Z999), _Z999)
        return self.p50 * math.exp(self.sigma * z)

    def share_within(self, seconds: float) -> float:
        """The probability that a draw is at most ``seconds`` (the lognormal's CDF)."""
        if seconds < 0:
            return 0.0
        if self.p50 <= 0 or self.sigma == 0:
            return 1.0 if seconds >= self.p50 else 0.0
        if seconds == 0:
            return 0.0
        return NormalDist().cdf(math.log(seconds / self.p50) / self.sigma)


NO_DELAY = Spread(0.0, 0.0)


@dataclass(frozen=True)
class DelayProfile:
    """The delays the timing model needs, in seconds; ``source`` says where the numbers come from."""

    name: str
    version: str
    source: str
    # A minute's metric-filter datapoint, after its lines were ingested, until alarms can see it.
    metric_visible: Spread = NO_DELAY
    # Whether alarms are evaluated once a minute at their own offset (period alignment); the
    # instant model evaluates at the exact end of each minute.
    alarm_minute_phase: bool = False
    # An alarm's state change (or a put event) until the target function is invoked.
    event_delivery: Spread = NO_DELAY
    # A scheduled rule's tick until the function is invoked.
    schedule_jitter: Spread = NO_DELAY
    # A log event until Logs Insights can find it (late events are missing from a query's end).
    log_visible: Spread = NO_DELAY
    # Logs Insights: waiting in the queue, then running (a fixed part and one per GB scanned).
    insights_queue: Spread = NO_DELAY
    insights_run: Spread = NO_DELAY
    insights_seconds_per_gb: Spread = NO_DELAY
    # A Lambda environment's initialisation, when none is warm; one idle longer than this is gone.
    cold_start: Spread = NO_DELAY
    warm_minutes: float = math.inf
    # UpdateService (or a stopped task) until its replacement is RUNNING.
    task_start: Spread = NO_DELAY
    # How long a rolling deployment runs (ECS's own deployment, as DescribeServices reports it).
    deployment: Spread = NO_DELAY
    assumptions: tuple[str, ...] = field(default=())

    @property
    def instant(self) -> bool:
        return self.name == "none"

    def describe(self) -> dict[str, object]:
        spreads = {
            name: [value.p50, value.p99]
            for name, value in vars(self).items()
            if isinstance(value, Spread) and value != NO_DELAY
        }
        return {
            "profile": self.name,
            "version": self.version,
            "source": self.source,
            "p50_p99_seconds": spreads,
            "warm_minutes": None if math.isinf(self.warm_minutes) else self.warm_minutes,
            "alarm_minute_phase": self.alarm_minute_phase,
            "assumptions": list(self.assumptions),
        }


INSTANT = DelayProfile(
    name="none",
    version="0",
    source="no delays: every decision at the exact end of its minute, seeing every line",
)


class Delays:
    """Seeded draws from one profile, and the moments that follow from them."""

    def __init__(self, profile: DelayProfile, seed: int) -> None:
        self.profile = profile
        self.rng = random.Random(seed)
        self._last_run: dict[str, float] = {}
        self._phases: dict[str, float] = {}

    def draw(self, spread: Spread) -> float:
        return spread.draw(self.rng)

    def alarm_sees(self, alarm: str, period_end: float) -> float:
        """When ``alarm`` evaluates the datapoint of the period ending at ``period_end``: its first
        once-a-minute evaluation after the metric is visible."""
        profile = self.profile
        visible = period_end + self.draw(profile.log_visible) + self.draw(profile.metric_visible)
        if not profile.alarm_minute_phase:
            return visible
        phase = self._phases.setdefault(alarm, self.rng.uniform(0.0, 60.0))
        return phase + 60.0 * math.ceil((visible - phase) / 60.0)

    def invoked(self, function: str, at: float) -> float:
        """When ``function`` starts its work for an invocation requested at ``at``: with a cold start
        when no environment of it ran in the last ``warm_minutes``."""
        last = self._last_run.get(function)
        cold = last is None or at - last > self.profile.warm_minutes * 60
        started = at + (self.draw(self.profile.cold_start) if cold else 0.0)
        self._last_run[function] = started
        return started

    def insights_seconds(self, scanned_bytes: float) -> float:
        """One Logs Insights query: queued, then run (growing with the bytes scanned)."""
        profile = self.profile
        per_gb = self.draw(profile.insights_seconds_per_gb)
        run = self.draw(profile.insights_run) + per_gb * scanned_bytes / GIGABYTE
        return self.draw(profile.insights_queue) + run

    def share_visible(self, start: float, end: float, cutoff: float) -> float:
        """The share of the log events of [start, end) (spread evenly) that Insights can find at
        ``cutoff``."""
        if end <= start:
            return 0.0
        points = 12
        width = (end - start) / points
        lag = self.profile.log_visible
        return sum(lag.share_within(cutoff - (start + (i + 0.5) * width)) for i in range(points)) / points
