"""The cordon saga's last checks against moto ECS and DynamoDB: a stop re-reads that its
replacement runs right before it (whatever the plan saw), and a capacity debt is settled from
what the task holds now — a raise whose confirmation was lost is confirmed, capacity a task no
longer holds is given back — and the undo says which hold follows it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from devkit.fakes.drainer_world import DrainerWorld, moto_world, schedule_event
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.core.report_model import Outcome
from worker_drainer.adapters.capacity_debts import Phase
from worker_drainer.capacity_keeper import CapacityKeeper
from worker_drainer.plan_model import PlannedStep, Step
from worker_drainer.saga import CordonSaga
from worker_drainer.tags import STATE_TAGS, State

pytestmark = pytest.mark.livekit


@pytest.fixture
def world(livekit_server: LocalLiveKit) -> Iterator[DrainerWorld]:
    with moto_world(livekit_server) as built:
        yield built


def _actions(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(a["resource"], a["action"], a["outcome"]) for a in report["actions"]]


def _drained(world: DrainerWorld, index: int) -> tuple[str, str]:
    """A task cordoned by hand with replacement capacity raised (its replacement not started yet)."""
    task_id, arn = world.task_ids[index], world.task_arns[index]
    report = world.invoke({"action": "drain", "task": task_id, "dry_run": False})
    assert _actions(report) == [(task_id, "cordon", "done")]
    return task_id, arn


def _saga(world: DrainerWorld) -> CordonSaga:
    deps = world.dependencies()
    keeper = CapacityKeeper(deps.ecs, deps.ledger, deps.clock)
    policy, reaper_policy = deps.settings.drainer.policy, deps.settings.reaper.policy
    return CordonSaga(deps.ecs, keeper, policy, reaper_policy, deps.clock)


def test_a_stop_re_reads_that_the_replacement_runs_whatever_the_plan_saw(world: DrainerWorld) -> None:
    desired = world.desired_count()
    task_id, arn = _drained(world, 0)
    saga = _saga(world)
    step = PlannedStep(task_id, arn, Step.STOP, "drained: no active jobs", State.DRAINING)
    task = world.dependencies().ecs.describe_task(arn)
    assert task is not None

    refused = saga.stop(task, step)
    assert refused.outcome is Outcome.SKIPPED
    assert refused.reason.startswith("re-check: replacement not running yet")
    assert world.task(task_id)["lastStatus"] == "RUNNING"
    assert world.desired_count() == desired + 1

    world.run_service_scheduler()
    stopped = saga.stop(task, step)
    assert stopped.outcome is Outcome.DONE
    assert stopped.reason.startswith("stopped; ")
    assert world.task(task_id)["lastStatus"] == "STOPPED"
    assert world.desired_count() == desired


def test_a_raise_whose_confirmation_was_lost_is_confirmed_for_a_task_that_holds_it(
    world: DrainerWorld,
) -> None:
    desired = world.desired_count()
    task_id, _ = _drained(world, 1)
    ledger = world.dependencies().ledger
    raised = ledger.capacity_debt(task_id)
    assert raised is not None
    assert raised.phase is Phase.RAISED
    # The state a lost write of RAISED leaves: the service did raise the count.
    ledger.put_capacity_debt(raised.moved(Phase.RAISING, desired, desired + 1), expected=Phase.RAISED)

    world.now += timedelta(minutes=1)
    report = world.invoke(schedule_event())
    assert _actions(report) == [(task_id, "settle-capacity", "done")]
    assert world.desired_count() == desired + 1
    confirmed = ledger.capacity_debt(task_id)
    assert confirmed is not None
    assert confirmed.phase is Phase.RAISED


def test_capacity_a_task_no_longer_holds_is_given_back(world: DrainerWorld) -> None:
    desired = world.desired_count()
    task_id, arn = _drained(world, 2)
    # An operator took the drainer's marks off by hand: the task is healthy again, the debt remains.
    world.ecs_client.untag_resource(resourceArn=arn, tagKeys=list(STATE_TAGS))

    world.now += timedelta(minutes=1)
    report = world.invoke(schedule_event())
    assert _actions(report) == [(task_id, "settle-capacity", "done")]
    assert world.desired_count() == desired
    assert world.dependencies().ledger.capacity_debt(task_id) is None
    assert world.task(task_id)["lastStatus"] == "RUNNING"


def test_a_robot_undo_holds_a_cooldown_and_an_operators_undo_says_so(world: DrainerWorld) -> None:
    _, arn = _drained(world, 3)
    saga = _saga(world)
    task = world.dependencies().ecs.describe_task(arn)
    assert task is not None
    robot = saga.undo(task, by_operator=False)
    assert robot.outcome is Outcome.DONE
    assert "unmarked; cooldown until " in robot.reason
    task = world.dependencies().ecs.describe_task(arn)
    assert task is not None
    operator = saga.undo(task, by_operator=True)
    assert "unmarked; the operator's undrain holds until " in operator.reason
