"""The snapshot: the jobs of the alarm's window from Logs Insights, the failing ones' rooms, what
ECS says of their tasks, and whether the failures concentrate on one worker."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from fleet_remediation.adapters.logs_insights import LogsInsights, QueryResult
from fleet_remediation.adapters.task_reach_rows import latest_endpoints, read_task_reach
from fleet_remediation.adapters.windowed_insights import ResultTruncatedError, run_in_pieces, summed
from fleet_remediation.contract.budgets import (
    RESPONDER_TASK_FACTS_SECONDS,
    SUSPECT_EVENT_PUT,
    guarded_action_seconds,
)
from fleet_remediation.contract.events import TimeWindow
from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.contract.signals import SignalCatalog
from fleet_remediation.core.errors import DeadlineExceededError
from fleet_remediation.domain.job_outcomes import JobOutcome, failing_jobs
from fleet_remediation.domain.task_reach import TaskReach
from tts_reach_alarm.adapters.task_facts import FactsRead, TaskFactsReader
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
from tts_reach_alarm.per_task import per_task_concentration, tasks_of, unless_shared


@dataclass(frozen=True)
class Findings:
    jobs: list[JobOutcome]
    failing: list[JobOutcome]
    rooms: dict[str, dict[str, str]]
    concentration: Concentration
    # Even the window's smallest pieces held MAX_JOBS jobs (or needed more queries than allowed):
    # nothing was analysed, and nothing was decided.
    truncated: bool = False
    # What ECS said of the rows' tasks (None: not asked: no task failed on its timeouts, or no ECS).
    facts: FactsRead | None = None

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
    ecs: TaskFactsReader | None = None,
) -> Findings:
    """``alpha``: the test's level (default the configured ``concentration_alpha``; a re-check
    spends less, see ``recheck_alpha``). ``ecs``: where the tasks' zones, revisions and starts are
    read (None: no ECS to ask, as in the offline backtest)."""
    catalog = settings.detection.catalog()
    query_deadline = min(deadline, time.monotonic() + settings.tts_reach.query_timeout_seconds)
    jobs, endpoints, truncated = _window_jobs(settings, insights, catalog, window, query_deadline)
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
    alarm, reach = settings.detection.tts_reach_alarm, settings.task_reach
    # What a concentrated worker still needs afterwards: its suspect-worker event.
    decide_by = deadline - guarded_action_seconds(SUSPECT_EVENT_PUT)
    if truncated:
        # Too many jobs for the per-job read (about 68,000 at 1,000 tasks): one row per task instead,
        # over the drainer's window, judged by the drainer's own verdict: the page at scale still names
        # a task or the group.
        rows_deadline = min(deadline, time.monotonic() + settings.tts_reach.query_timeout_seconds)
        span = (window.end - timedelta(minutes=reach.window_minutes), window.end)
        rows = read_task_reach(insights, settings.agent_log_group, catalog, span, rows_deadline)
        facts = _facts_of(rows, ecs, decide_by)
        concentration = per_task_concentration(rows, reach, facts, window.end)
        return Findings(jobs, failing, rooms, concentration, truncated, facts)
    concentration = assess_concentration(
        jobs,
        alpha=alarm.concentration_alpha if alpha is None else alpha,
        min_failed_jobs=alarm.min_failed_jobs,
        deadline=decide_by,
        truncated=truncated,
    )
    rows = tasks_of(jobs, endpoints)
    facts = _facts_of(rows, ecs, decide_by)
    return Findings(
        jobs, failing, rooms, unless_shared(concentration, rows, reach, facts, window.end), truncated, facts
    )


def _facts_of(rows: list[TaskReach], ecs: TaskFactsReader | None, deadline: float) -> FactsRead | None:
    """ECS's facts of the rows' tasks, when they can change the verdict: only a task with a missing
    first frame can fail, be a suspect or be in warm-up."""
    if ecs is None or not any(row.missing for row in rows):
        return None
    facts_deadline = min(deadline, time.monotonic() + RESPONDER_TASK_FACTS_SECONDS)
    return ecs.read([row.log_stream for row in rows], facts_deadline)


def _window_jobs(
    settings: TtsReachSettings,
    insights: LogsInsights,
    catalog: SignalCatalog,
    window: TimeWindow,
    deadline: float,
) -> tuple[list[JobOutcome], dict[str, str], bool]:
    """Every job of the window, from as many time pieces as keep each result under ``MAX_JOBS``
    (a job's counts split over pieces add up), and each stream's TTS endpoint; ``([], {}, True)``
    when no split gets under it."""
    splitting = _Splitting(insights)
    try:
        pieces = run_in_pieces(
            splitting,
            settings.agent_log_group,
            job_outcomes_query(catalog),
            (window.start, window.end),
            deadline,
            limit=MAX_JOBS,
        )
    except ResultTruncatedError:
        return [], {}, True
    except DeadlineExceededError:
        # Halving a window that holds more jobs than a query returns may take more queries (each
        # queued and run) than the read's deadline holds: refused like a smallest piece at the limit.
        if not splitting.at_limit:
            raise
        return [], {}, True
    jobs = parse_job_outcomes(summed(pieces, ("job_id", "@logStream"), JOB_COUNTS))
    return jobs, latest_endpoints(pieces), False


@dataclass
class _Splitting:
    """The per-job read's Logs Insights, noting whether a result came back at the row limit."""

    inner: LogsInsights
    at_limit: bool = False

    def run_query(
        self, log_group: str, query: str, start: datetime, end: datetime, deadline: float
    ) -> QueryResult:
        found = self.inner.run_query(log_group, query, start, end, deadline)
        self.at_limit = self.at_limit or len(found.rows) >= MAX_JOBS
        return found


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
