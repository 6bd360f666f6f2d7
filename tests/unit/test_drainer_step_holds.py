"""Every flag of the step table exercised for every step: the drainer's hold
(``work.DrainerStages.hold``, the unit that owns it) keeps back exactly the steps whose row
``starts`` a disruption, outside the disruption window and during a deployment alike, and lets the
others (those that finish or roll back one begun) go on. Parametrized over the table's rows, so a
new row is covered when it is added; the rows' own ``starts`` flags are pinned below against what
each step does."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, time
from types import SimpleNamespace
from typing import Any

import pytest

from fleet_remediation.contract.disruption_window import DisruptionWindow
from fleet_remediation.contract.drainer_steps import STARTING, STEP_TABLE, Step, StepRow
from fleet_remediation.core.notes import Noted
from worker_drainer.decide.plan_model import LadderPlan, PlannedStep
from worker_drainer.decide.task_tags import State
from worker_drainer.work import DrainerStages

hold = DrainerStages().hold
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
OPEN = DisruptionWindow(start=time(0, 0), end=time(23, 59), timezone="UTC")
CLOSED = DisruptionWindow(start=time(3, 0), end=time(3, 1), timezone="UTC")


@dataclass
class Ecs:
    """The one ECS read ``hold`` makes: whether the service deploys (and how often it was asked)."""

    deploying: str | None = None
    asked: list[bool] = field(default_factory=list)

    def deployment_in_progress(self) -> str | None:
        self.asked.append(True)
        return self.deploying


def _run(window: DisruptionWindow | None, ecs: Ecs, manual: bool = False) -> Any:
    deps = SimpleNamespace(settings=SimpleNamespace(disruption_window=window), ecs=ecs)
    trigger = SimpleNamespace(manual=object() if manual else None)
    return SimpleNamespace(deps=deps, event=SimpleNamespace(trigger=trigger), noted=Noted())


def _fleet() -> Any:
    """What the drainer read: the snapshot's clock, and a trigger that names no group event."""
    return SimpleNamespace(
        snapshot=SimpleNamespace(now=NOW), trigger=SimpleNamespace(trigger=SimpleNamespace(detail={}))
    )


def _plan(step: Step) -> LadderPlan:
    task = "0" * 32
    planned = PlannedStep(task, f"arn:aws:ecs:eu-west-1:1:task/agents/{task}", step, "why", State.DRAINING)
    return LadderPlan((planned,), 0, 0)


ROW_IDS = [row.step.value for row in STEP_TABLE]
HOLDS = {
    "outside the window": (CLOSED, Ecs()),
    "during a deployment": (OPEN, Ecs("a deployment of agents is in progress")),
}


@pytest.mark.parametrize("row", STEP_TABLE, ids=ROW_IDS)
@pytest.mark.parametrize("kind", list(HOLDS))
def test_a_hold_keeps_back_exactly_the_steps_that_start_a_disruption(row: StepRow, kind: str) -> None:
    window, ecs = HOLDS[kind]
    plan = _plan(row.step)
    acting, why = hold(_run(window, ecs), _fleet(), plan)
    if row.starts:
        assert acting.steps == (), f"{row.step} went ahead {kind}"
        assert why is not None
    else:
        assert acting == plan, f"{row.step} finishes or rolls back: never held"
        assert why is None


@pytest.mark.parametrize("row", STEP_TABLE, ids=ROW_IDS)
def test_without_a_hold_and_on_a_manual_run_every_step_goes_ahead(row: StepRow) -> None:
    fleet = _fleet()
    plan = _plan(row.step)
    assert hold(_run(OPEN, Ecs()), fleet, plan) == (plan, None)
    assert hold(_run(None, Ecs()), fleet, plan) == (plan, None)
    manual_ecs = Ecs("a deployment of agents is in progress")
    assert hold(_run(CLOSED, manual_ecs, manual=True), fleet, plan) == (plan, None)
    assert manual_ecs.asked == [], "a manual run reads no deployment state"


def test_the_steps_that_start_a_disruption_are_the_reap_the_cordon_and_the_stop() -> None:
    # Each takes sessions or a worker away; the others complete one begun or give capacity back.
    assert {Step.REAP, Step.CORDON, Step.STOP} == STARTING
