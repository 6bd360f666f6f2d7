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
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from fleet_remediation.drainer_policy import DrainerPolicy
from fleet_remediation.ecs_tasks import EcsTask
from fleet_remediation.ledger import CapacityDebt
from fleet_remediation.reaping import RoomDecision
from worker_drainer.attribution import FleetAssessment

TAG_PREFIX = "livekit-drainer:"
STATE_TAG = f"{TAG_PREFIX}state"
SINCE_TAG = f"{TAG_PREFIX}since"
DEADLINE_TAG = f"{TAG_PREFIX}deadline"
REASON_TAG = f"{TAG_PREFIX}reason"
CAPACITY_TAG = f"{TAG_PREFIX}capacity"
PROTECTED_BEFORE_TAG = f"{TAG_PREFIX}protected-before"
COOLDOWN_TAG = f"{TAG_PREFIX}cooldown-until"
STATE_TAGS = (STATE_TAG, SINCE_TAG, DEADLINE_TAG, REASON_TAG, CAPACITY_TAG, PROTECTED_BEFORE_TAG)


class State(StrEnum):
    HEALTHY = "healthy"
    REAPED = "reaped"
    DRAINING = "draining"


class Step(StrEnum):
    REAP = "reap"
    CORDON = "cordon"
    STOP = "stop"
    UNDO = "undo"
    REVERT_CAPACITY = "revert-capacity"
    WAIT = "wait"
    SKIP = "skip"


def state_of(task: EcsTask) -> State:
    try:
        return State(task.tags.get(STATE_TAG, State.HEALTHY.value))
    except ValueError:
        return State.HEALTHY


def _epoch_tag(task: EcsTask, key: str) -> datetime | None:
    raw = task.tags.get(key)
    try:
        return datetime.fromtimestamp(int(raw), tz=UTC) if raw else None
    except ValueError:
        return None


def since_of(task: EcsTask) -> datetime | None:
    return _epoch_tag(task, SINCE_TAG)


def deadline_of(task: EcsTask) -> datetime | None:
    return _epoch_tag(task, DEADLINE_TAG)


def cooldown_until(task: EcsTask) -> datetime | None:
    return _epoch_tag(task, COOLDOWN_TAG)


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


class Guardrails:
    """At most K and a fraction of the fleet draining; never fewer than the minimum healthy tasks."""

    def __init__(self, tasks: Sequence[EcsTask], policy: DrainerPolicy) -> None:
        self.policy = policy
        self.fleet = len(tasks)
        self.draining = sum(state_of(t) is State.DRAINING for t in tasks)

    @property
    def healthy(self) -> int:
        return self.fleet - self.draining

    def refusal(self) -> str | None:
        after = self.draining + 1
        if after > self.policy.max_draining_tasks:
            return f"guardrail: {self.draining} draining, at most {self.policy.max_draining_tasks} at once"
        if after > self.policy.max_draining_fraction * self.fleet:
            return (
                f"guardrail: {after} of {self.fleet} draining would exceed "
                f"{self.policy.max_draining_fraction:.0%} of the fleet"
            )
        if self.healthy - 1 < self.policy.min_healthy_tasks:
            return (
                f"guardrail: {self.healthy - 1} healthy tasks left < minimum {self.policy.min_healthy_tasks}"
            )
        return None

    def take(self) -> None:
        self.draining += 1


