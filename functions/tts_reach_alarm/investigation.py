"""The snapshot: the jobs of the alarm's window from Logs Insights, the failing ones' rooms, and
whether the failures concentrate on one worker."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import timedelta

from fleet_remediation.adapters.logs_insights import LogsInsights
from fleet_remediation.adapters.windowed_insights import ResultTruncatedError, run_in_pieces, summed
from fleet_remediation.contract.budgets import SUSPECT_EVENT_PUT, guarded_action_seconds
from fleet_remediation.contract.events import TimeWindow
from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.contract.signals import SignalCatalog
from fleet_remediation.domain.job_outcomes import JobOutcome, failing_jobs
from tts_reach_alarm.analysis import (
    JOB_COUNTS,
    MAX_JOBS,
    MAX_LISTED_JOBS,
    Concentration,
    assess_concentration,
    job_outcomes_query,
    job_rooms_query,
    parse_job_outcomes,
)
from tts_reach_alarm.per_task import per_task_concentration, unless_shared


@dataclass(frozen=True)
class Findings:
    jobs: list[JobOutcome]
    failing: list[JobOutcome]
    rooms: dict[str, dict[str, str]]
    concentration: Concentration
    # Even the window's smallest pieces held MAX_JOBS jobs (or needed more queries than allowed):
    # nothing was analysed, and nothing was decided.
    truncated: bool = False

    @property
    def reach(self) -> float | None:
        responses = sum(job.responses for job in self.jobs)
        return sum(job.first_frames for job in self.jobs) / responses if responses else None


def investigate(
    window: TimeWindow,
    settings: TtsReachSettings,
    insights: LogsInsights,
    deadline: float,
    alpha: float | None = None,
) -> Findings:
    """``alpha``: the test's level (default the configured ``concentration_alpha``; a re-check
    spends less, see ``recheck_alpha``)."""
    catalog = settings.detection.catalog()
    query_deadline = min(deadline, time.monotonic() + settings.tts_reach.query_timeout_seconds)
    jobs, truncated = _window_jobs(settings, insights, catalog, window, query_deadline)
    failing = failing_jobs(jobs)
    rooms: dict[str, dict[str, str]] = {}
    if failing:
        listed = [job.job_id for job in failing[:MAX_LISTED_JOBS]]
        # A job's "received job request" line may predate the window by up to a lesson's length.
        lookback = window.start - timedelta(hours=3)
        query_deadline = min(deadline, time.monotonic() + settings.tts_reach.query_timeout_seconds)
        found = insights.run_query(
            settings.agent_log_group, job_rooms_query(listed), lookback, window.end, query_deadline
        )
        rooms = {row["job_id"]: row for row in found.rows if row.get("job_id")}
    alarm = settings.detection.tts_reach_alarm
    if truncated:
        # Too many jobs for the per-job read (about 68,000 at 1,000 tasks): one row per task instead,
        # judged by the drainer's own verdict, so the page at scale still names a task or the group.
        rows_deadline = min(deadline, time.monotonic() + settings.tts_reach.query_timeout_seconds)
        concentration = per_task_concentration(settings, insights, window, rows_deadline)
        return Findings(jobs, failing, rooms, concentration, truncated)
    concentration = assess_concentration(
        jobs,
        alpha=alarm.concentration_alpha if alpha is None else alpha,
        min_failed_jobs=alarm.min_failed_jobs,
        # What a concentrated worker still needs afterwards: its suspect-worker event.
        deadline=deadline - guarded_action_seconds(SUSPECT_EVENT_PUT),
        truncated=truncated,
    )
    return Findings(jobs, failing, rooms, unless_shared(concentration, jobs, settings), truncated)


def _window_jobs(
    settings: TtsReachSettings,
    insights: LogsInsights,
    catalog: SignalCatalog,
    window: TimeWindow,
    deadline: float,
) -> tuple[list[JobOutcome], bool]:
    """Every job of the window, from as many time pieces as keep each result under ``MAX_JOBS``
    (a job's counts split over pieces add up); ``([], True)`` when no split gets under it."""
    try:
        pieces = run_in_pieces(
            insights,
            settings.agent_log_group,
            job_outcomes_query(catalog),
            (window.start, window.end),
            deadline,
            limit=MAX_JOBS,
        )
    except ResultTruncatedError:
        return [], True
    return parse_job_outcomes(summed(pieces, ("job_id", "@logStream"), JOB_COUNTS)), False


def recheck_alpha(alpha: float, look: int) -> float:
    """The level of the ``look``-th re-check (1, 2, ...) of one incident: ``alpha`` x 6 / (pi^2 x
    look^2). Every re-check is another test of the same incident; these levels sum to ``alpha`` over
    any number of looks, so all the re-checks together name a worker by chance with probability at
    most ``alpha``, as the ALARM's own analysis alone does (0.05: 0.030, 0.0076, 0.0034, ...)."""
    return alpha * 6 / (math.pi**2 * look**2)


def recheck_due(minutes_open: float, every: int, max_every: int) -> bool:
    """Whether the re-check tick ``minutes_open`` after the ALARM looks: the looks fall at ``every``
    and ``2 * every`` minutes, then each gap twice the last up to ``max_every`` (2, 4, 8, 16, 32, 64,
    96, ... for 2 and 32), and a tick looks when a look falls since the tick before it. A page that
    stays in ALARM with the same verdict costs a few looks an hour instead of one every tick."""
    if max_every <= every:
        return True
    point, gap = float(every), float(every)
    while point <= minutes_open - every:
        point += gap
        gap = min(gap * 2, max_every)
    return point <= minutes_open
