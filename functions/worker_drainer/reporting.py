"""What the drainer tells: candidates and actions in the report, the summary, EMF metrics, and the
notifications."""

from __future__ import annotations

from typing import Any

from fleet_remediation.contract import metrics as metric_definitions
from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.observability import emit
from fleet_remediation.core.report import Decision, Outcome, ReportBuilder
from worker_drainer.attribution import FleetAssessment
from worker_drainer.dependencies import DrainerDependencies
from worker_drainer.events import DrainerTrigger
from worker_drainer.ladder import LadderPlan, Snapshot, Step
from worker_drainer.tags import (
    state_of,
)


def record_unknown_suspect(
    parsed: DrainerTrigger, snapshot: Snapshot, service: str, report: ReportBuilder
) -> None:
    """A suspect worker that is not a running task of the service is reported, not silently dropped."""
    suspect = parsed.suspect
    if suspect is not None and suspect.task_id not in {t.task_id for t in snapshot.tasks}:
        report.candidate(
            suspect.task_id,
            Decision.SKIP,
            f"suspect worker is not a RUNNING task of service {service} (already stopped, or elsewhere)",
            log_stream=suspect.log_stream,
            p_value=suspect.p_value,
        )


def record_plan(snapshot: Snapshot, plan: LadderPlan, report: ReportBuilder) -> None:
    steps = {s.task_id: s for s in plan.steps}
    assessed = {w.task_id: w for w in snapshot.fleet.workers} if snapshot.fleet else {}
    for task in snapshot.tasks:
        step = steps.get(task.task_id)
        worker = assessed.get(task.task_id)
        facts: dict[str, Any] = {"state": state_of(task).value, "task_arn": task.arn}
        if worker is not None:
            facts |= {"pattern": worker.pattern.value, "rate_per_minute": round(worker.rate_per_minute, 3)}
            if worker.stats is not None:
                facts |= {"warnings": worker.stats.warnings, "max_delay": worker.stats.max_delay}
        if task.task_id in snapshot.active_jobs:
            facts["active_jobs"] = snapshot.active_jobs[task.task_id]
        if step is None:
            report.candidate(
                task.task_id, Decision.SKIP, worker.reason if worker else "no ladder step", **facts
            )
            continue
        if step.rooms:
            facts["rooms_to_reap"] = [d.room.name for d in step.rooms]
        acting = step.step not in (Step.WAIT, Step.SKIP)
        decision = report.planned() if acting else Decision.SKIP
        report.candidate(task.task_id, decision, f"{step.step.value}: {step.reason}", **facts)
    for step in plan.steps:
        if step.task_id not in {t.task_id for t in snapshot.tasks}:
            decision = report.planned() if step.step is Step.REVERT_CAPACITY else Decision.SKIP
            report.candidate(
                step.task_id, decision, f"{step.step.value}: {step.reason}", task_arn=step.task_arn
            )


def summarize(
    snapshot: Snapshot, plan: LadderPlan, report: ReportBuilder, deps: DrainerDependencies, livekit_calls: int
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
        "done": sum(a.outcome is Outcome.DONE for a in report.actions),
        "failed": sum(a.outcome is Outcome.FAILED for a in report.actions),
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
    for step in (Step.REAP, Step.CORDON, Step.STOP, Step.UNDO, Step.REVERT_CAPACITY):
        planned = sum(p.step is step for p in plan.steps)
        done = sum(a.action == step.value and a.outcome is Outcome.DONE for a in report.actions)
        emit(metric_definitions.DRAINER_STEP_PLANNED[step.value], planned)
        emit(metric_definitions.DRAINER_STEP_DONE[step.value], done)
    emit(
        metric_definitions.DRAINER_GUARDRAIL_REFUSALS,
        sum(s.reason.startswith("guardrail") for s in plan.steps),
    )


def notify_fleet_wide(fleet: FleetAssessment, report: ReportBuilder, deps: DrainerDependencies) -> None:
    settings = deps.settings
    subject = f"[{settings.environment_name}] worker drainer: fleet-wide slow inference, nothing drained"
    slow = [w for w in fleet.workers if w.pattern.elevated]
    lines = [
        subject,
        "",
        fleet.reason,
        "Every worker is slow: suspect shared causes (host contention, CPU credits, a provider outage).",
        "",
        *(f"  - {w.task_id}: {w.reason}" for w in slow),
        "",
        f"Runbook: {settings.runbook(FunctionName.WORKER_DRAINER)}",
    ]
    report.notifications.append(
        deps.notifier.publish(subject, "\n".join(lines), {"environment": settings.environment_name})
    )


def notify_actions(report: ReportBuilder, deps: DrainerDependencies) -> None:
    settings = deps.settings
    done = [a for a in report.actions if a.outcome is Outcome.DONE]
    failed = [a for a in report.actions if a.outcome is Outcome.FAILED]
    subject = (
        f"[{settings.environment_name}] worker drainer: {len(done)} action(s) done, {len(failed)} failed"
    )
    lines = [
        subject,
        "",
        f"Mode: {report.mode.value if report.mode else '?'}   Invocation: {report.invocation_id}",
    ]
    lines += [f"  - {a.action} {a.resource}: {a.outcome.value} ({a.reason})" for a in report.actions]
    lines += ["", f"Runbook: {settings.runbook(FunctionName.WORKER_DRAINER)}"]
    try:
        report.notifications.append(
            deps.notifier.publish(subject, "\n".join(lines), {"environment": settings.environment_name})
        )
    except RemediationError as exc:
        report.error(exc)