def decide(snapshot: Snapshot, policy: DrainerPolicy) -> LadderPlan:
    guard = Guardrails(snapshot.tasks, policy)
    now = snapshot.now
    steps: list[PlannedStep] = []
    manual = snapshot.manual
    forced = manual.task_id if manual and manual.action in ("drain", "undrain") else None
    running_ids = {t.task_id for t in snapshot.tasks}
    if forced and forced not in running_ids:
        steps.append(
            PlannedStep(forced, forced, Step.SKIP, "not a RUNNING task of the service", State.HEALTHY)
        )

    def add(task: EcsTask, step: Step, reason: str, rooms: Sequence[RoomDecision] = ()) -> None:
        steps.append(PlannedStep(task.task_id, task.arn, step, reason, state_of(task), tuple(rooms)))

    def cordon_or_refuse(task: EcsTask, why: str) -> None:
        refusal = guard.refusal()
        if refusal:
            add(task, Step.SKIP, refusal)
        else:
            guard.take()
            add(task, Step.CORDON, why)

    # Existing ladders first: they hold guardrail budget the new ones must respect.
    ordered = sorted(snapshot.tasks, key=lambda t: state_of(t) is State.HEALTHY)
    for task in ordered:
        state = state_of(task)
        worker = snapshot.fleet.for_task(task.task_id) if snapshot.fleet else None
        if forced and task.task_id != forced:
            continue
        if forced and manual and manual.action == "undrain":
            if state is State.HEALTHY:
                add(task, Step.SKIP, "not marked: nothing to undo")
            else:
                add(task, Step.UNDO, "manual undrain")
            continue
        if forced:
            if state is State.DRAINING:
                add(task, Step.SKIP, "already draining")
            else:
                cordon_or_refuse(task, "manual drain")
            continue
        if state is State.DRAINING:
            deadline = deadline_of(task)
            jobs = snapshot.active_jobs.get(task.task_id)
            if recovered(task.task_id, snapshot, policy):
                add(task, Step.UNDO, f"recovered: no slow inference for {policy.recovery_minutes} min")
            elif deadline is not None and now >= deadline:
                add(
                    task,
                    Step.STOP,
                    f"drain deadline {deadline.isoformat()} reached with {jobs} active job(s)",
                )
            elif jobs == 0:
                add(task, Step.STOP, "drained: no active jobs")
            else:
                left = "unknown" if jobs is None else str(jobs)
                add(task, Step.WAIT, f"draining: {left} active job(s), deadline {deadline}")
        elif state is State.REAPED:
            since = since_of(task)
            grace_end = (since or now) + timedelta(minutes=policy.reap_grace_minutes)
            if recovered(task.task_id, snapshot, policy):
                add(
                    task,
                    Step.UNDO,
                    f"recovered after the reap: no slow inference for {policy.recovery_minutes} min",
                )
            elif worker and worker.stats and worker.stats.last_seen > grace_end and worker.pattern.elevated:
                cordon_or_refuse(
                    task, f"still slow {policy.reap_grace_minutes} min after the reap: {worker.reason}"
                )
            else:
                add(task, Step.WAIT, "reaped: waiting for the grace period to judge recovery")
        elif snapshot.start_new and worker is not None and worker.degraded:
            until = cooldown_until(task)
            if until is not None and now < until:
                add(task, Step.SKIP, f"cooldown until {until.isoformat()}")
                continue
            rooms = snapshot.rooms_to_reap.get(task.task_id)
            if rooms:
                add(task, Step.REAP, f"reap first ({len(rooms)} over-age room(s)): {worker.reason}", rooms)
            else:
                unknown = " (its rooms are unknown: LiveKit unavailable)" if rooms is None else ""
                cordon_or_refuse(task, f"degraded{unknown}: {worker.reason}")
    for debt in snapshot.capacity_debts:
        if debt.task_id not in running_ids:
            steps.append(
                PlannedStep(debt.task_id, debt.task_arn, Step.REVERT_CAPACITY, "task stopped", State.HEALTHY)
            )
    return LadderPlan(tuple(steps), guard.healthy, guard.draining)


def cordon_tags(
    task: EcsTask, now: datetime, reason: str, capacity: str, protected_before: bool, drain_seconds: float
) -> dict[str, str]:
    return {
        STATE_TAG: State.DRAINING.value,
        SINCE_TAG: str(int(now.timestamp())),
        DEADLINE_TAG: str(int(now.timestamp() + drain_seconds)),
        REASON_TAG: tag_value(reason),
        CAPACITY_TAG: capacity,
        PROTECTED_BEFORE_TAG: "true" if protected_before else "false",
    }


def tag_value(text: str) -> str:
    """ECS tag values: at most 256 characters of letters, digits, spaces and + - = . _ : / @."""
    allowed = "".join(c if c.isalnum() or c in " +-=._:/@" else " " for c in text)
    return " ".join(allowed.split())[:256]
