"""The escalation ladder (pure): from a snapshot and the clock, what to do with each task.

State lives on the task itself, as tags (so an agent can read it through its metadata endpoint):

    (no state) --degraded, over-age rooms--> reaped --still bad after the grace--> draining
    (no state) --degraded (or a manual drain)-----------------------------------> draining
    draining (cordon interrupted) --> complete-cordon (protection off, capacity up)
    draining --no active jobs (positive answer), or the deadline; replacement running--> stopped
    reaped | draining --evidence of recovery for the cause it was marked for--> (no state), cooldown

A manual drain is never undone by the robot; a task tagged ``livekit-drainer:exclude=true`` is
never touched; a task that may host a protected live room is never stopped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from fleet_remediation.contract.naming import EXCLUDE_TAG
from fleet_remediation.contract.policies import DrainerPolicy
from fleet_remediation.domain.reaping import RoomDecision
from worker_drainer.adapters.capacity_debts import Phase
from worker_drainer.adapters.ecs_model import EcsTask
from worker_drainer.decide.capacity_settlement import debt_for, replacement_refusal
from worker_drainer.decide.guardrails import Guardrails
from worker_drainer.decide.plan_model import LadderPlan, ManualRequest, PlannedStep, Snapshot, Step
from worker_drainer.decide.recovery_evidence import Recovery, recovery_for
from worker_drainer.decide.task_tags import Cause, State, TaskMarks

__all__ = ["LadderPlan", "ManualRequest", "PlannedStep", "Snapshot", "Step", "plan_ladder"]
EXCLUDED = f"excluded by the tag {EXCLUDE_TAG}=true: never touched"
# A manual target that is not running reaches the ladder only once the drainer stopped it.
ALREADY_STOPPED = "already stopped by the drainer: nothing left to do"


@dataclass(frozen=True)
class _Proposal:
    """What one task's state asks for, before the guardrails have their say."""

    step: Step
    reason: str
    rooms: tuple[RoomDecision, ...] = ()
    cause: Cause | None = None
    notify: bool = False


def _recovery(task: EcsTask, marks: TaskMarks, snapshot: Snapshot, policy: DrainerPolicy) -> Recovery:
    shared = snapshot.shared_failures.get(task.task_id)
    if shared is not None:
        return Recovery(True, shared)
    fleet = snapshot.fleet
    worker = fleet.for_task(task.task_id) if fleet else None
    tts = snapshot.tts_evidence.get(task.task_id)
    return recovery_for(marks.cause, worker, fleet is not None, tts, marks.since, snapshot.now, policy)


def _manual_step(marks: TaskMarks, manual: ManualRequest) -> _Proposal:
    state = marks.state
    if manual.action == "undrain":
        if state is State.HEALTHY:
            return _Proposal(Step.SKIP, "not marked: nothing to undo")
        return _Proposal(Step.UNDO, "manual undrain (the operator's cooldown follows)", cause=Cause.MANUAL)
    if state is State.DRAINING:
        return _Proposal(Step.SKIP, "already draining")
    return _Proposal(Step.CORDON, "manual drain", cause=Cause.MANUAL)


def _protected_hold(task: EcsTask, snapshot: Snapshot) -> str | None:
    if not snapshot.guards_protected_rooms:
        return None
    rooms = snapshot.protected_rooms.get(task.task_id)
    if rooms is None:
        return "not stopped: its rooms are unknown and the reaper policy protects some rooms"
    return f"not stopped: hosts protected live room(s) {', '.join(rooms)}" if rooms else None


def _replacement_refusal(task: EcsTask, marks: TaskMarks, snapshot: Snapshot) -> str | None:
    if not marks.raised_capacity:
        return None  # the service replaces the task when it stops
    debt = debt_for(snapshot.capacity_debts, task.task_id)
    return replacement_refusal(debt, len(snapshot.tasks), snapshot.desired_count)


def _draining_step(task: EcsTask, marks: TaskMarks, snapshot: Snapshot, policy: DrainerPolicy) -> _Proposal:
    recovery = _recovery(task, marks, snapshot, policy)
    if recovery.recovered:
        return _Proposal(Step.UNDO, recovery.reason)
    if not marks.cordon_complete:
        return _Proposal(Step.COMPLETE_CORDON, "the cordon was interrupted: finishing it")
    jobs, deadline = snapshot.active_jobs.get(task.task_id), marks.deadline
    left = "unknown" if jobs is None else str(jobs)
    if jobs != 0 and (deadline is None or snapshot.now < deadline):
        return _Proposal(Step.WAIT, f"draining: {left} active job(s), deadline {deadline}")
    hold = _protected_hold(task, snapshot) if jobs != 0 else None
    if hold:
        return _Proposal(Step.SKIP, hold, notify=True)
    refusal = _replacement_refusal(task, marks, snapshot)
    if refusal:
        return _Proposal(Step.WAIT, refusal)
    if jobs == 0:
        return _Proposal(Step.STOP, "drained: no active jobs")
    assert deadline is not None  # a non-zero or unknown count stops only at the deadline
    return _Proposal(Step.STOP, f"drain deadline {deadline.isoformat()} reached with {left} active job(s)")


