"""The escalation ladder (pure): from a snapshot and the clock, what to do with each task.

State lives on the task itself, as tags (so an agent can read it through its metadata endpoint):

    (no state) --degraded, over-age rooms--> reaped --still slow after the grace--> draining
    (no state) --degraded, nothing to reap-------------------------------------> draining
    draining --no active jobs, or the deadline--> stopped (capacity given back)
    reaped | draining --no slow inference for recovery_minutes--> (no state), cooldown
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from fleet_remediation.contract.policies import DrainerPolicy
from fleet_remediation.domain.reaping import RoomDecision
from worker_drainer.adapters.ecs_tasks import EcsTask
from worker_drainer.adapters.ledger import CapacityDebt
from worker_drainer.attribution import FleetAssessment
from worker_drainer.guardrails import Guardrails
from worker_drainer.tags import (
    State,
    cooldown_until,
    deadline_of,
    since_of,
    state_of,
)


class Step(StrEnum):
    REAP = "reap"
    CORDON = "cordon"
    STOP = "stop"
    UNDO = "undo"
    REVERT_CAPACITY = "revert-capacity"
    WAIT = "wait"
    SKIP = "skip"


@dataclass(frozen=True)
class ManualRequest:
    action: str  # "plan" | "drain" | "undrain"
    task_id: str | None = None


@dataclass(frozen=True)
class Snapshot:
    now: datetime
    tasks: Sequence[EcsTask]
    fleet: FleetAssessment | None
    # Over-age rooms of each task's jobs, decided by the reaper's own logic; None: unknown (LiveKit down).
    rooms_to_reap: Mapping[str, Sequence[RoomDecision] | None] = field(default_factory=dict)
    # Active jobs of each draining task (/worker endpoint, else live rooms from its logs); None: unknown.
    active_jobs: Mapping[str, int | None] = field(default_factory=dict)
    capacity_debts: Sequence[CapacityDebt] = ()
    start_new: bool = False
    manual: ManualRequest | None = None


@dataclass(frozen=True)
class PlannedStep:
    task_id: str
    task_arn: str
    step: Step
    reason: str
    seen_state: State
    rooms: tuple[RoomDecision, ...] = ()


@dataclass(frozen=True)
class LadderPlan:
    steps: tuple[PlannedStep, ...]
    healthy_running: int
    draining: int

    def acting(self) -> tuple[PlannedStep, ...]:
        return tuple(s for s in self.steps if s.step not in (Step.WAIT, Step.SKIP))


def recovered(task_id: str, snapshot: Snapshot, policy: DrainerPolicy) -> bool:
    """No slow-inference warning in the last ``recovery_minutes`` (and none since the stats window)."""
    if snapshot.fleet is None:
        return False
    worker = snapshot.fleet.for_task(task_id)
    if worker is None or worker.stats is None:
        return True
    return worker.stats.last_seen <= snapshot.now - timedelta(minutes=policy.recovery_minutes)


@dataclass(frozen=True)
class _Proposal:
    """What one task's state asks for, before the guardrails have their say."""

    step: Step
    reason: str
    rooms: tuple[RoomDecision, ...] = ()


def _manual_step(task: EcsTask, manual: ManualRequest) -> _Proposal:
    state = state_of(task)
    if manual.action == "undrain":
        if state is State.HEALTHY:
            return _Proposal(Step.SKIP, "not marked: nothing to undo")
        return _Proposal(Step.UNDO, "manual undrain")
    if state is State.DRAINING:
        return _Proposal(Step.SKIP, "already draining")
    return _Proposal(Step.CORDON, "manual drain")


def _draining_step(task: EcsTask, snapshot: Snapshot, policy: DrainerPolicy) -> _Proposal:
    deadline = deadline_of(task)
    jobs = snapshot.active_jobs.get(task.task_id)
    if recovered(task.task_id, snapshot, policy):
        return _Proposal(Step.UNDO, f"recovered: no slow inference for {policy.recovery_minutes} min")
    if deadline is not None and snapshot.now >= deadline:
        return _Proposal(
            Step.STOP, f"drain deadline {deadline.isoformat()} reached with {jobs} active job(s)"
        )
    if jobs == 0:
        return _Proposal(Step.STOP, "drained: no active jobs")
    left = "unknown" if jobs is None else str(jobs)
    return _Proposal(Step.WAIT, f"draining: {left} active job(s), deadline {deadline}")


