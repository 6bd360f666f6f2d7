"""The responder's per-task verdict: the one verdict every path shares
(``fleet_remediation.domain.task_reach``), over one row per task (the per-task read at scale, or
the per-job read summed per task) with the TTS endpoint its lines name and what ECS says of its
tasks (zone, revision, start). A failure the fleet or a group shares names nobody; a worker the
per-job test names stays named only when the per-task test, holding its evidence, does not clear
it, and only when every task's ECS facts were read (an unknown fact could hide a group)."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime

from fleet_remediation.contract.task_reach import TaskReachSettings
from fleet_remediation.domain.job_outcomes import JobOutcome
from fleet_remediation.domain.task_reach import TaskReach, TaskReachAssessment, among, assess_task_reach
from tts_reach_alarm.adapters.task_facts import FactsRead
from tts_reach_alarm.analysis import NOT_NAMED, Concentration, Verdict, WorkerJobStats


def shared_verdict(
    rows: Sequence[TaskReach], settings: TaskReachSettings, facts: FactsRead | None, now: datetime
) -> TaskReachAssessment:
    """The drainer's verdict on these rows: with ECS's facts, only running tasks (or tasks whose
    facts are unknown) can be suspects; ``facts`` None: no ECS to ask (the offline backtest)."""
    if facts is None:
        return assess_task_reach(rows, settings, len(rows), now=now)
    tasks = len(facts.running) + len(facts.unknown)
    found = assess_task_reach(rows, settings, tasks, facts.running, now)
    return among(found, {f.log_stream for f in facts.running} | set(facts.unknown))


def per_task_concentration(
    rows: Sequence[TaskReach], settings: TaskReachSettings, facts: FactsRead | None, now: datetime
) -> Concentration:
    """The per-task read's own verdict (the per-job read was refused)."""
    found = shared_verdict(rows, settings, facts, now)
    responses, missing = sum(r.responses for r in rows), sum(r.missing for r in rows)
    judged = _Judged(found, responses, missing, len(rows), settings.false_cordons_per_day)
    if found.group is not None:
        return judged.group()
    if found.shared or not found.suspects:
        verdict = Verdict.FLEET_WIDE if found.shared or missing else Verdict.INCONCLUSIVE
        return judged.notify(verdict, f"{verdict.value} (per task): {found.reason}")
    top = found.suspects[0]
    if facts is not None and not facts.complete:
        return judged.notify(Verdict.INCONCLUSIVE, unchecked(facts, f"per task, {found.reason}"))
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


@dataclasses.dataclass(frozen=True)
class _Judged:
    """The per-task rows' totals, for a verdict that names no task."""

    found: TaskReachAssessment
    responses: int
    missing: int
    workers: int
    alpha: float

    def notify(self, verdict: Verdict, reason: str) -> Concentration:
        return Concentration(
            verdict, reason, self.responses, self.missing, self.workers, None, None, None, self.alpha
        )

    def group(self) -> Concentration:
        group = self.found.group
        assert group is not None
        return dataclasses.replace(self.notify(Verdict.GROUP, f"per task, {group.describe()}"), group=group)


def unchecked(facts: FactsRead, verdict: str) -> str:
    """Why a task that looks concentrated is not named: a fact that could hide a group is unknown."""
    return (
        f"{NOT_NAMED}{facts.describe()}, so a group by zone, revision or start could not be ruled out "
        f"({verdict}); the drainer's tick judges with its own reads"
    )


def tasks_of(jobs: Sequence[JobOutcome], endpoints: Mapping[str, str] | None = None) -> list[TaskReach]:
    """The per-job read summed per log stream, with each stream's TTS endpoint: the rows the
    shared verdict reads."""
    sums: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for job in jobs:
        counts = sums[job.log_stream]
        for index, value in enumerate((job.responses, job.first_frames, job.timeouts, job.late_frames)):
            counts[index] += value
    named = endpoints or {}
    return [
        TaskReach(stream, r, f, t, late, named.get(stream, "")) for stream, (r, f, t, late) in sums.items()
    ]


def unless_shared(
    concentration: Concentration,
    rows: Sequence[TaskReach],
    settings: TaskReachSettings,
    facts: FactsRead | None,
    now: datetime,
) -> Concentration:
    """The per-job test's verdict, judged again by the verdict every path shares over the same jobs
    summed per task (``rows``): a failure the fleet or a group shares names nobody; the worker the
    per-job test names is cleared when the per-task test holds its evidence and does not suspect it
    (too small a share, warm-up, no longer running), and withheld when any ECS fact is unknown."""
    found = shared_verdict(rows, settings, facts, now)
    also = f"per job, {concentration.reason}"
    if found.group is not None:
        reason = f"per task, {found.group.describe()}; {also}"
        return _named_nobody(concentration, Verdict.GROUP, reason, found)
    if found.fleet_wide:
        return _named_nobody(
            concentration, Verdict.FLEET_WIDE, f"fleet-wide (per task): {found.reason}; {also}"
        )
    if not concentration.concentrated or concentration.top is None:
        return concentration
    top = concentration.top.log_stream
    tested = next((v for v in found.tested if v.log_stream == top), None)
    if tested is not None and not tested.suspect:
        cleared = (
            f"{NOT_NAMED}per task, {tested.timeouts} of {tested.responses} responses without a first frame "
            f"(p = {tested.p_value:.2g}) do not make it a suspect ({found.reason}); {also}"
        )
        return _named_nobody(concentration, Verdict.INCONCLUSIVE, cleared)
    if facts is not None and top not in {f.log_stream for f in facts.running} | set(facts.unknown):
        return _named_nobody(
            concentration, Verdict.INCONCLUSIVE, f"{NOT_NAMED}its task is no longer running; {also}"
        )
    if facts is not None and not facts.complete:
        return _named_nobody(concentration, Verdict.INCONCLUSIVE, unchecked(facts, also))
    return concentration


def _named_nobody(
    concentration: Concentration, verdict: Verdict, reason: str, found: TaskReachAssessment | None = None
) -> Concentration:
    group = found.group if found is not None else None
    return dataclasses.replace(concentration, verdict=verdict, reason=reason, top=None, group=group)
