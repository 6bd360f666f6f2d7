"""Pure analysis: the Logs Insights queries, the per-job outcomes they return, and whether the
failing jobs concentrate on one worker (log stream = ECS task) beyond chance.

The test: under "failures are independent of the worker", with N jobs in the window of which K ran
on worker w and F failed, the number of failures on w is hypergeometric(N, K, F); the worker's
p-value is P(X >= observed). The worker is picked after looking, so the decision uses the exact
family-wise p-value of that pick: the probability, with the F failures spread at random over the N
jobs, that *some* worker would get a p-value this small (a min-p permutation test computed exactly
by counting). Unlike Bonferroni it does not charge for workers that could never look this bad.
The incident: 4 failed of 19, all 4 on the one worker that ran 4 of the 19: p = 1 / C(19, 4) =
0.026 %, as the incident report states.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from fleet_remediation.adapters.logs_insights import Row
from fleet_remediation.contract.signals import SignalCatalog
from fleet_remediation.core.errors import AwsApiError
from fleet_remediation.domain.job_outcomes import JobOutcome

# The jobs one query asks for (Logs Insights returns at most 10,000 rows): a window with more is
# analysed on the first MAX_JOBS, and the report and the notification say so.
MAX_JOBS = 5000
MAX_LISTED_JOBS = 50


def job_outcomes_query(catalog: SignalCatalog, *, failing_only: bool = False) -> str:
    """Responses, first audio frames and explicit first-audio timeouts per job and log stream. TTS
    lines carry ``job_id`` but no ``room`` (incident report), so jobs are keyed by ``job_id``.
    ``failing_only`` keeps the failed jobs (``JobOutcome.failed``: the query a person pastes)."""
    started, frame, timeout = catalog.response_started, catalog.first_audio_frame, catalog.first_audio_timeout
    any_of = " or ".join(s.insights_filter().removeprefix("filter ") for s in (started, frame, timeout))
    return "\n| ".join(
        [
            f"filter ({any_of}) and ispresent(job_id)",
            f'stats sum(strcontains({started.field}, "{started.text}")) as responses, '
            f'sum(strcontains({frame.field}, "{frame.text}")) as first_frames, '
            f'sum(strcontains({timeout.field}, "{timeout.text}")) as timeouts by job_id, @logStream',
            *(["filter (responses > 0 and first_frames = 0) or timeouts > 0"] if failing_only else []),
            f"limit {MAX_JOBS}",
        ]
    )


def job_rooms_query(job_ids: Sequence[str]) -> str:
    """The ``received job request`` line of each job: its room name and sid."""
    quoted = ", ".join(f'"{job_id}"' for job_id in job_ids)
    return "\n| ".join(
        [
            f'filter message = "received job request" and job_id in [{quoted}]',
            "stats latest(room) as room, latest(room_id) as room_id by job_id",
            f"limit {MAX_JOBS}",
        ]
    )


def _count(row: Row, name: str) -> int:
    raw = row.get(name, "0") or "0"
    try:
        return int(float(raw))
    except ValueError:
        raise AwsApiError(
            f"Logs Insights returned a non-numeric {name}: {raw!r}", aws_code="BadResult"
        ) from None


def parse_job_outcomes(rows: Iterable[Row]) -> list[JobOutcome]:
    outcomes = []
    for row in rows:
        job_id, stream = row.get("job_id"), row.get("@logStream")
        if not job_id or not stream:
            raise AwsApiError(f"Logs Insights row lacks job_id or @logStream: {row}", aws_code="BadResult")
        counts = (_count(row, "responses"), _count(row, "first_frames"), _count(row, "timeouts"))
        outcomes.append(JobOutcome(job_id, stream, *counts))
    return outcomes


# The family-wise p-value is computed to this relative precision: probability mass below this share
# of its lower bound is dropped. Below ``NEGLIGIBLE_P`` the Bonferroni upper bound is reported instead
# (such a worker is concentrated by any alpha).
RELATIVE_PRECISION = 1e-10
NEGLIGIBLE_P = 1e-250
# A worker "reaches" the observed p-value when its own is at most this much above it (rounding).
REACH_TOLERANCE = 1e-9
# The analysis never runs longer than this, whatever time the invocation has left.
ANALYSIS_MAX_SECONDS = 10.0


class AnalysisDeadline(Exception):
    """The exact family-wise p-value did not finish before its deadline."""


def _log_pmf(population: int, marked: int, draws: int, k: int) -> float:
    """log P(X = k) for X ~ Hypergeometric(population, marked, draws), via log-gamma."""
    lg = math.lgamma
    return (
        lg(marked + 1)
        - lg(k + 1)
        - lg(marked - k + 1)
        + lg(population - marked + 1)
        - lg(draws - k + 1)
        - lg(population - marked - draws + k + 1)
        - lg(population + 1)
        + lg(draws + 1)
        + lg(population - draws + 1)
    )


def _support(population: int, marked: int, draws: int) -> tuple[int, int, int]:
    """The lowest and highest possible count and the mode (the pmf rises to it, then falls)."""
    low, high = max(0, draws - (population - marked)), min(marked, draws)
    mode = min(max(((marked + 1) * (draws + 1)) // (population + 2), low), high)
    return low, high, mode


def _up(population: int, marked: int, draws: int, k: int) -> float:
    """P(X = k + 1) / P(X = k)."""
    return (marked - k) * (draws - k) / ((k + 1) * (population - marked - draws + k + 1))


def _down(population: int, marked: int, draws: int, k: int) -> float:
    """P(X = k - 1) / P(X = k)."""
    return k * (population - marked - draws + k) / ((marked - k + 1) * (draws - k + 1))


def log_hypergeometric_tail(population: int, marked: int, draws: int, observed: int) -> float:
    """log P(X >= observed), accurate for tails far below float's range (summed from ``observed``
    where the terms fall, or as one minus the lower side where they rise). O(population)."""
    if not 0 <= marked <= population or not 0 <= draws <= population:
        raise ValueError("marked and draws must lie within the population")
    low, high, mode = _support(population, marked, draws)
    if observed <= low:
        return 0.0
    if observed > high:
        return -math.inf
    if observed > mode:
        # Terms fall from ``observed`` on: their sum relative to the first.
        total, term, k = 1.0, 1.0, observed
        while k < high:
            term *= _up(population, marked, draws, k)
            k += 1
            total += term
            if term < total * 1e-17:
                break
        return _log_pmf(population, marked, draws, observed) + math.log(total)
    # Terms below ``observed`` fall going down; the tail is at least P(X = mode), far from zero.
    total, term, k = 1.0, 1.0, observed - 1
    while k > low:
        term *= _down(population, marked, draws, k)
        k -= 1
        total += term
        if term < total * 1e-17:
            break
    below = math.exp(_log_pmf(population, marked, draws, observed - 1)) * total
    return math.log1p(-below) if below < 1.0 else -math.inf


def hypergeometric_tail(population: int, marked: int, draws: int, observed: int) -> float:
    """P(X >= observed) for X ~ Hypergeometric(population, marked, draws)."""
    return min(1.0, math.exp(log_hypergeometric_tail(population, marked, draws, observed)))


def _reach(population: int, jobs: int, failed: int, log_threshold: float) -> tuple[int, float] | None:
    """The fewest failures with which a worker of ``jobs`` jobs gets a p-value at most the threshold,
    and that p-value's log; None if no count does. Walks down from the most failures it could get."""
    low, high, _ = _support(population, jobs, failed)
    log_term = _log_pmf(population, jobs, failed, high)
    log_tail = -math.inf
    for k in range(high, low - 1, -1):
        if k < high:
            log_term += math.log(_down(population, jobs, failed, k + 1))
        grown = max(log_tail, log_term) + math.log1p(math.exp(-abs(log_tail - log_term)))
        if grown > log_threshold:
            return None if k == high else (k + 1, log_tail)
        log_tail = grown
    return low, 0.0


