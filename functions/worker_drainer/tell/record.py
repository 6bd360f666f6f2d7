"""What the drainer records: each task's decision in the report, the summary, and EMF metrics.
(What it tells people: ``message_lines`` and ``message``; when and how: ``delivery``.)"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fleet_remediation.contract import metrics as metric_definitions
from fleet_remediation.contract.drainer_steps import STEP_TABLE, Step
from fleet_remediation.core.observability import emit
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import ActionRecord, Decision, Outcome
from worker_drainer.adapters.ecs_model import EcsTask
from worker_drainer.decide.attribution import WorkerAssessment
from worker_drainer.decide.plan_model import LadderPlan, PlannedStep, Snapshot
from worker_drainer.dependencies import DrainerDependencies


def record_plan(
    snapshot: Snapshot, plan: LadderPlan, report: ReportBuilder, held: frozenset[PlannedStep] = frozenset()
) -> None:
    """Each task's decision; ``held``: the planned steps a hold kept back."""
    steps: dict[str, PlannedStep] = {}
    for planned in plan.steps:  # a task's ladder step comes before its capacity step
        steps.setdefault(planned.task_id, planned)
    assessed = {w.task_id: w for w in snapshot.fleet.workers} if snapshot.fleet else {}
    for task in snapshot.tasks:
        worker = assessed.get(task.task_id)
        facts = _facts(task, worker, snapshot)
        step = steps.get(task.task_id)
        if step is None:
            report.candidate(
                task.task_id, Decision.SKIP, worker.reason if worker else "no ladder step", **facts
            )
            continue
        if step.rooms:
            facts["rooms_to_reap"] = [d.room.name for d in step.rooms]
        decision = report.planned(step in held) if step.acting else Decision.SKIP
        report.candidate(task.task_id, decision, f"{step.step.value}: {step.reason}", **facts)
    for step in plan.steps:
        if step.task_id not in snapshot.marks:
            decision = report.planned(step in held) if step.acting else Decision.SKIP
            report.candidate(
                step.task_id, decision, f"{step.step.value}: {step.reason}", task_arn=step.task_arn
            )


def _facts(task: EcsTask, worker: WorkerAssessment | None, snapshot: Snapshot) -> dict[str, Any]:
    """What the report says of a task: its marks, its pattern in the window, its jobs."""
    marks = snapshot.marks[task.task_id]
    facts: dict[str, Any] = {"state": marks.state.value, "task_arn": task.arn}
    if marks.marked:
        facts["cause"] = marks.cause.value
    if task.task_id in snapshot.tts_evidence:
        evidence = snapshot.tts_evidence[task.task_id]
        facts["tts_jobs_since_mark"] = None if evidence is None else [evidence.jobs, evidence.failed]
    if worker is not None:
        facts |= {"pattern": worker.pattern.value, "rate_per_minute": round(worker.rate_per_minute, 3)}
        if worker.stats is not None:
            facts |= {"warnings": worker.stats.warnings, "max_delay": worker.stats.max_delay}
    if task.task_id in snapshot.active_jobs:
        facts["active_jobs"] = snapshot.active_jobs[task.task_id]
    return facts


def summarize(
    snapshot: Snapshot,
    plan: LadderPlan,
    actions: Sequence[ActionRecord],
    deps: DrainerDependencies,
    livekit_calls: int,
) -> dict[str, Any]:
    fleet = snapshot.fleet
    return {
        "tasks_running": len(snapshot.tasks),
        "draining_after_plan": plan.draining,
        "healthy_after_plan": plan.healthy_running,
        "fleet_wide": bool(fleet and fleet.fleet_wide),
        "fleet": fleet.reason if fleet else "not assessed (no ladder in progress, no alarm)",
        "unattributed_log_streams": list(fleet.unattributed_streams) if fleet else [],
        "steps": {
            s.value: sum(p.step is s for p in plan.steps)
            for s in Step
            if any(p.step is s for p in plan.steps)
        },
        "desired_count": snapshot.desired_count,
        "done": sum(a.outcome is Outcome.DONE for a in actions),
        "failed": sum(a.outcome is Outcome.FAILED for a in actions),
        "unknown": sum(a.outcome is Outcome.UNKNOWN for a in actions),
        "calls": {
            "ecs": deps.ecs.calls,
            "dynamodb": deps.ledger.calls,
            "logs_insights_queries": deps.worker_logs.calls,
            "worker_http": deps.worker_probe.calls,
            "livekit": livekit_calls,
        },
    }


def record_metrics(plan: LadderPlan, report: ReportBuilder) -> None:
    emit(metric_definitions.DRAINER_TASKS_DRAINING, plan.draining)
    for row in STEP_TABLE:
        step = row.step
        planned = sum(p.step is step for p in plan.steps)
        done = sum(a.action == step.value and a.outcome is Outcome.DONE for a in report.actions)
        emit(metric_definitions.DRAINER_STEP_PLANNED[step.value], planned)
        emit(metric_definitions.DRAINER_STEP_DONE[step.value], done)
    emit(
        metric_definitions.DRAINER_GUARDRAIL_REFUSALS,
        sum(s.reason.startswith("guardrail") for s in plan.steps),
    )
