"""Applies a ladder plan: one service-wide lease, then for each step a re-check of the task and the
kill switch right before acting, the action, an audit record and a report line."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

# StopTask accepts a reason of at most 255 characters.
from fleet_remediation.adapters.livekit_rooms import RoomService
from fleet_remediation.contract.budgets import DRAINER_STEP_BUDGET_SECONDS
from fleet_remediation.contract.policies import CapacityMode, DrainerPolicy, ReaperPolicy
from fleet_remediation.core.errors import ConcurrentActionError, DeadlineExceededError, RemediationError
from fleet_remediation.core.kill_switch import ModeSwitch
from fleet_remediation.core.observability import logger
from fleet_remediation.core.report import Mode, Outcome, ReportBuilder
from fleet_remediation.domain.reaping import ReapExecutor
from worker_drainer.adapters.ecs_tasks import EcsTask, EcsTaskService
from worker_drainer.adapters.ledger import Lease, Ledger
from worker_drainer.guardrails import Guardrails
from worker_drainer.ladder import LadderPlan, PlannedStep, Step
from worker_drainer.tags import (
    CAPACITY_TAG,
    COOLDOWN_TAG,
    PROTECTED_BEFORE_TAG,
    SINCE_TAG,
    STATE_TAG,
    STATE_TAGS,
    State,
    cordon_tags,
    state_of,
)

STOP_REASON_LIMIT = 255
LEASE_POLL_SECONDS = 0.2


@dataclass
class StepResult:
    outcome: Outcome
    reason: str


@dataclass
class DrainerExecutor:
    ecs: EcsTaskService
    ledger: Ledger
    mode_switch: ModeSwitch
    room_service_factory: Callable[[], RoomService]
    policy: DrainerPolicy
    reaper_policy: ReaperPolicy
    service: str
    invocation_id: str
    clock: Callable[[], datetime]
    deadline: float
    livekit_request_timeout_seconds: float
    livekit_calls: int = 0

    def run(self, plan: LadderPlan, report: ReportBuilder) -> None:
        acting = plan.acting()
        if not acting:
            return
        lease = self._acquire_lease()
        try:
            for step in acting:
                self._run_step(step, report)
        finally:
            self.ledger.release(lease)

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

    def _run_step(self, step: PlannedStep, report: ReportBuilder) -> None:
        error: RemediationError | None = None
        if time.monotonic() + DRAINER_STEP_BUDGET_SECONDS > self.deadline:
            error = DeadlineExceededError("not enough time left for this step", resource=step.task_id)
            result = StepResult(Outcome.SKIPPED, error.message)
        elif (mode := self.mode_switch.read()) is not Mode.ENFORCE:
            result = StepResult(Outcome.SKIPPED, f"kill switch is now {mode.value}")
        else:
            try:
                result = self._apply(step)
            except RemediationError as exc:
                error = exc
                result = StepResult(Outcome.FAILED, exc.message)
        report.action(step.task_id, step.step.value, result.outcome, result.reason, error)
        entry = {
            "action": step.step.value,
            "outcome": result.outcome.value,
            "reason": result.reason,
            "planned_because": step.reason,
            "task_arn": step.task_arn,
        }
        logger.info("drainer action", extra={"audit": entry, "task_id": step.task_id})
        try:
            self.ledger.audit(step.task_id, self.invocation_id, self.clock(), entry)
        except RemediationError as exc:
            report.error(exc)

    def _apply(self, step: PlannedStep) -> StepResult:
        if step.step is Step.REVERT_CAPACITY:
            return self._give_capacity_back(step.task_id, step.task_arn, "task stopped")
        current = self.ecs.describe_task(step.task_arn)
        if current is None or not current.running:
            if step.step is Step.STOP:
                return StepResult(Outcome.ALREADY_DONE, "task already stopped")
            return StepResult(Outcome.SKIPPED, "task is no longer RUNNING")
        state = state_of(current)
        if state is not step.seen_state:
            done = (step.step is Step.CORDON and state is State.DRAINING) or (
                step.step is Step.UNDO and state is State.HEALTHY
            )
            outcome = Outcome.ALREADY_DONE if done else Outcome.SKIPPED
            return StepResult(outcome, f"task state changed from {step.seen_state.value} to {state.value}")
        match step.step:
            case Step.REAP:
                return self._reap(current, step)
            case Step.CORDON:
                return self._cordon(current, step)
            case Step.STOP:
                return self._stop(current, step)
            case Step.UNDO:
                return self._undo(current)
        raise AssertionError(f"not an acting step: {step.step}")

    def _reap(self, task: EcsTask, step: PlannedStep) -> StepResult:
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
        now = self.clock()
        self.ecs.tag_task(task.arn, {STATE_TAG: State.REAPED.value, SINCE_TAG: str(int(now.timestamp()))})
        names = ", ".join(d.room.name for d in step.rooms)
        return StepResult(
            Outcome.DONE, f"reaped {outcomes.count(Outcome.DONE)} room(s) ({names}); cordon if still slow"
        )

    def _cordon(self, task: EcsTask, step: PlannedStep) -> StepResult:
        refusal = Guardrails(self.ecs.running_tasks(), self.policy).refusal()
        if refusal:
            return StepResult(Outcome.SKIPPED, f"re-check: {refusal}")
        now = self.clock()
        protected = self.ecs.protection_enabled(task.arn)
        tags = cordon_tags(
            task,
            now,
            step.reason,
            self.policy.capacity_mode.value,
            protected,
            self.policy.drain_deadline_seconds(self.reaper_policy),
        )
        # The tag first: it is what the agent's load function reads to stop taking jobs.
        self.ecs.tag_task(task.arn, tags)
        if protected:
            self.ecs.set_protection(task.arn, False)
        if self.policy.capacity_mode is CapacityMode.DESIRED_COUNT:
            desired = self.ecs.capacity().desired_count
            # The debt is recorded before the raise, so a raise is never left without a way back.
            self.ledger.add_capacity_debt(task.arn, task.task_id, now)
            try:
                self.ecs.set_desired_count(desired + 1)
            except RemediationError:
                self.ledger.claim_capacity_debt(task.task_id)
                self.ecs.tag_task(task.arn, {CAPACITY_TAG: "none"})
                raise
            extra = f", desired count {desired} -> {desired + 1}"
        else:
            extra = ", the service replaces it when it stops"
        return StepResult(Outcome.DONE, f"cordoned (protection was {'on' if protected else 'off'}{extra})")

    def _stop(self, task: EcsTask, step: PlannedStep) -> StepResult:
        self.ecs.stop_task(task.arn, f"livekit-drainer: {step.reason}"[:STOP_REASON_LIMIT])
        if task.tags.get(CAPACITY_TAG) == CapacityMode.DESIRED_COUNT.value:
            back = self._give_capacity_back(task.task_id, task.arn, "stopped")
            return StepResult(Outcome.DONE, f"stopped; {back.reason}")
        return StepResult(Outcome.DONE, "stopped")

    def _undo(self, task: EcsTask) -> StepResult:
        done = []
        if task.tags.get(PROTECTED_BEFORE_TAG) == "true":
            self.ecs.set_protection(task.arn, True)
            done.append("protection restored")
        if task.tags.get(CAPACITY_TAG) == CapacityMode.DESIRED_COUNT.value:
            done.append(self._give_capacity_back(task.task_id, task.arn, "undo").reason)
        # Unmarked last: if anything above failed the task stays marked and the next tick retries.
        until = self.clock() + timedelta(minutes=self.policy.cooldown_minutes)
        self.ecs.untag_task(task.arn, list(STATE_TAGS))
        self.ecs.tag_task(task.arn, {COOLDOWN_TAG: str(int(until.timestamp()))})
        done.append(f"unmarked, cooldown until {until.isoformat()}")
        return StepResult(Outcome.DONE, "; ".join(done))

    def _give_capacity_back(self, task_id: str, task_arn: str, why: str) -> StepResult:
        if not self.ledger.claim_capacity_debt(task_id):
            return StepResult(Outcome.ALREADY_DONE, "capacity already given back")
        try:
            desired = self.ecs.capacity().desired_count
            self.ecs.set_desired_count(max(desired - 1, 0))
        except RemediationError:
            self.ledger.add_capacity_debt(task_arn, task_id, self.clock())
            raise
        return StepResult(Outcome.DONE, f"desired count {desired} -> {max(desired - 1, 0)} ({why})")