def _reaped_step(task: EcsTask, snapshot: Snapshot, policy: DrainerPolicy) -> _Proposal:
    worker = snapshot.fleet.for_task(task.task_id) if snapshot.fleet else None
    grace_end = (since_of(task) or snapshot.now) + timedelta(minutes=policy.reap_grace_minutes)
    if recovered(task.task_id, snapshot, policy):
        return _Proposal(
            Step.UNDO, f"recovered after the reap: no slow inference for {policy.recovery_minutes} min"
        )
    if worker and worker.stats and worker.stats.last_seen > grace_end and worker.pattern.elevated:
        return _Proposal(
            Step.CORDON, f"still slow {policy.reap_grace_minutes} min after the reap: {worker.reason}"
        )
    return _Proposal(Step.WAIT, "reaped: waiting for the grace period to judge recovery")


def _healthy_step(task: EcsTask, snapshot: Snapshot) -> _Proposal | None:
    worker = snapshot.fleet.for_task(task.task_id) if snapshot.fleet else None
    if not snapshot.start_new or worker is None or not worker.degraded:
        return None
    until = cooldown_until(task)
    if until is not None and snapshot.now < until:
        return _Proposal(Step.SKIP, f"cooldown until {until.isoformat()}")
    rooms = snapshot.rooms_to_reap.get(task.task_id)
    if rooms:
        return _Proposal(
            Step.REAP, f"reap first ({len(rooms)} over-age room(s)): {worker.reason}", tuple(rooms)
        )
    unknown = " (its rooms are unknown: LiveKit unavailable)" if rooms is None else ""
    return _Proposal(Step.CORDON, f"degraded{unknown}: {worker.reason}")


def _propose(task: EcsTask, snapshot: Snapshot, policy: DrainerPolicy) -> _Proposal | None:
    manual = snapshot.manual
    if manual is not None and manual.task_id is not None:
        return _manual_step(task, manual) if task.task_id == manual.task_id else None
    match state_of(task):
        case State.DRAINING:
            return _draining_step(task, snapshot, policy)
        case State.REAPED:
            return _reaped_step(task, snapshot, policy)
        case State.HEALTHY:
            return _healthy_step(task, snapshot)


def _guard(task: EcsTask, proposal: _Proposal, guard: Guardrails) -> PlannedStep:
    """The guardrail pass: a cordon beyond the blast-radius budget becomes a refusal."""
    step, reason = proposal.step, proposal.reason
    if step is Step.CORDON:
        refusal = guard.refusal()
        if refusal:
            step, reason = Step.SKIP, refusal
        else:
            guard.take()
    return PlannedStep(task.task_id, task.arn, step, reason, state_of(task), proposal.rooms)


def plan_ladder(snapshot: Snapshot, policy: DrainerPolicy) -> LadderPlan:
    """Each task's next step from its state, then the guardrails, then capacity owed back."""
    guard = Guardrails(snapshot.tasks, policy)
    steps: list[PlannedStep] = []
    running_ids = {t.task_id for t in snapshot.tasks}
    manual = snapshot.manual
    if manual is not None and manual.task_id is not None and manual.task_id not in running_ids:
        reason = "not a RUNNING task of the service"
        steps.append(PlannedStep(manual.task_id, manual.task_id, Step.SKIP, reason, State.HEALTHY))
    # Existing ladders first: they hold guardrail budget the new ones must respect.
    for task in sorted(snapshot.tasks, key=lambda t: state_of(t) is State.HEALTHY):
        proposal = _propose(task, snapshot, policy)
        if proposal is not None:
            steps.append(_guard(task, proposal, guard))
    steps += [
        PlannedStep(debt.task_id, debt.task_arn, Step.REVERT_CAPACITY, "task stopped", State.HEALTHY)
        for debt in snapshot.capacity_debts
        if debt.task_id not in running_ids
    ]
    return LadderPlan(tuple(steps), guard.healthy, guard.draining)
