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
from fleet_remediation.contract.signals import TTS_COLUMNS, TTS_ENDPOINT_FIELD, SignalCatalog
from fleet_remediation.core.errors import AwsApiError
from fleet_remediation.core.message_model import probability
from fleet_remediation.domain.group_verdict import GroupEvent
from fleet_remediation.domain.job_outcomes import JobOutcome
from tts_reach_alarm.hypergeometric import (
    ANALYSIS_MAX_SECONDS,
    REACH_TOLERANCE,
    AnalysisDeadline,
    log_family_wise,
    log_hypergeometric_tail,
)

# The jobs one query asks for (Logs Insights returns at most 10,000 rows): a window with more is
# read in time pieces (``investigation``), and one that cannot be is not decided on.
MAX_JOBS = 5000
JOB_COUNTS = TTS_COLUMNS
# ``JobOutcome.failed`` over ``tts_sums``' columns (a summary line's counts are in the ``_summed`` ones).
FAILING_FILTER = (
    "filter timeouts > late_frames + late_frames_summed or "
    "(responses + responses_summed > 0 and first_frames + first_frames_summed = 0)"
)


MAX_LISTED_JOBS = 50
# How a verdict that clears or withholds the worker the per-job test named begins its reason.
NOT_NAMED = "not named: "


def job_outcomes_query(catalog: SignalCatalog, *, failing_only: bool = False) -> str:
    """Responses, first audio frames and explicit first-audio timeouts per job and log stream, with
    the TTS endpoint its lines name (the shared verdict's endpoint groups). TTS lines carry ``job_id``
    but no ``room`` (incident report), so jobs are keyed by ``job_id``. ``failing_only`` keeps the
    failed jobs (``JobOutcome.failed``: the query a person pastes)."""
    endpoint = f"latest({TTS_ENDPOINT_FIELD}) as {TTS_ENDPOINT_FIELD}"
    return "\n| ".join(
        [
            f"filter ({catalog.tts_selector()}) and ispresent(job_id)",
            f"stats {catalog.tts_sums()}, {endpoint} by job_id, @logStream",
            *([FAILING_FILTER] if failing_only else []),
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


def _counts(row: Row) -> tuple[int, int, int, int]:
    try:
        return SignalCatalog.tts_totals(row)
    except ValueError as exc:
        raise AwsApiError(f"Logs Insights returned a {exc}", aws_code="BadResult") from None


def parse_job_outcomes(rows: Iterable[Row]) -> list[JobOutcome]:
    outcomes = []
    for row in rows:
        job_id, stream = row.get("job_id"), row.get("@logStream")
        if not job_id or not stream:
            raise AwsApiError(f"Logs Insights row lacks job_id or @logStream: {row}", aws_code="BadResult")
        outcomes.append(JobOutcome(job_id, stream, *_counts(row)))
    return outcomes


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
    # Too little to tell (no failed job, one failed job, or one worker), or a worker that could not be
    # checked: notify only, blame no one.
    INCONCLUSIVE = "inconclusive"
    # The failing tasks share a zone, revision, TTS endpoint or start cohort: notify, name the group.
    GROUP = "group event"


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
    group: GroupEvent | None = None

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
            **(self.group.evidence() if self.group else {}),
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
    the query returns without a cap (``MAX_JOBS``): inconclusive, whatever ``jobs`` holds."""
    window = _Window(
        jobs=len(jobs),
        failed=sum(job.failed for job in jobs),
        workers=worker_job_stats(jobs),
        alpha=alpha,
        min_failed_jobs=min_failed_jobs,
    )
    if truncated:
        return window.judged(
            Verdict.INCONCLUSIVE,
            f"inconclusive: the window holds more jobs than {MAX_JOBS}-row queries return even split in time",
        )
    if window.failed == 0:
        return window.judged(
            Verdict.INCONCLUSIVE, "inconclusive: no job with responses but no first audio frame in the window"
        )
    if len(window.workers) < 2:
        return window.judged(
            Verdict.INCONCLUSIVE,
            "inconclusive: only one worker had jobs in the window: nothing to compare",
            window.top,
        )
    analysis_deadline = time.monotonic() + ANALYSIS_MAX_SECONDS
    if deadline is not None:
        analysis_deadline = min(analysis_deadline, deadline)
    return _test_top_worker(window, analysis_deadline)


@dataclass(frozen=True)
class _Window:
    """The jobs of one window, counted, and what a verdict on them is judged against."""

    jobs: int
    failed: int
    workers: list[WorkerJobStats]
    alpha: float
    min_failed_jobs: int

    @property
    def top(self) -> WorkerJobStats:
        return self.workers[0]

    @property
    def share(self) -> str:
        top = self.top
        return (
            f"{top.failed_jobs} of {self.failed} failed jobs on a worker that ran {top.jobs} of "
            f"{self.jobs} jobs"
        )

    def judged(
        self,
        verdict: Verdict,
        reason: str,
        top: WorkerJobStats | None = None,
        p: float | None = None,
        corrected: float | None = None,
        exact: bool = True,
    ) -> Concentration:
        return Concentration(
            verdict,
            reason,
            self.jobs,
            self.failed,
            len(self.workers),
            top,
            p,
            corrected,
            self.alpha,
            exact,
        )


def _test_top_worker(window: _Window, analysis_deadline: float) -> Concentration:
    top = window.top
    log_p = log_hypergeometric_tail(window.jobs, top.jobs, window.failed, top.failed_jobs)
    p = math.exp(log_p)
    try:
        log_family, exact = log_family_wise(
            [w.jobs for w in window.workers], window.failed, log_p + REACH_TOLERANCE, analysis_deadline
        )
    except AnalysisDeadline:
        return _bounded(window, p)
    corrected = math.exp(log_family)
    verdict, reason = _family_verdict(window, corrected)
    return window.judged(verdict, reason, top, p, corrected, exact)


def _bounded(window: _Window, p: float) -> Concentration:
    """Past the analysis deadline: the top worker's own p-value and the Bonferroni sum over the
    workers bracket the family-wise p-value; only a bracket below alpha is a concentration."""
    upper = min(1.0, len(window.workers) * p)
    enough = min(window.failed, window.top.failed_jobs) >= window.min_failed_jobs
    if enough and upper < window.alpha:
        bound = f"p <= {probability(upper)} < {window.alpha:g}; analysis deadline, bound"
        return window.judged(
            Verdict.CONCENTRATED, f"concentrated: {window.share} ({bound})", window.top, p, upper, exact=False
        )
    bracket = f"p between {probability(p)} and {probability(upper)}; analysis deadline"
    return window.judged(
        Verdict.INCONCLUSIVE, f"inconclusive: {window.share} ({bracket})", window.top, p, None, exact=False
    )


def _family_verdict(window: _Window, corrected: float) -> tuple[Verdict, str]:
    least, share, alpha = window.min_failed_jobs, window.share, window.alpha
    if window.failed < least:
        # One failure cannot tell one worker from chance, nor show that the fleet is failing.
        return Verdict.INCONCLUSIVE, f"inconclusive: {share}, fewer than {least} in all"
    if window.top.failed_jobs < least:
        return Verdict.FLEET_WIDE, f"fleet-wide: {share}, no worker with {least} or more"
    if corrected >= alpha:
        return Verdict.FLEET_WIDE, f"fleet-wide: {share} (p = {probability(corrected)} >= {alpha:g})"
    return Verdict.CONCENTRATED, f"concentrated: {share} (p = {probability(corrected)} < {alpha:g})"
