"""The concentration test's previous implementation, kept as a reference: exact integer arithmetic
(``math.comb``), quadratic or worse in the jobs. Tests compare the responder's analysis with it on
small and medium windows; ``bench.tts_concentration`` times both. Never shipped."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction


def hypergeometric_tail(population: int, marked: int, draws: int, observed: int) -> Fraction:
    """P(X >= observed) for X ~ Hypergeometric(population, marked, draws), exactly."""
    upper = min(marked, draws)
    total = math.comb(population, draws)
    tail = sum(
        math.comb(marked, k) * math.comb(population - marked, draws - k)
        for k in range(max(observed, 0), upper + 1)
    )
    return min(Fraction(1), Fraction(tail, total))


def family_wise_p_value(job_counts: Sequence[int], failed: int, observed_p: Fraction) -> Fraction:
    """P(min over workers of the tail p-value <= ``observed_p``), exactly: count the assignments of
    the failures to jobs in which no worker reaches ``observed_p`` (a product of truncated binomial
    polynomials), as the responder did before."""
    population = sum(job_counts)
    ways = [1] + [0] * failed
    for jobs in job_counts:
        reach = next(
            (
                k
                for k in range(min(jobs, failed) + 1)
                if hypergeometric_tail(population, jobs, failed, k) <= observed_p
            ),
            min(jobs, failed) + 1,
        )
        factor = [math.comb(jobs, k) for k in range(reach)]
        ways = [
            sum(ways[f - k] * factor[k] for k in range(min(f, len(factor) - 1) + 1))
            for f in range(failed + 1)
        ]
    return 1 - Fraction(ways[failed], math.comb(population, failed))


def top_worker_p_values(job_counts: Sequence[int], failed_counts: Sequence[int]) -> tuple[Fraction, Fraction]:
    """The top worker's (most failures, then most jobs) tail p-value and the family-wise one."""
    population, failed = sum(job_counts), sum(failed_counts)
    top = min(range(len(job_counts)), key=lambda i: (-failed_counts[i], -job_counts[i]))
    observed = hypergeometric_tail(population, job_counts[top], failed, failed_counts[top])
    return observed, family_wise_p_value(job_counts, failed, observed)
