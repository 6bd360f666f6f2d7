"""The statistics behind the one-worker test: hypergeometric tail p-values in log space and the
exact family-wise (min-p) p-value of picking the worst worker, with a deadline."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

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
    return math.exp(log_family_wise(job_counts, failed, log_threshold, deadline)[0])


def log_family_wise(
    job_counts: Sequence[int], failed: int, log_threshold: float, deadline: float | None
) -> tuple[float, bool]:
    """log of the family-wise p-value and whether it is exact (False: the Bonferroni bound)."""
    population = sum(job_counts)
    found = _reaching_workers(job_counts, population, failed, log_threshold)
    if found is None:  # a worker reaches it whatever happens
        return 0.0, True
    reaching, log_tails = found
    if not reaching:
        return -math.inf, True
    log_lower = max(log_tails)
    log_upper = min(0.0, log_lower + math.log(sum(math.exp(t - log_lower) for t in log_tails)))
    if log_upper < math.log(NEGLIGIBLE_P):
        return log_upper, False
    lower = math.exp(log_lower)
    # Each dropped row or cut-off term loses at most ``epsilon``; there are at most this many.
    epsilon = lower * RELATIVE_PRECISION / ((failed + 1) * (len(reaching) + 1))
    reached = _reached_mass(reaching, population, failed, epsilon, deadline)
    return math.log(min(1.0, max(reached, lower))), True


def _reaching_workers(
    job_counts: Sequence[int], population: int, failed: int, log_threshold: float
) -> tuple[list[tuple[int, int]], list[float]] | None:
    """The workers that can reach the threshold, largest first, as (jobs, fewest failures), with
    their tails' logs; None when one of them reaches it whatever happens."""
    reaching: list[tuple[int, int]] = []
    log_tails: list[float] = []
    for jobs in sorted(job_counts, reverse=True):
        found = _reach(population, jobs, failed, log_threshold)
        if found is None:
            continue
        fewest, log_tail = found
        if log_tail >= 0.0:
            return None
        reaching.append((jobs, fewest))
        log_tails.append(log_tail)
    return reaching, log_tails


def _reached_mass(
    reaching: Sequence[tuple[int, int]], population: int, failed: int, epsilon: float, deadline: float | None
) -> float:
    """P(some worker reaches the threshold), placing the reaching workers one after another."""
    offset, none = 0, [1.0]  # none[i]: P(no worker reached yet, offset + i failures placed)
    remaining, reached = population, 0.0
    for jobs, reach in reaching:
        if deadline is not None and time.monotonic() > deadline:
            raise AnalysisDeadline
        spread = [0.0] * (len(none) + jobs + 1)
        for index, mass in enumerate(none):
            if mass >= epsilon:
                left = failed - offset - index
                reached += mass * _place(spread, index, mass, (remaining, jobs, left), reach, epsilon)
        first = next((i for i, mass in enumerate(spread) if mass >= epsilon), len(spread))
        last = max((i for i, mass in enumerate(spread) if mass >= epsilon), default=first)
        offset, none = offset + first, spread[first : last + 1]
        remaining -= jobs
    return reached


def _place(
    spread: list[float], index: int, mass: float, draw: tuple[int, int, int], reach: int, epsilon: float
) -> float:
    """Place one worker's count, hypergeometric over ``draw`` (jobs left, its jobs, failures left),
    given ``mass`` of "none reached yet" at row ``index``: counts below ``reach`` add to
    ``spread[index + count]``; the returned share is that of the counts that reach it."""
    remaining, jobs, left = draw
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
    return tail
