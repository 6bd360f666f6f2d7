"""Attribution (pure): which worker, if any, is the degraded one.

The incident report's rules of thumb, per log stream over the window:
hundreds of slow-inference warnings over tens of minutes is a resident problem; 1-2 warnings of
0.2-0.8 s are normal; a short burst while a session warms up is normal; rates are compared per
minute. A worker is degraded only when it is an outlier against the rest of the fleet: when most
of the fleet is slow the cause is shared (host contention, a provider) and draining would not help.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from fleet_remediation.contract.policies import DrainerPolicy
from worker_drainer.adapters.worker_logs import SlowVadStats

# The seed's "normal range": one or two warnings, at most 0.8 s behind.
NORMAL_MAX_WARNINGS = 2
NORMAL_MAX_DELAY_SECONDS = 0.8


class Pattern(StrEnum):
    QUIET = "quiet"
    NORMAL = "normal"
    WARM_UP = "warm-up burst"
    SUB_THRESHOLD = "below thresholds"
    ELEVATED = "elevated"
    RESIDENT = "resident"

    @property
    def elevated(self) -> bool:
        return self in (Pattern.ELEVATED, Pattern.RESIDENT)


@dataclass(frozen=True)
class WorkerAssessment:
    task_id: str
    log_stream: str
    pattern: Pattern
    rate_per_minute: float
    degraded: bool
    reason: str
    stats: SlowVadStats | None


@dataclass(frozen=True)
class FleetAssessment:
    workers: tuple[WorkerAssessment, ...]
    fleet_wide: bool
    reason: str
    unattributed_streams: tuple[str, ...]

    @property
    def degraded(self) -> tuple[WorkerAssessment, ...]:
        return tuple(w for w in self.workers if w.degraded)

    def for_task(self, task_id: str) -> WorkerAssessment | None:
        return next((w for w in self.workers if w.task_id == task_id), None)


def classify(stats: SlowVadStats | None, policy: DrainerPolicy) -> tuple[Pattern, float]:
    """The worker's warning pattern and its rate per minute of window."""
    if stats is None or stats.warnings == 0:
        return Pattern.QUIET, 0.0
    rate = stats.warnings / policy.window_minutes
    if stats.warnings <= NORMAL_MAX_WARNINGS and stats.max_delay <= NORMAL_MAX_DELAY_SECONDS:
        return Pattern.NORMAL, rate
    if (
        stats.warnings <= policy.warmup_max_warnings
        and stats.span_seconds <= policy.warmup_max_span_seconds
        and stats.max_delay <= policy.warmup_max_delay_seconds
    ):
        return Pattern.WARM_UP, rate
    if stats.warnings >= policy.resident_min_warnings and stats.span_seconds >= (
        policy.resident_min_span_minutes * 60
    ):
        return Pattern.RESIDENT, rate
    if (
        rate >= policy.degraded_min_rate_per_minute
        and stats.span_seconds >= policy.resident_min_span_minutes * 60
    ):
        return Pattern.ELEVATED, rate
    return Pattern.SUB_THRESHOLD, rate


def _describe(pattern: Pattern, stats: SlowVadStats | None, rate: float) -> str:
    if stats is None:
        return "no slow-inference warnings in the window"
    return (
        f"{pattern.value}: {stats.warnings} warnings over {stats.span_seconds / 60:.1f} min, "
        f"{rate:.2f}/min, max delay {stats.max_delay:.1f}s, {stats.jobs} job(s)"
    )


def _judge(
    task_id: str, classified: Mapping[str, tuple[Pattern, float]], fleet_wide: bool, policy: DrainerPolicy
) -> tuple[bool, str]:
    """Whether an elevated worker is degraded (an outlier against the rest of the fleet), and why."""
    pattern, rate = classified[task_id]
    if not pattern.elevated:
        return False, ""
    if fleet_wide:
        return False, "; not attributed: the slowness is fleet-wide"
    others = [r for other, (_, r) in classified.items() if other != task_id]
    median = statistics.median(others) if others else 0.0
    if rate >= policy.outlier_factor * median:
        return True, f"; outlier ({policy.outlier_factor:g}x the fleet median {median:.2f}/min)"
    return False, f"; not an outlier against the fleet median {median:.2f}/min"


def assess_fleet(
    stats: Iterable[SlowVadStats],
    stream_to_task: Mapping[str, str],
    fleet_task_ids: Iterable[str],
    policy: DrainerPolicy,
) -> FleetAssessment:
    """Assess every running task of the service. ``stream_to_task`` maps log streams to task ids;
    tasks without a stats row had no warning at all, and count as quiet in the fleet comparison."""
    by_task: dict[str, SlowVadStats] = {}
    unattributed: list[str] = []
    for stream_stats in stats:
        task_id = stream_to_task.get(stream_stats.log_stream)
        if task_id is None:
            unattributed.append(stream_stats.log_stream)
        else:
            by_task[task_id] = stream_stats
    task_ids = sorted(set(fleet_task_ids))
    classified = {task_id: classify(by_task.get(task_id), policy) for task_id in task_ids}
    elevated = [task_id for task_id, (pattern, _) in classified.items() if pattern.elevated]
    fleet_size = len(task_ids)
    fleet_wide = (
        fleet_size > 1 and len(elevated) >= 2 and len(elevated) / fleet_size >= policy.fleet_wide_fraction
    )
    streams = {task_id: stream for stream, task_id in stream_to_task.items()}
    workers: list[WorkerAssessment] = []
    for task_id in task_ids:
        pattern, rate = classified[task_id]
        row = by_task.get(task_id)
        degraded, judged = _judge(task_id, classified, fleet_wide, policy)
        text = _describe(pattern, row, rate) + judged
        workers.append(
            WorkerAssessment(task_id, streams.get(task_id, ""), pattern, rate, degraded, text, row)
        )
    reason = (
        f"{len(elevated)} of {fleet_size} workers are slow (>= {policy.fleet_wide_fraction:.0%}): fleet-wide"
        if fleet_wide
        else f"{len(elevated)} of {fleet_size} workers elevated, {sum(w.degraded for w in workers)} degraded"
    )
    return FleetAssessment(tuple(workers), fleet_wide, reason, tuple(unattributed))