def family_wise_p_value(
    job_counts: Sequence[int], failed: int, observed_p: float, *, deadline: float | None = None
) -> float:
    """P(min over workers of the hypergeometric tail p-value <= ``observed_p``) when ``failed``
    failures fall uniformly at random on the jobs (``job_counts`` = jobs per worker).

    The workers are placed one after another: given ``f`` failures on the workers so far, the next
    one's count is hypergeometric over the jobs not yet placed. Only workers that can reach
    ``observed_p`` matter (the others are placed last, where they change nothing); the probability
    of "no worker has reached it yet" is carried per ``f``, and each worker adds what its reaching
    takes away, so the result is summed, never found as one minus a number close to one. Mass below
    ``RELATIVE_PRECISION`` of the result's lower bound is dropped, which keeps each step to the
    counts that carry probability: about O(jobs x sqrt(workers)) work, independent of the failures.
    ``deadline`` (``time.monotonic()``) raises ``AnalysisDeadline`` when passed."""
    log_threshold = math.log(observed_p) + REACH_TOLERANCE if observed_p > 0 else -math.inf
    return math.exp(_log_family_wise(job_counts, failed, log_threshold, deadline)[0])


def _log_family_wise(
    job_counts: Sequence[int], failed: int, log_threshold: float, deadline: float | None
) -> tuple[float, bool]:
    """log of the family-wise p-value and whether it is exact (False: the Bonferroni bound)."""
    population = sum(job_counts)
    reaching: list[tuple[int, int]] = []
    log_tails: list[float] = []
    for jobs in sorted(job_counts, reverse=True):
        found = _reach(population, jobs, failed, log_threshold)
        if found is None:
            continue
        fewest, log_tail = found
        if log_tail >= 0.0:  # this worker reaches it whatever happens
            return 0.0, True
        reaching.append((jobs, fewest))
        log_tails.append(log_tail)
    if not reaching:
        return -math.inf, True
    log_lower = max(log_tails)
    log_upper = min(0.0, log_lower + math.log(sum(math.exp(t - log_lower) for t in log_tails)))
    if log_upper < math.log(NEGLIGIBLE_P):
        return log_upper, False
    lower = math.exp(log_lower)
    # Each dropped row or cut-off term loses at most ``epsilon``; there are at most this many.
    epsilon = lower * RELATIVE_PRECISION / ((failed + 1) * (len(reaching) + 1))
    offset, none = 0, [1.0]  # none[i]: P(no worker reached yet, offset + i failures placed)
    remaining, reached = population, 0.0
    for jobs, reach in reaching:
        if deadline is not None and time.monotonic() > deadline:
            raise AnalysisDeadline
        spread = [0.0] * (len(none) + jobs + 1)
        for index, mass in enumerate(none):
            if mass < epsilon:
                continue
            left = failed - offset - index
            low, high, mode = _support(remaining, jobs, left)
            cutoff = epsilon / ((high - low + 1) * mass)
            peak = math.exp(_log_pmf(remaining, jobs, left, mode))
            tail = 0.0
            k, term = mode, peak
            while True:  # the mode and above, where the terms fall
                if k >= reach:
                    tail += term
                else:
                    spread[index + k] += mass * term
                if k == high or term < cutoff:
                    break
                term *= _up(remaining, jobs, left, k)
                k += 1
            k, term = mode, peak
            while k > low:  # below the mode, where the terms fall going down
                term *= _down(remaining, jobs, left, k)
                k -= 1
                if term < cutoff:
                    break
                if k >= reach:
                    tail += term
                else:
                    spread[index + k] += mass * term
            reached += mass * tail
        first = next((i for i, mass in enumerate(spread) if mass >= epsilon), len(spread))
        last = max((i for i, mass in enumerate(spread) if mass >= epsilon), default=first)
        offset, none = offset + first, spread[first : last + 1]
        remaining -= jobs
    return math.log(min(1.0, max(reached, lower))), True