def _reaped_step(task: EcsTask, marks: TaskMarks, snapshot: Snapshot, policy: DrainerPolicy) -> _Proposal:
    cause = marks.cause
    grace_end = (marks.since or snapshot.now) + timedelta(minutes=policy.reap_grace_minutes)
    recovery = _recovery(task, marks, snapshot, policy)
    if recovery.recovered:
        return _Proposal(Step.UNDO, f"{recovery.reason} after the reap")
    if cause is Cause.TTS_SUSPECT:
        evidence = snapshot.tts_evidence.get(task.task_id)
        if snapshot.now >= grace_end and evidence is not None and evidence.failed:
            why = f"{evidence.failed} job(s) still without first audio after the reap (TTS evidence)"
            return _Proposal(Step.CORDON, why, cause=cause)
        return _Proposal(Step.WAIT, "reaped: waiting for TTS evidence of recovery or failure")
    worker = snapshot.fleet.for_task(task.task_id) if snapshot.fleet else None
    if worker and worker.stats and worker.stats.last_seen > grace_end and worker.pattern.elevated:
        why = f"still slow {policy.reap_grace_minutes} min after the reap: {worker.reason}"
        return _Proposal(Step.CORDON, why, cause=cause)
    return _Proposal(Step.WAIT, "reaped: waiting for the grace period to judge recovery")


def _healthy_step(task: EcsTask, marks: TaskMarks, snapshot: Snapshot) -> _Proposal | None:
    worker = snapshot.fleet.for_task(task.task_id) if snapshot.fleet else None
    if not snapshot.start_new or worker is None or not worker.degraded:
        return None
    until = marks.cooldown_until
    if until is not None and snapshot.now < until:
        return _Proposal(Step.SKIP, f"cooldown until {until.isoformat()}: not marked again", notify=True)
    cause = Cause.TTS_SUSPECT if task.task_id == snapshot.suspect_task_id else Cause.VAD
    rooms = snapshot.rooms_to_reap.get(task.task_id)
    if rooms:
        why = f"reap first ({len(rooms)} over-age room(s)): {worker.reason}"
        return _Proposal(Step.REAP, why, tuple(rooms), cause=cause)
    unknown = " (its rooms are unknown: LiveKit unavailable)" if rooms is None else ""
    return _Proposal(Step.CORDON, f"degraded{unknown}: {worker.reason}", cause=cause)


def _propose(task: EcsTask, marks: TaskMarks, snapshot: Snapshot, policy: DrainerPolicy) -> _Proposal | None:
    manual = snapshot.manual
    if manual is not None and manual.task_id is not None:
        if task.task_id != manual.task_id:
            return None
        proposal: _Proposal | None = _manual_step(marks, manual)
    else:
        match marks.state:
            case State.DRAINING:
                proposal = _draining_step(task, marks, snapshot, policy)
            case State.REAPED:
                proposal = _reaped_step(task, marks, snapshot, policy)
            case State.HEALTHY:
                proposal = _healthy_step(task, marks, snapshot)
    if not marks.excluded:
        return proposal
    if proposal is None or proposal.step in (Step.WAIT, Step.SKIP):
        return _Proposal(Step.SKIP, EXCLUDED)
    return _Proposal(
        Step.SKIP, f"{EXCLUDED} (would have: {proposal.step.value}, {proposal.reason})", notify=True
    )


def _guard(task: EcsTask, state: State, proposal: _Proposal, guard: Guardrails) -> PlannedStep:
    """The guardrail pass: a new cordon beyond the blast-radius budget becomes a refusal."""
    step, reason, notify = proposal.step, proposal.reason, proposal.notify
    if step is Step.CORDON:
        refusal = guard.refusal()
        if refusal:
            step, reason, notify = Step.SKIP, refusal, True
        else:
            guard.take()
    return PlannedStep(task.task_id, task.arn, step, reason, state, proposal.rooms, proposal.cause, notify)


def _capacity_steps(snapshot: Snapshot, acting: set[str]) -> list[PlannedStep]:
    """Capacity owed back for stopped tasks, and debts left mid-change (or no longer owed) settled
    from the service's real desired count."""
    running = {t.task_id: t for t in snapshot.tasks}
    steps: list[PlannedStep] = []
    for debt in snapshot.capacity_debts:
        task = running.get(debt.task_id)
        if task is None:
            steps.append(
                PlannedStep(debt.task_id, debt.task_arn, Step.REVERT_CAPACITY, "task stopped", State.HEALTHY)
            )
            continue
        marks = snapshot.marks[task.task_id]
        holds = marks.state is State.DRAINING and marks.raised_capacity
        if debt.task_id not in acting and (debt.phase is not Phase.RAISED or not holds):
            why = f"capacity debt {debt.phase.value}: settling it from the service's desired count"
            steps.append(PlannedStep(task.task_id, task.arn, Step.SETTLE_CAPACITY, why, marks.state))
    return steps


def plan_ladder(snapshot: Snapshot, policy: DrainerPolicy) -> LadderPlan:
    """Each task's next step from its state, then the guardrails, then capacity owed back."""
    marks = snapshot.marks
    guard = Guardrails([marks[t.task_id] for t in snapshot.tasks], policy)
    steps: list[PlannedStep] = []
    running_ids = {t.task_id for t in snapshot.tasks}
    manual = snapshot.manual
    if manual is not None and manual.task_id is not None and manual.task_id not in running_ids:
        steps.append(PlannedStep(manual.task_id, manual.task_id, Step.SKIP, ALREADY_STOPPED, State.HEALTHY))
    # Existing ladders first: they hold guardrail budget the new ones must respect.
    for task in sorted(snapshot.tasks, key=lambda t: marks[t.task_id].state is State.HEALTHY):
        proposal = _propose(task, marks[task.task_id], snapshot, policy)
        if proposal is not None:
            steps.append(_guard(task, marks[task.task_id].state, proposal, guard))
    steps += _capacity_steps(snapshot, {s.task_id for s in steps if s.acting})
    return LadderPlan(tuple(steps), guard.healthy, guard.draining)
