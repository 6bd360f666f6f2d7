"""Steps a killed run began and never recorded (``adapters/intents.py``): the next run re-reads each
task, records the outcome it reads back (``done`` when the step shows, ``unknown`` when it cannot
tell) and tells it, with its action event, in its own report. Only the run whose conditional delete
of the open intent wins tells it; a step whose own run had recorded its outcome is closed silently.
"""

from __future__ import annotations

from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Outcome
from worker_drainer.adapters.ecs_tasks import EcsTaskService
from worker_drainer.adapters.journal_model import INTENDED, OpenIntent
from worker_drainer.adapters.ledger import Ledger
from worker_drainer.decide.plan_model import Step
from worker_drainer.decide.task_tags import State, TaskMarks


def settle_interrupted(
    found: list[OpenIntent], ecs: EcsTaskService, ledger: Ledger, report: ReportBuilder
) -> None:
    for intent in found:
        try:
            _settle(intent, ecs, ledger, report)
        except RemediationError as exc:
            report.error(exc)  # the open intent stays: the next run tries again


def _settle(intent: OpenIntent, ecs: EcsTaskService, ledger: Ledger, report: ReportBuilder) -> None:
    recorded = ledger.recorded_outcome(intent)
    if recorded is not None and recorded != INTENDED:
        ledger.close_intent(intent.task_id, intent.key)  # its own run recorded it and told it
        return
    outcome, reason = read_back(intent, ecs)
    ledger.audit(intent.task_id, intent.key, {**intent.entry, "outcome": outcome.value, "reason": reason})
    if ledger.close_intent(intent.task_id, intent.key):
        report.action(intent.task_id, intent.action, outcome, reason)


def read_back(intent: OpenIntent, ecs: EcsTaskService) -> tuple[Outcome, str]:
    """What the task shows now of the step ``intent`` began."""
    task = ecs.describe_task(intent.task_arn)
    begun = f"begun by run {intent.key.invocation}, which ended before recording it; read back:"
    if intent.action == Step.STOP.value:
        if task is None or task.desired_status != "RUNNING":
            return Outcome.DONE, f"{begun} the task is stopped"
        return Outcome.UNKNOWN, f"{begun} the task still runs"
    if intent.action == Step.CORDON.value:
        marks = TaskMarks.read(task.tags) if task is not None else None
        if marks is not None and marks.state is State.DRAINING:
            progress = "complete" if marks.cordon_complete else "started: the next steps finish it"
            return Outcome.DONE, f"{begun} cordoned (the task is marked draining; cordon {progress})"
        return Outcome.UNKNOWN, f"{begun} the task is not marked draining"
    return Outcome.UNKNOWN, f"{begun} the next tick re-reads the task"