@dataclass(frozen=True)
class WorkerJobStats:
    log_stream: str
    jobs: int
    failed_jobs: int


class Verdict(StrEnum):
    """What the failing jobs say about where the failure is."""

    # One worker holds more failed jobs than chance allows: drain it.
    CONCENTRATED = "concentrated"
    # Enough failures, and they are spread over the fleet (or no worker stands out): notify only.
    FLEET_WIDE = "fleet-wide"
    # Too little to tell (no failed job, one failed job, or one worker): notify only, blame no one.
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Concentration:
    """Whether failures concentrate on ``top`` (the worker with most failed jobs)."""

    verdict: Verdict
    reason: str
    jobs: int
    failed_jobs: int
    workers: int
    top: WorkerJobStats | None
    p_value: float | None
    p_value_family: float | None
    alpha: float
    # False: ``p_value_family`` is an upper bound (analysis deadline, or a p-value below
    # ``NEGLIGIBLE_P``), or None when even the bound did not settle the question.
    p_value_family_exact: bool = True

    @property
    def concentrated(self) -> bool:
        return self.verdict is Verdict.CONCENTRATED

    def evidence(self) -> dict[str, object]:
        return {
            "jobs_in_window": self.jobs,
            "failed_jobs": self.failed_jobs,
            "workers": self.workers,
            "jobs_on_worker": self.top.jobs if self.top else None,
            "failed_jobs_on_worker": self.top.failed_jobs if self.top else None,
            "p_value_worker": self.p_value,
            "p_value": self.p_value_family,
            "alpha": self.alpha,
            "p_value_exact": self.p_value_family_exact,
            "test": "one-sided hypergeometric per worker; exact min-p over workers",
        }


