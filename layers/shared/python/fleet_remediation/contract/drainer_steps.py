"""The worker drainer's steps, one row each: how a step reads in a message, whether it takes a worker
out of rotation or leaves it marked, the IAM write actions its code calls and its metric.

The drainer derives from this table which steps act, which need the task-scope check (those with
task actions), the done form and severity of its messages, and the metrics it emits; the stack
derives the drainer role's task and service write grants from it. Adding a step is one row here
plus its executor code (docs/adding-a-drainer-step.md); a test fails when a ``Step`` has no row.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from enum import StrEnum


class Step(StrEnum):
    REAP = "reap"
    CORDON = "cordon"
    COMPLETE_CORDON = "complete-cordon"
    STOP = "stop"
    UNDO = "undo"
    SETTLE_CAPACITY = "settle-capacity"
    REVERT_CAPACITY = "revert-capacity"
    WAIT = "wait"
    SKIP = "skip"


# What the ladder decides when nothing is to be done: no row, no action, no metric.
NOT_ACTING = frozenset({Step.WAIT, Step.SKIP})

# IAM actions, as the ECS adapter calls them.
TAG = "ecs:TagResource"
UNTAG = "ecs:UntagResource"
PROTECT = "ecs:UpdateTaskProtection"
STOP_TASK = "ecs:StopTask"
UPDATE_SERVICE = "ecs:UpdateService"
# Every ECS action the drainer may call that changes something; the rest are reads.
ECS_WRITE_ACTIONS = frozenset({TAG, UNTAG, PROTECT, STOP_TASK, UPDATE_SERVICE})
# Tag writes support the aws:TagKeys condition (limited to the drainer's own keys); the other task
# changes support ecs:cluster instead (Service Authorization Reference, Amazon ECS).
TAG_WRITE_ACTIONS = frozenset({TAG, UNTAG})


@dataclass(frozen=True)
class StepRow:
    step: Step
    _: KW_ONLY
    # How it reads after "would have" or as done: "cordoned task 2789d238".
    done_form: str
    # Takes a worker out of rotation (the message is a warning); the others put things back.
    takes_out: bool
    # Leaves the task marked, so ``undrain`` undoes it.
    marks: bool
    # Starts a new disruption: held outside the disruption window and while the service deploys.
    # Steps that finish or roll back one already begun are never held (complete or compensate).
    starts: bool
    # IAM write actions on the agents' tasks and on their service that the step's code may call
    # (a cordon refused half-way is compensated by removing its marks: UntagResource).
    task_actions: tuple[str, ...]
    service_actions: tuple[str, ...]
    # The metrics Drainer<metric>Planned and Drainer<metric>Done.
    metric: str

    @property
    def touches_task(self) -> bool:
        """Tags, untags, (un)protects or stops a task: the IAM policy's task scope applies."""
        return bool(self.task_actions)


STEP_TABLE: tuple[StepRow, ...] = (
    StepRow(
        Step.REAP,
        done_form="reaped the over-age rooms of",
        takes_out=True,
        marks=True,
        starts=True,
        task_actions=(TAG,),
        service_actions=(),
        metric="Reap",
    ),
    StepRow(
        Step.CORDON,
        done_form="cordoned",
        takes_out=True,
        marks=True,
        starts=True,
        task_actions=(TAG, UNTAG, PROTECT),
        service_actions=(UPDATE_SERVICE,),
        metric="Cordon",
    ),
    StepRow(
        Step.COMPLETE_CORDON,
        done_form="completed the cordon of",
        takes_out=True,
        marks=True,
        starts=False,
        task_actions=(TAG, UNTAG, PROTECT),
        service_actions=(UPDATE_SERVICE,),
        metric="CompleteCordon",
    ),
    StepRow(
        Step.STOP,
        done_form="stopped",
        takes_out=True,
        marks=False,
        starts=True,
        task_actions=(STOP_TASK,),
        service_actions=(UPDATE_SERVICE,),
        metric="Stop",
    ),
    StepRow(
        Step.UNDO,
        done_form="un-drained",
        takes_out=False,
        marks=False,
        starts=False,
        task_actions=(TAG, UNTAG, PROTECT),
        service_actions=(UPDATE_SERVICE,),
        metric="Undo",
    ),
    StepRow(
        Step.SETTLE_CAPACITY,
        done_form="settled the capacity held for",
        takes_out=False,
        marks=False,
        starts=False,
        task_actions=(),
        service_actions=(UPDATE_SERVICE,),
        metric="SettleCapacity",
    ),
    StepRow(
        Step.REVERT_CAPACITY,
        done_form="given back the capacity of",
        takes_out=False,
        marks=False,
        starts=False,
        task_actions=(),
        service_actions=(UPDATE_SERVICE,),
        metric="RevertCapacity",
    ),
)
ROWS: dict[Step, StepRow] = {row.step: row for row in STEP_TABLE}
ACTING_STEPS = frozenset(ROWS)
TASK_STEPS = frozenset(row.step for row in STEP_TABLE if row.touches_task)
TAKING_OUT = frozenset(row.step for row in STEP_TABLE if row.takes_out)
MARKING = frozenset(row.step for row in STEP_TABLE if row.marks)
STARTING = frozenset(row.step for row in STEP_TABLE if row.starts)
# What the drainer's role is granted to change: the union of the rows.
TASK_WRITE_ACTIONS = tuple(sorted({action for row in STEP_TABLE for action in row.task_actions}))
SERVICE_WRITE_ACTIONS = tuple(sorted({action for row in STEP_TABLE for action in row.service_actions}))
