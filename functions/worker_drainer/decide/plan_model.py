"""What the ladder decides over (the snapshot) and what it decides (the plan): plain data."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

# The steps are defined by the step table; here, where the ladder's callers have always found them.
from fleet_remediation.contract.drainer_steps import ACTING_STEPS
from fleet_remediation.contract.drainer_steps import Step as Step
from fleet_remediation.domain.reaping import RoomDecision
from worker_drainer.adapters.capacity_debts import CapacityDebt
from worker_drainer.adapters.ecs_model import EcsTask
from worker_drainer.decide.attribution import FleetAssessment
from worker_drainer.decide.recovery_evidence import TtsEvidence
from worker_drainer.decide.task_tags import Cause, State, TaskMarks, marks_of


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
    # Active jobs of each draining task: /worker, else its live rooms from logs + LiveKit; None: unknown.
    active_jobs: Mapping[str, int | None] = field(default_factory=dict)
    capacity_debts: Sequence[CapacityDebt] = ()
    start_new: bool = False
    manual: ManualRequest | None = None
    # The task a (validated) suspect-worker event named: its cordon's cause is the TTS suspicion.
    suspect_task_id: str | None = None
    # The service's desired count, read when a stop or a capacity settlement may need it.
    desired_count: int | None = None
    # The reaper policy protects some rooms: which of them are live on each draining task (None: unknown).
    guards_protected_rooms: bool = False
    protected_rooms: Mapping[str, tuple[str, ...] | None] = field(default_factory=dict)
    # TTS outcomes since the cordon of each TTS-suspect task whose recovery window has passed.
    tts_evidence: Mapping[str, TtsEvidence | None] = field(default_factory=dict)
    # Each task's drainer tags, read once into a typed state (from ``tasks`` when not given).
    marks: Mapping[str, TaskMarks] = field(default_factory=dict)
    # Tasks cordoned one by one whose failure a group event explains, with why the cordon is undone.
    shared_failures: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.marks:
            object.__setattr__(self, "marks", marks_of(self.tasks))


@dataclass(frozen=True)
class PlannedStep:
    task_id: str
    task_arn: str
    step: Step
    reason: str
    seen_state: State
    rooms: tuple[RoomDecision, ...] = ()
    cause: Cause | None = None
    # A skip an operator must hear about (a guardrail refusal, an excluded task, a protected room).
    notify: bool = False

    @property
    def acting(self) -> bool:
        return self.step in ACTING_STEPS


@dataclass(frozen=True)
class LadderPlan:
    steps: tuple[PlannedStep, ...]
    healthy_running: int
    draining: int

    def acting(self) -> tuple[PlannedStep, ...]:
        return tuple(s for s in self.steps if s.acting)