def worker_job_stats(jobs: Iterable[JobOutcome]) -> list[WorkerJobStats]:
    """Per log stream, most failures first (ties: more jobs, then name, for a stable order)."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for job in jobs:
        totals[job.log_stream][0] += 1
        totals[job.log_stream][1] += int(job.failed)
    stats = [WorkerJobStats(stream, counts[0], counts[1]) for stream, counts in totals.items()]
    return sorted(stats, key=lambda s: (-s.failed_jobs, -s.jobs, s.log_stream))


def assess_concentration(
    jobs: Sequence[JobOutcome],
    *,
    alpha: float,
    min_failed_jobs: int,
    deadline: float | None = None,
    truncated: bool = False,
) -> Concentration:
    """``deadline`` (``time.monotonic()``): past it, the family-wise p-value is bracketed by its
    bounds instead (the top worker's own p-value and the Bonferroni sum); a bracket that does not
    settle the question is never a concentration. ``truncated``: the window held more jobs than
    the query returns (``MAX_JOBS``), which the reason says."""
    workers = worker_job_stats(jobs)
    failed = sum(job.failed for job in jobs)
    note = f" (first {len(jobs)} jobs of a larger window)" if truncated else ""

    def judged(
        verdict: Verdict,
        reason: str,
        top: WorkerJobStats | None = None,
        p: float | None = None,
        corrected: float | None = None,
        exact: bool = True,
    ) -> Concentration:
        return Concentration(
            verdict, reason + note, len(jobs), failed, len(workers), top, p, corrected, alpha, exact
        )

    if failed == 0:
        return judged(
            Verdict.INCONCLUSIVE, "inconclusive: no job with responses but no first audio frame in the window"
        )
    top = workers[0]
    if len(workers) < 2:
        return judged(
            Verdict.INCONCLUSIVE,
            "inconclusive: only one worker had jobs in the window: nothing to compare",
            top,
        )
    log_p = log_hypergeometric_tail(len(jobs), top.jobs, failed, top.failed_jobs)
    p = math.exp(log_p)
    analysis_deadline = time.monotonic() + ANALYSIS_MAX_SECONDS
    if deadline is not None:
        analysis_deadline = min(analysis_deadline, deadline)
    share = f"{top.failed_jobs} of {failed} failed jobs on a worker that ran {top.jobs} of {len(jobs)} jobs"
    try:
        log_family, exact = _log_family_wise(
            [w.jobs for w in workers], failed, log_p + REACH_TOLERANCE, analysis_deadline
        )
    except AnalysisDeadline:
        # The bounds: the top worker's own p-value and the Bonferroni sum over the workers.
        upper = min(1.0, len(workers) * p)
        if failed >= min_failed_jobs and top.failed_jobs >= min_failed_jobs and upper < alpha:
            reason = f"concentrated: {share} (p <= {upper:.3g} < {alpha}; analysis deadline, bound)"
            return judged(Verdict.CONCENTRATED, reason, top, p, upper, exact=False)
        reason = f"inconclusive: {share} (p between {p:.3g} and {upper:.3g}; analysis deadline)"
        return judged(Verdict.INCONCLUSIVE, reason, top, p, None, exact=False)
    corrected = math.exp(log_family)
    if failed < min_failed_jobs:
        # One failure cannot tell one worker from chance, nor show that the fleet is failing.
        return judged(
            Verdict.INCONCLUSIVE,
            f"inconclusive: {share}, fewer than {min_failed_jobs} in all",
            top,
            p,
            corrected,
            exact,
        )
    if top.failed_jobs < min_failed_jobs:
        return judged(
            Verdict.FLEET_WIDE,
            f"fleet-wide: {share}, no worker with {min_failed_jobs} or more",
            top,
            p,
            corrected,
            exact,
        )
    if corrected >= alpha:
        return judged(
            Verdict.FLEET_WIDE,
            f"fleet-wide: {share} (p={corrected:.3g} >= {alpha})",
            top,
            p,
            corrected,
            exact,
        )
    return judged(
        Verdict.CONCENTRATED, f"concentrated: {share} (p={corrected:.3g} < {alpha})", top, p, corrected, exact
    )
