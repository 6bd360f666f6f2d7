"""Applies a ladder plan: one service-wide lease, then for each step a re-check of the kill switch
and of the task right before acting, the action, and a journal: the step's intent is logged and
written to the ledger before it runs (its audit item and an open intent), its outcome after (the
same audit item; the open intent deleted). An invocation killed mid-step leaves an open intent: the
next run, under the lease, re-reads its task, records the outcome and tells it (``interrupted_steps``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from fleet_remediation.adapters.livekit_rooms import RoomService
from fleet_remediation.contract.budgets import DRAINER_STEP_BUDGET_SECONDS
from fleet_remediation.contract.policies import DrainerPolicy, ReaperPolicy
from fleet_remediation.contract.sections import TaskActionScope
from fleet_remediation.core.errors import ConcurrentActionError, DeadlineExceededError, RemediationError
from fleet_remediation.core.kill_switch import ModeSwitch
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Mode, Outcome
from fleet_remediation.domain.reap_executor import ReapExecutor
from worker_drainer.act.capacity_keeper import CapacityKeeper
from worker_drainer.act.cordon_saga import CordonSaga
from worker_drainer.act.interrupted_steps import settle_interrupted
from worker_drainer.act.step_outcomes import StepResult, failed
from worker_drainer.act.task_scope_check import TASK_STEPS, task_scope_refusal
from worker_drainer.adapters.ecs_model import EcsTask
from worker_drainer.adapters.ecs_tasks import EcsTaskService
from worker_drainer.adapters.ledger import AuditKey, Lease, Ledger, OpenIntent
from worker_drainer.adapters.tags_as_written import TagsAsWritten, tags_as_written
from worker_drainer.decide.capacity_settlement import Move
from worker_drainer.decide.plan_model import LadderPlan, PlannedStep, Step
from worker_drainer.decide.task_tags import Cause, CordonProgress, State, TaskMarks, reaped_tags

LEASE_POLL_SECONDS = 0.2


@dataclass
class DrainerExecutor:
    ecs: EcsTaskService
    ledger: Ledger
    mode_switch: ModeSwitch
    room_service_factory: Callable[[], RoomService]
    policy: DrainerPolicy
    reaper_policy: ReaperPolicy
    cluster: str
    service: str
    # How the IAM policy scopes task changes (task_scope.py checks the service can meet it).
    task_scope: TaskActionScope
    invocation_id: str
    # The run's incident: recorded on a task whose ladder this run starts (see ``task_tags.INCIDENT_TAG``).
    incident_id: str
    clock: Callable[[], datetime]
    deadline: float
    livekit_request_timeout_seconds: float
    livekit_calls: int = 0
    keeper: CapacityKeeper = field(init=False)
    saga: CordonSaga = field(init=False)
    written: TagsAsWritten = field(init=False)

    def __post_init__(self) -> None:
        # Every re-check reads tasks with the drainer's own recent tag writes (ECS lags them).
        self.written = tags_as_written(self.ecs, self.ledger, self.clock)
        self.ecs = self.written
        self.keeper = CapacityKeeper(self.ecs, self.ledger, self.clock)
        self.saga = CordonSaga(self.ecs, self.keeper, self.policy, self.reaper_policy, self.clock)

    def run(self, plan: LadderPlan, report: ReportBuilder) -> None:
        acting = plan.acting()
        if not acting and not self._interrupted(report):
            return
        refusal = self._task_scope_refusal(acting, report)
        lease = self._acquire_lease()
        try:
            self.written.refresh()  # what the lease's earlier holders wrote, ECS may not show yet
            # Read again under the lease: a run that held it may have closed its own meanwhile.
            settle_interrupted(self._interrupted(report), self.ecs, self.ledger, report)
            for number, step in enumerate(acting):
                self._run_step(number, step, report, refusal if step.step in TASK_STEPS else None)
        finally:
            self.ledger.release(lease)

    def _interrupted(self, report: ReportBuilder) -> list[OpenIntent]:
        try:
            return self.ledger.open_intents()
        except RemediationError as exc:
            report.error(exc)
            return []

    def _task_scope_refusal(
        self, acting: Sequence[PlannedStep], report: ReportBuilder
    ) -> RemediationError | None:
        """Read once, before the first task step; reported once, each refused step points to it."""
        if not any(step.step in TASK_STEPS for step in acting):
            return None
        if time.monotonic() + DRAINER_STEP_BUDGET_SECONDS > self.deadline:
            return None  # too late for any step: the deadline gate refuses each, no call spent here
        refusal = task_scope_refusal(self.ecs, self.task_scope, self.cluster, self.service)
        if refusal is not None:
            report.error(refusal)
        return refusal

    def _acquire_lease(self) -> Lease:
        wait_until = min(
            self.deadline - DRAINER_STEP_BUDGET_SECONDS, time.monotonic() + self.policy.lease_wait_seconds
        )
        while True:
            try:
                return self.ledger.acquire(
                    f"service#{self.service}", self.invocation_id, self.clock(), self.policy.lease_seconds
                )
            except ConcurrentActionError:
                if time.monotonic() + LEASE_POLL_SECONDS > wait_until:
                    raise
                time.sleep(LEASE_POLL_SECONDS)

    def _gate(self, step: PlannedStep) -> StepResult | None:
        """Why this step must not start now (no time left, the switch moved), else None."""
        if time.monotonic() + DRAINER_STEP_BUDGET_SECONDS > self.deadline:
            error = DeadlineExceededError("not enough time left for this step", resource=step.task_id)
            return StepResult(Outcome.SKIPPED, error.message, error)
        mode = self.mode_switch.read()
        if mode is not Mode.ENFORCE:
            return StepResult(Outcome.SKIPPED, f"kill switch is now {mode.value}")
        self.written.recent_writes()  # read now if not yet: whether they could be read decides
        unread = self.written.unread
        if unread is not None:
            # ECS may still show tags older than the drainer's own last writes: do not act on them.
            return StepResult(Outcome.SKIPPED, f"own recent tag writes unreadable: {unread.message}", unread)
        return None

    def _run_step(
        self, number: int, step: PlannedStep, report: ReportBuilder, refused: RemediationError | None
    ) -> None:
        key = AuditKey(self.invocation_id, self.clock(), number)
        try:
            gate = self._gate(step)
        except RemediationError as exc:  # the switch could not be read: fail safe, do nothing
            gate = StepResult(Outcome.SKIPPED, f"kill switch unreadable: {exc.message}", exc)
        if gate is None and refused is not None:
            gate = StepResult(Outcome.SKIPPED, f"task changes refused ({refused.code})", refused)
        if gate is not None:
            report.action(step.task_id, step.step.value, gate.outcome, gate.reason, gate.error)
            self._audit_or_report(report, step, key, gate)
            return
        intent = report.intend(step.task_id, step.step.value, step.reason)
        try:
            self.ledger.open_intent(step.task_id, key, self._audit(step, key, None))
        except RemediationError as exc:
            # No intent on record, no action: the audit trail never misses a change.
            report.resolve(intent, Outcome.SKIPPED, f"intent not recorded: {exc.message}", exc)
            return
        try:
            result = self._apply(step)
        except RemediationError as exc:
            result = failed(exc)
        report.resolve(intent, result.outcome, result.reason, result.error)
        self._audit_or_report(report, step, key, result)
        try:
            self.written.record(key)
        except RemediationError as exc:
            report.error(exc)  # the next runs read ECS's tags alone, lagging or not
        try:
            self.ledger.close_intent(step.task_id, key)
        except RemediationError as exc:
            report.error(exc)  # the next run finds the outcome recorded and closes it silently

    def _audit_or_report(
        self, report: ReportBuilder, step: PlannedStep, key: AuditKey, result: StepResult
    ) -> None:
        try:
            self._audit(step, key, result)
        except RemediationError as exc:
            report.error(exc)

    def _audit(self, step: PlannedStep, key: AuditKey, result: StepResult | None) -> dict[str, str]:
        """The intent (``result`` None) and then the outcome, on one ledger item."""
        entry = {
            "action": step.step.value,
            "planned_because": step.reason,
            "task_arn": step.task_arn,
            "outcome": result.outcome.value if result else "intended",
            "incident": self.incident_id,
        }
        if result is not None:
            entry["reason"] = result.reason
        if step.cause is not None:
            entry["cause"] = step.cause.value
        self.ledger.audit(step.task_id, key, entry)
        return entry

    def _apply(self, step: PlannedStep) -> StepResult:
        if step.step in (Step.REVERT_CAPACITY, Step.SETTLE_CAPACITY):
            return self._settle(step)
        current = self.ecs.describe_task(step.task_arn)
        if current is None or not current.running:
            if step.step is Step.STOP:
                return StepResult(Outcome.ALREADY_DONE, "task already stopped")
            return StepResult(Outcome.SKIPPED, "task is no longer RUNNING")
        marks = TaskMarks.read(current.tags)  # read again: the step acts on what it sees now
        if marks.excluded:
            return StepResult(Outcome.SKIPPED, "re-check: the task is now excluded from the drainer")
        changed = self._changed(step, marks)
        if changed is not None:
            return changed
        match step.step:
            case Step.REAP:
                return self._reap(current, step, self._incident(marks))
            case Step.CORDON:
                return self.saga.cordon(current, step, self._incident(marks))
            case Step.COMPLETE_CORDON:
                return self.saga.complete(current)
            case Step.STOP:
                return self.saga.stop(current, step)
            case Step.UNDO:
                return self.saga.undo(current, by_operator=step.cause is Cause.MANUAL)
        raise AssertionError(f"not an acting step: {step.step}")

    def _incident(self, marks: TaskMarks) -> str:
        """A ladder in progress keeps the incident that started it."""
        return marks.incident or self.incident_id

    @staticmethod
    def _changed(step: PlannedStep, marks: TaskMarks) -> StepResult | None:
        """Act only if the task is still in the state the decision saw."""
        state = marks.state
        if state is not step.seen_state:
            done = (step.step is Step.CORDON and state is State.DRAINING) or (
                step.step is Step.UNDO and state is State.HEALTHY
            )
            outcome = Outcome.ALREADY_DONE if done else Outcome.SKIPPED
            return StepResult(outcome, f"task state changed from {step.seen_state.value} to {state.value}")
        if step.step is Step.COMPLETE_CORDON and marks.cordon_complete:
            return StepResult(Outcome.ALREADY_DONE, f"cordon already {CordonProgress.COMPLETE.value}")
        return None

    def _settle(self, step: PlannedStep) -> StepResult:
        current = self.ecs.describe_task(step.task_arn)
        marks = TaskMarks.read(current.tags) if current is not None and current.running else None
        holds = marks is not None and marks.state is State.DRAINING and marks.raised_capacity
        settlement = self.keeper.settle(step.task_id, step.task_arn, want_raised=holds)
        outcome = Outcome.ALREADY_DONE if settlement.move is Move.NONE else Outcome.DONE
        return StepResult(outcome, settlement.reason)

    def _reap(self, task: EcsTask, step: PlannedStep, incident_id: str) -> StepResult:
        async def reap() -> list[Outcome]:
            rooms = self.room_service_factory()
            try:
                executor = ReapExecutor(
                    rooms=rooms,
                    concurrency=self.reaper_policy.delete_concurrency,
                    deadline=self.deadline,
                    request_timeout_seconds=self.livekit_request_timeout_seconds,
                )
                results = await executor.run(step.rooms)
                self.livekit_calls += int(getattr(rooms, "calls", 0))
            finally:
                await rooms.aclose()
            failures = [r.error for r in results if r.error is not None]
            if failures and all(r.outcome is Outcome.FAILED for r in results):
                raise failures[0]
            return [r.outcome for r in results]

        outcomes = asyncio.run(reap())
        self.ecs.tag_task(task.arn, reaped_tags(self.clock(), step.cause or Cause.VAD, incident_id))
        names = ", ".join(d.room.name for d in step.rooms)
        return StepResult(
            Outcome.DONE, f"reaped {outcomes.count(Outcome.DONE)} room(s) ({names}); cordon if still bad"
        )
