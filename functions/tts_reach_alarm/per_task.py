"""The responder at scale: when the alarm's window holds more jobs than the per-job read can take,
it reads one row per task over the drainer's per-task window and judges them with the one verdict
every path shares (``fleet_remediation.domain.task_reach``): a task failing on its own is the
suspect; a failure shared by the fleet or by a group (here the TTS endpoint the agents' lines name;
the drainer adds ECS's zones, revisions and start times when it re-checks) names nobody."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from datetime import timedelta

from fleet_remediation.adapters.logs_insights import LogsInsights
from fleet_remediation.adapters.task_reach_rows import read_task_reach
from fleet_remediation.contract.events import TimeWindow
from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.domain.job_outcomes import JobOutcome
from fleet_remediation.domain.task_reach import TaskReach, assess_task_reach
from tts_reach_alarm.analysis import Concentration, Verdict, WorkerJobStats


def per_task_concentration(
    settings: TtsReachSettings, insights: LogsInsights, window: TimeWindow, deadline: float
) -> Concentration:
    reach = settings.task_reach
    span = (window.end - timedelta(minutes=reach.window_minutes), window.end)
    rows = read_task_reach(insights, settings.agent_log_group, settings.detection.catalog(), span, deadline)
    found = assess_task_reach(rows, reach, len(rows))
    responses, missing = sum(r.responses for r in rows), sum(r.missing for r in rows)
    if found.shared or not found.suspects:
        verdict = Verdict.FLEET_WIDE if found.shared or missing else Verdict.INCONCLUSIVE
        return Concentration(
            verdict,
            f"{verdict.value} (per task): {found.reason}",
            responses,
            missing,
            len(rows),
            None,
            None,
            None,
            reach.false_cordons_per_day,
        )
    top = found.suspects[0]
    return Concentration(
        Verdict.CONCENTRATED,
        f"concentrated (per task): {top.timeouts} of {top.responses} responses of one task without a first "
        f"frame (p = {top.p_value:.2g} <= {found.level:.2g}); {found.reason}",
        responses,
        missing,
        len(rows),
        WorkerJobStats(top.log_stream, top.responses, top.timeouts),
        top.p_value,
        top.p_value,
        found.level,
    )


def tasks_of(jobs: Sequence[JobOutcome]) -> list[TaskReach]:
    """The per-job read summed per log stream: the rows the shared verdict reads."""
    sums: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for job in jobs:
        counts = sums[job.log_stream]
        for index, value in enumerate((job.responses, job.first_frames, job.timeouts, job.late_frames)):
            counts[index] += value
    return [TaskReach(stream, r, f, t, late) for stream, (r, f, t, late) in sums.items()]


def unless_shared(
    concentration: Concentration, jobs: Sequence[JobOutcome], settings: TtsReachSettings
) -> Concentration:
    """The per-job test names the worker whose jobs fail most; when the verdict every path shares,
    over the same jobs summed per task, calls the failure the fleet's (or a group's), nobody is
    named, as the drainer would decide on the same evidence."""
    if not concentration.concentrated:
        return concentration
    rows = tasks_of(jobs)
    found = assess_task_reach(rows, settings.task_reach, len(rows))
    if not found.shared:
        return concentration
    return dataclasses.replace(
        concentration,
        verdict=Verdict.FLEET_WIDE,
        reason=f"fleet-wide (per task): {found.reason}; per job, {concentration.reason}",
    )
