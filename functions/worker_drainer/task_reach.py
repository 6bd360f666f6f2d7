"""Per-task TTS reach (pure): which task, if any, fails on its own, from one row per task.

Each task is tested against its own volume (a one-sided binomial test on its first-audio timeouts)
and against the fleet's (the baseline is the rest of the fleet's timeout rate when that is higher
than the healthy rate), at the stated significance of ``TaskReachSettings.level``. When a share of
the fleet fails on its own the failure is fleet-wide: nobody is suspect (notify, do not drain).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from fleet_remediation.contract.task_reach import TaskReachSettings

# Terms of the binomial tail below this share of the running sum no longer change the decision.
TAIL_PRECISION = 1e-12


@dataclass(frozen=True, slots=True)
class TaskReach:
    """One task's TTS lines in the window: one row of the per-task query."""

    log_stream: str
    responses: int
    first_frames: int
    timeouts: int
    # First frames that came after their response's timeout: slow responses, not silent ones.
    late_frames: int = 0
    tts_endpoint: str = ""

    @property
    def missing(self) -> int:
        """Responses whose first frame never came (a timeout not followed by a late frame)."""
        return max(0, self.timeouts - self.late_frames)


@dataclass(frozen=True)
class TaskVerdict:
    log_stream: str
    responses: int
    timeouts: int
    baseline_rate: float
    p_value: float
    suspect: bool


@dataclass(frozen=True)
class TaskReachAssessment:
    tested: tuple[TaskVerdict, ...]  # the tasks with at least ``min_timeouts`` timeouts
    fleet_wide: bool
    level: float
    tasks: int
    reason: str

    @property
    def suspects(self) -> tuple[TaskVerdict, ...]:
        """Most significant first."""
        return tuple(sorted((v for v in self.tested if v.suspect), key=lambda v: (v.p_value, v.log_stream)))


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p); 1.0 when k is at or below the mean (never significant)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if k <= n * p:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    term = math.exp(
        math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_p + (n - k) * log_q
    )
    total, i = term, k
    # Above the mean each term is smaller than the one before: stop once they no longer count.
    while i < n and term > total * TAIL_PRECISION:
        term *= (n - i) / (i + 1) * p / (1 - p)
        total += term
        i += 1
    return min(1.0, total)


def assess_task_reach(
    rows: Iterable[TaskReach], settings: TaskReachSettings, tasks: int
) -> TaskReachAssessment:
    """``rows``: one per log stream in the window; ``tasks``: the running tasks of the service (the
    test's multiplicity; a stream without lines is a task with nothing to test)."""
    listed = list(rows)
    responses = sum(r.responses for r in listed)
    timeouts = sum(r.timeouts for r in listed)
    level = settings.level(max(tasks, len(listed)))
    verdicts: list[TaskVerdict] = []
    on_their_own = 0
    for row in listed:
        if row.timeouts < settings.min_timeouts:
            continue
        large = row.timeouts >= settings.min_failing_share * row.responses
        # A timeout follows its response by the emitter's deadline, so it may count one the window missed.
        n = max(row.responses, row.timeouts)
        rest_n, rest_k = responses - row.responses, timeouts - row.timeouts
        rest_rate = rest_k / rest_n if rest_n > 0 else 0.0
        own = binomial_tail(row.timeouts, n, settings.expected_timeout_rate)
        # Any task failing beyond chance is evidence of a fleet-wide failure, however small its share:
        # an outage's first tick sees many tasks just starting to fail.
        on_their_own += own <= level
        baseline = min(max(settings.expected_timeout_rate, rest_rate), 1 - 1e-9)
        p = own if baseline == settings.expected_timeout_rate else binomial_tail(row.timeouts, n, baseline)
        verdicts.append(
            TaskVerdict(row.log_stream, row.responses, row.timeouts, baseline, p, large and p <= level)
        )
    fleet = max(tasks, len(listed))
    fleet_wide = on_their_own >= 2 and on_their_own >= settings.fleet_wide_fraction * fleet
    if fleet_wide:
        verdicts = [
            TaskVerdict(v.log_stream, v.responses, v.timeouts, v.baseline_rate, v.p_value, False)
            for v in verdicts
        ]
        share = f"{settings.fleet_wide_fraction:.0%}"
        reason = f"{on_their_own} of {fleet} tasks fail on their own (>= {share}): fleet-wide"
    else:
        suspects = sum(v.suspect for v in verdicts)
        reason = f"{suspects} of {fleet} tasks fail beyond chance (p <= {level:.3g})"
    return TaskReachAssessment(tuple(verdicts), fleet_wide, level, fleet, reason)
