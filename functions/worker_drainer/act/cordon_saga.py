"""The cordon as a saga, and the steps that end it. A cordon is three steps — tag (the agent reads
it and stops taking jobs), scale-in protection off, replacement capacity up — recorded on the task
(``cordon: started`` in the first tag write, ``complete`` after the last step). A step the service
refuses is compensated at once; a step whose reply is lost, or a killed invocation, leaves
``started`` behind and the next tick completes it from what it reads back.

A stop needs its replacement running first (or a service that replaces the task itself).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from fleet_remediation.contract.policies import CapacityMode, DrainerPolicy, ReaperPolicy
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.report_model import Outcome
from worker_drainer.act.capacity_keeper import CapacityKeeper
from worker_drainer.act.step_outcomes import StepResult, failed, reply_lost
from worker_drainer.adapters.ecs_model import EcsTask
from worker_drainer.adapters.ecs_tasks import EcsTaskService
from worker_drainer.decide.capacity_settlement import replacement_refusal
from worker_drainer.decide.guardrails import Guardrails
from worker_drainer.decide.plan_model import PlannedStep
from worker_drainer.decide.task_tags import (
    CAPACITY_TAG,
    COOLDOWN_TAG,
    CORDON_TAG,
    NO_EXTRA_CAPACITY,
    STATE_TAGS,
    STOP_REASON_PREFIX,
    Cause,
    CordonProgress,
    TaskMarks,
    cordon_tags,
    marks_of,
    protection_to_restore,
)

# StopTask accepts a reason of at most 255 characters.
STOP_REASON_LIMIT = 255
# GetTaskProtection may show the value from before a write for a while after it (ECS is eventually
# consistent; the service profile assumes 5 s at p99): a younger cordon is completed by a later read.
PROTECTION_READ_SETTLES = timedelta(seconds=30)


@dataclass
class CordonSaga:
    ecs: EcsTaskService
    keeper: CapacityKeeper
    policy: DrainerPolicy
    reaper_policy: ReaperPolicy
    clock: Callable[[], datetime]

    def cordon(self, task: EcsTask, step: PlannedStep, incident_id: str) -> StepResult:
        refusal = Guardrails(list(marks_of(self.ecs.running_tasks()).values()), self.policy).refusal()
        if refusal:
            return StepResult(Outcome.SKIPPED, f"re-check: {refusal}")
        protection = self.ecs.protection(task.arn)
        drain_seconds = self.policy.drain_deadline_seconds(self.reaper_policy)
        mode = self.policy.capacity_mode.value
        tags = cordon_tags(
            self.clock(), step.reason, step.cause or Cause.VAD, mode, protection, drain_seconds, incident_id
        )
        # The tag first: it is what the agent's load function reads to stop taking jobs.
        self.ecs.tag_task(task.arn, tags)
        return self._finish(task, tags, protection.enabled, "cordoned")

    def complete(self, task: EcsTask) -> StepResult:
        protection = self.ecs.protection(task.arn)
        since = TaskMarks.read(task.tags).since
        if protection.enabled and since is not None and self.clock() - since < PROTECTION_READ_SETTLES:
            # "On" may be the answer from before this cordon's own write: re-read, never write it twice.
            return StepResult(
                Outcome.SKIPPED, "protection shows on, possibly from before this cordon; re-read next tick"
            )
        return self._finish(task, dict(task.tags), protection.enabled, "cordon completed")

    def _finish(self, task: EcsTask, tags: dict[str, str], protected: bool, done: str) -> StepResult:
        """Protection off, capacity up, then ``cordon: complete``."""
        try:
            if protected:
                self.ecs.set_protection(task.arn, False)
        except RemediationError as exc:
            if reply_lost(exc):
                raise
            return self._compensate(task, exc)
        capacity = "the service replaces it when it stops"
        if tags.get(CAPACITY_TAG) == CapacityMode.DESIRED_COUNT.value:
            try:
                capacity = self.keeper.settle(task.task_id, task.arn, want_raised=True).reason
            except RemediationError as exc:
                if reply_lost(exc):
                    raise
                # The raise was refused (and nothing is owed): keep the cordon, the service replaces it.
                self.ecs.tag_task(
                    task.arn, {CAPACITY_TAG: NO_EXTRA_CAPACITY, CORDON_TAG: CordonProgress.COMPLETE.value}
                )
                return failed(exc, "cordoned without extra capacity (the service replaces it on stop): ")
        self.ecs.tag_task(task.arn, {CORDON_TAG: CordonProgress.COMPLETE.value})
        return StepResult(Outcome.DONE, f"{done} (protection was {'on' if protected else 'off'}; {capacity})")

    def _compensate(self, task: EcsTask, error: RemediationError) -> StepResult:
        try:
            self.ecs.untag_task(task.arn, list(STATE_TAGS))
        except RemediationError as again:
            return failed(error, f"cordon half done, undo failed too ({again.message}); next tick finishes: ")
        return failed(error, "cordon refused, compensated (marks removed): ")

    def undo(self, task: EcsTask, by_operator: bool) -> StepResult:
        now = self.clock()
        restore = protection_to_restore(task, now)
        if restore.restore:
            self.ecs.set_protection(task.arn, True, restore.minutes)
        done = [restore.note]
        if task.tags.get(CAPACITY_TAG) == CapacityMode.DESIRED_COUNT.value:
            done.append(self.keeper.settle(task.task_id, task.arn, want_raised=False).reason)
        # Unmarked last: if anything above failed the task stays marked and the next tick retries.
        until = now + timedelta(minutes=self.policy.cooldown_minutes)
        self.ecs.untag_task(task.arn, list(STATE_TAGS))
        self.ecs.tag_task(task.arn, {COOLDOWN_TAG: str(int(until.timestamp()))})
        who = "the operator's undrain holds" if by_operator else "cooldown"
        done.append(f"unmarked; {who} until {until.isoformat(timespec='seconds')}")
        return StepResult(Outcome.DONE, "; ".join(done))

    def stop(self, task: EcsTask, step: PlannedStep) -> StepResult:
        replaced = task.tags.get(CAPACITY_TAG) == CapacityMode.DESIRED_COUNT.value
        if replaced:
            # Re-read: the replacement must be running right now, not when the snapshot was taken.
            running = len(self.ecs.running_tasks())
            debt = self.keeper.ledger.capacity_debt(task.task_id)
            refusal = replacement_refusal(debt, running, self.ecs.capacity().desired_count)
            if refusal:
                return StepResult(Outcome.SKIPPED, f"re-check: {refusal}")
        self.ecs.stop_task(task.arn, f"{STOP_REASON_PREFIX}{step.reason}"[:STOP_REASON_LIMIT])
        if not replaced:
            return StepResult(Outcome.DONE, "stopped; the service starts its replacement")
        try:
            back = self.keeper.settle(task.task_id, task.arn, want_raised=False)
        except RemediationError as exc:
            # The task is stopped either way; what is owed is settled on the next tick.
            return failed(exc, "stopped; giving its capacity back did not complete: ")
        return StepResult(Outcome.DONE, f"stopped; {back.reason}")
