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
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from fleet_remediation.adapters.logs_insights import Row
from fleet_remediation.contract.signals import SignalCatalog
from fleet_remediation.core.errors import AwsApiError

# Bounded so one query's result stays well under the Insights 10,000-row limit.
MAX_JOBS = 5000
MAX_LISTED_JOBS = 50


def job_outcomes_query(catalog: SignalCatalog, *, failing_only: bool = False) -> str:
    """Responses and first audio frames per job and log stream. TTS lines carry ``job_id`` but no
    ``room`` (incident report), so jobs are keyed by ``job_id``. ``failing_only`` keeps the jobs
    with responses but no first frame (the query a person pastes)."""
    started, frame = catalog.response_started, catalog.first_audio_frame
    either = [signal.insights_filter().removeprefix("filter ") for signal in (started, frame)]
    both = f"({either[0]} or {either[1]})"
    return "\n| ".join(
        [
            f"filter {both} and ispresent(job_id)",
            f'stats sum(strcontains({started.field}, "{started.text}")) as responses, '
            f'sum(strcontains({frame.field}, "{frame.text}")) as first_frames by job_id, @logStream',
            *(["filter responses > 0 and first_frames = 0"] if failing_only else []),
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


@dataclass(frozen=True)
class JobOutcome:
    job_id: str
    log_stream: str
    responses: int
    first_frames: int

    @property
    def failed(self) -> bool:
        """The incident's definition: the agent responded, but no first audio frame ever came."""
        return self.responses > 0 and self.first_frames == 0


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
        outcomes.append(JobOutcome(job_id, stream, _count(row, "responses"), _count(row, "first_frames")))
    return outcomes


def family_wise_p_value(job_counts: Sequence[int], failed: int, observed_p: float) -> float:
    """P(min over workers of the hypergeometric tail p-value <= ``observed_p``) when ``failed``
    failures fall uniformly at random on the jobs (``job_counts`` = jobs per worker)."""
    population = sum(job_counts)
    tolerance = observed_p * 1e-9
    # ways[f] = assignments of f failures to the workers seen so far with no worker reaching observed_p
    ways = [1] + [0] * failed
    for jobs in job_counts:
        reach = next(
            (
                k
                for k in range(min(jobs, failed) + 1)
                if hypergeometric_tail(population, jobs, failed, k) <= observed_p + tolerance
            ),
            min(jobs, failed) + 1,
        )
        factor = [math.comb(jobs, k) for k in range(reach)]
        ways = [
            sum(ways[f - k] * factor[k] for k in range(min(f, len(factor) - 1) + 1))
            for f in range(failed + 1)
        ]
    return max(0.0, 1.0 - ways[failed] / math.comb(population, failed))


def hypergeometric_tail(population: int, marked: int, draws: int, observed: int) -> float:
    """P(X >= observed) for X ~ Hypergeometric(population, marked, draws)."""
    if not 0 <= marked <= population or not 0 <= draws <= population:
        raise ValueError("marked and draws must lie within the population")
    upper = min(marked, draws)
    total = math.comb(population, draws)
    tail = sum(
        math.comb(marked, k) * math.comb(population - marked, draws - k)
        for k in range(max(observed, 0), upper + 1)
    )
    return min(1.0, tail / total)


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


def assess_concentration(jobs: Sequence[JobOutcome], *, alpha: float, min_failed_jobs: int) -> Concentration:
    workers = worker_job_stats(jobs)
    failed = sum(job.failed for job in jobs)

    def judged(
        verdict: Verdict,
        reason: str,
        top: WorkerJobStats | None = None,
        p: float | None = None,
        corrected: float | None = None,
    ) -> Concentration:
        return Concentration(verdict, reason, len(jobs), failed, len(workers), top, p, corrected, alpha)

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
    p = hypergeometric_tail(len(jobs), top.jobs, failed, top.failed_jobs)
    corrected = family_wise_p_value([w.jobs for w in workers], failed, p)
    share = f"{top.failed_jobs} of {failed} failed jobs on a worker that ran {top.jobs} of {len(jobs)} jobs"
    if failed < min_failed_jobs:
        # One failure cannot tell one worker from chance, nor show that the fleet is failing.
        return judged(
            Verdict.INCONCLUSIVE,
            f"inconclusive: {share}, fewer than {min_failed_jobs} in all",
            top,
            p,
            corrected,
        )
    if top.failed_jobs < min_failed_jobs:
        return judged(
            Verdict.FLEET_WIDE,
            f"fleet-wide: {share}, no worker with {min_failed_jobs} or more",
            top,
            p,
            corrected,
        )
    if corrected >= alpha:
        return judged(
            Verdict.FLEET_WIDE, f"fleet-wide: {share} (p={corrected:.3g} >= {alpha})", top, p, corrected
        )
    return judged(
        Verdict.CONCENTRATED, f"concentrated: {share} (p={corrected:.3g} < {alpha})", top, p, corrected
    )


def failing_jobs(jobs: Iterable[JobOutcome]) -> list[JobOutcome]:
    return sorted((job for job in jobs if job.failed), key=lambda j: (j.log_stream, j.job_id))
