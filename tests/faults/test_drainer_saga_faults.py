"""The drainer's cordon saga and capacity under faults: a reply lost after the service acted, an
invocation killed between two steps, a refusal mid-saga, a desired count moved by someone else.

Faults are injected with botocore's own event hooks (``devkit.fakes.aws_faults``) on moto-backed
clients, so the drainer runs its real requests and error handling. Each test asserts: the faulted
invocation ends within seconds; every step it started is in the ledger's journal (an intent without
an outcome when it was killed); and after the next tick nothing is half done — the desired count is
exactly what it should be (never +1 for good, never -1 for good), protection and tags agree.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest

from devkit.fakes.aws_faults import InvocationKilled, KillAfter, KillBefore, LostReply
from devkit.fakes.drainer_world import (
    CLUSTER,
    SERVICE,
    DrainerWorld,
    alarm_event,
    moto_world,
    schedule_event,
)
from devkit.fakes.ecs_fakes import EcsThrottling
from devkit.livekit_local import LocalLiveKit
from devkit.process_work import own_time
from worker_drainer.adapters.capacity_debts import Phase
from worker_drainer.decide.task_tags import CAPACITY_TAG, CORDON_TAG, STATE_TAG
from worker_drainer.dependencies import DrainerDependencies

pytestmark = [pytest.mark.livekit, pytest.mark.timeout(60)]
# One invocation against in-process moto and a loopback livekit-server: its own time, not its queue
# for a core.
INVOCATION_BOUND_SECONDS = 10.0
# Past the lease of a killed invocation (policy.lease_seconds, 120 s by default).
AFTER_THE_LEASE = timedelta(minutes=3)


@pytest.fixture
def world(livekit_server: LocalLiveKit) -> Iterator[DrainerWorld]:
    with moto_world(livekit_server) as built:
        yield built


def faulty(world: DrainerWorld) -> tuple[Any, Any, DrainerDependencies]:
    """Clients of its own for one invocation, for faults to hook into."""
    ecs = world.own_ecs_client()
    dynamodb = boto3.client("dynamodb")
    return ecs, dynamodb, world.dependencies(ecs_client=ecs, dynamodb_client=dynamodb)


def invoke(
    world: DrainerWorld, event: dict[str, Any], deps: DrainerDependencies | None = None
) -> dict[str, Any]:
    with own_time() as took:
        answer = world.invoke(event, deps)
    assert took.seconds < INVOCATION_BOUND_SECONDS, f"invocation took {took}"
    return answer


def drain(task_id: str) -> dict[str, Any]:
    return {"action": "drain", "task": task_id, "dry_run": False}


def actions(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(a["action"], a["outcome"]) for a in report["actions"]]


def debt_phase(world: DrainerWorld, task_id: str) -> Phase | None:
    found = world.dependencies().ledger.capacity_debt(task_id)
    return None if found is None else found.phase


def journal(world: DrainerWorld, task_id: str) -> list[tuple[str, str]]:
    return [(e["action"], e["outcome"]) for e in sorted(world.audit(task_id), key=lambda e: e["sk"])]


def next_tick(world: DrainerWorld) -> dict[str, Any]:
    world.now += AFTER_THE_LEASE
    return invoke(world, schedule_event(world.now))


def stop_and_give_back(world: DrainerWorld, task_id: str, desired: int) -> None:
    """The rest of the drain: the replacement runs, the task stops, exactly one is given back."""
    world.run_service_scheduler()
    assert actions(next_tick(world)) == [("stop", "done")]
    assert world.desired_count() == desired
    assert debt_phase(world, task_id) is None


def test_a_lost_update_service_reply_on_the_raise_is_re_read_and_owed(world: DrainerWorld) -> None:
    target, desired = world.task_ids[0], world.desired_count()
    ecs, _, deps = faulty(world)
    LostReply(ecs, "ecs.UpdateService")
    report = invoke(world, drain(target), deps)
    # The desired count, re-read after the lost reply, shows the raise: the debt is kept.
    assert actions(report) == [("cordon", "done")]
    assert world.desired_count() == desired + 1  # the service did raise it
    assert debt_phase(world, target) is Phase.RAISED
    assert world.tags(target)[CORDON_TAG] == "complete"
    assert actions(next_tick(world)) == []
    assert world.desired_count() == desired + 1  # exactly: not raised a second time
    stop_and_give_back(world, target, desired)


def test_a_lost_raise_reply_and_a_failed_re_read_are_settled_by_the_next_tick(world: DrainerWorld) -> None:
    target, desired = world.task_ids[0], world.desired_count()
    ecs, _, deps = faulty(world)
    re_read: list[LostReply] = []
    # The re-read after the lost reply (the next DescribeServices) gets no answer either.
    ecs.meta.events.register_first(
        "after-call.ecs.UpdateService", lambda **_: re_read.append(LostReply(ecs, "ecs.DescribeServices"))
    )
    LostReply(ecs, "ecs.UpdateService")
    report = invoke(world, drain(target), deps)
    assert actions(report) == [("cordon", "unknown")]
    assert re_read[0].fired == 1
    assert report["status"] == "partial"
    assert world.desired_count() == desired + 1
    assert debt_phase(world, target) is Phase.RAISING
    assert world.tags(target)[CORDON_TAG] == "started"

    tick = next_tick(world)
    assert actions(tick) == [("complete-cordon", "done")]
    assert "took effect" in tick["actions"][0]["reason"]
    assert world.desired_count() == desired + 1  # exactly: not raised a second time
    assert debt_phase(world, target) is Phase.RAISED
    assert journal(world, target) == [("cordon", "unknown"), ("complete-cordon", "done")]
    stop_and_give_back(world, target, desired)


def test_a_kill_between_the_debt_write_and_update_service_loses_nothing(world: DrainerWorld) -> None:
    target, desired = world.task_ids[0], world.desired_count()
    ecs, _, deps = faulty(world)
    KillBefore(ecs, "ecs.UpdateService")
    with pytest.raises(InvocationKilled):
        invoke(world, drain(target), deps)
    assert world.desired_count() == desired
    assert debt_phase(world, target) is Phase.RAISING
    assert journal(world, target) == [("cordon", "intended")]  # the intent was on record first

    # The interrupted cordon is read back and told, then finished.
    assert actions(next_tick(world)) == [("cordon", "done"), ("complete-cordon", "done")]
    assert world.desired_count() == desired + 1
    assert debt_phase(world, target) is Phase.RAISED
    stop_and_give_back(world, target, desired)


def test_a_kill_after_update_service_took_effect_is_confirmed_not_repeated(world: DrainerWorld) -> None:
    target, desired = world.task_ids[0], world.desired_count()
    ecs, _, deps = faulty(world)
    KillAfter(ecs, "ecs.UpdateService")
    with pytest.raises(InvocationKilled):
        invoke(world, drain(target), deps)
    assert world.desired_count() == desired + 1
    assert actions(next_tick(world)) == [("cordon", "done"), ("complete-cordon", "done")]
    assert world.desired_count() == desired + 1
    stop_and_give_back(world, target, desired)


def test_a_kill_between_the_tag_and_protection_off_is_completed(world: DrainerWorld) -> None:
    target, arn, desired = world.task_ids[1], world.task_arns[1], world.desired_count()
    ecs, _, deps = faulty(world)
    KillBefore(ecs, "ecs.UpdateTaskProtection")
    with pytest.raises(InvocationKilled):
        invoke(world, drain(target), deps)
    assert world.tags(target)[STATE_TAG] == "draining"
    assert world.protection.enabled(arn)
    assert world.desired_count() == desired

    tick = next_tick(world)
    assert actions(tick) == [("cordon", "done"), ("complete-cordon", "done")]
    assert tick["actions"][1]["reason"].startswith("cordon completed (protection was on; ")
    assert not world.protection.enabled(arn)
    assert world.desired_count() == desired + 1
    stop_and_give_back(world, target, desired)


def test_a_lost_tag_reply_leaves_a_cordon_the_next_tick_completes(world: DrainerWorld) -> None:
    target, desired = world.task_ids[2], world.desired_count()
    ecs, _, deps = faulty(world)
    LostReply(ecs, "ecs.TagResource")
    assert actions(invoke(world, drain(target), deps)) == [("cordon", "unknown")]
    assert actions(next_tick(world)) == [("complete-cordon", "done")]
    assert world.desired_count() == desired + 1
    stop_and_give_back(world, target, desired)


def test_a_refused_protection_change_is_compensated_at_once(world: DrainerWorld) -> None:
    target, arn, desired = world.task_ids[3], world.task_arns[3], world.desired_count()
    ecs, _, deps = faulty(world)
    EcsThrottling(ecs, "UpdateTaskProtection", times=1)
    report = invoke(world, drain(target), deps)
    assert actions(report) == [("cordon", "failed")]
    assert "compensated" in report["actions"][0]["reason"]
    assert STATE_TAG not in world.tags(target)
    assert world.protection.enabled(arn)
    assert world.desired_count() == desired
    assert actions(next_tick(world)) == []  # nothing half done for the next tick to find


def test_a_lost_reply_when_capacity_is_given_back_does_not_lower_it_twice(world: DrainerWorld) -> None:
    target, desired = world.task_ids[0], world.desired_count()
    invoke(world, drain(target))
    world.run_service_scheduler()
    ecs, _, deps = faulty(world)
    LostReply(ecs, "ecs.UpdateService")
    world.now += timedelta(minutes=1)
    stopped = invoke(world, schedule_event(world.now), deps)
    # Re-read after the lost reply: the count is the one asked for, so nothing is owed any more.
    assert actions(stopped) == [("stop", "done")]
    assert world.task(target)["lastStatus"] == "STOPPED"
    assert world.desired_count() == desired  # the give-back did happen
    assert debt_phase(world, target) is None
    assert actions(next_tick(world)) == []
    assert world.desired_count() == desired  # exactly: not desired - 1


def test_a_kill_before_the_give_back_reaches_the_service_is_finished(world: DrainerWorld) -> None:
    target, desired = world.task_ids[0], world.desired_count()
    invoke(world, drain(target))
    world.run_service_scheduler()
    ecs, _, deps = faulty(world)
    KillBefore(ecs, "ecs.UpdateService")
    world.now += timedelta(minutes=1)
    with pytest.raises(InvocationKilled):
        invoke(world, schedule_event(world.now), deps)
    assert world.task(target)["lastStatus"] == "STOPPED"
    assert world.desired_count() == desired + 1
    assert journal(world, target)[-1] == ("stop", "intended")

    assert actions(next_tick(world)) == [("stop", "done"), ("revert-capacity", "done")]
    assert world.desired_count() == desired
    assert debt_phase(world, target) is None


def test_a_kill_during_undo_is_finished_by_the_next_undo(world: DrainerWorld) -> None:
    target, arn, desired = world.task_ids[2], world.task_arns[2], world.desired_count()
    world.slow(target, count=240, minutes=25)
    assert actions(invoke(world, alarm_event(at=world.now))) == [("cordon", "done")]
    world.now += timedelta(minutes=11)  # quiet since: VAD evidence of recovery
    ecs, _, deps = faulty(world)
    KillBefore(ecs, "ecs.UpdateService")
    with pytest.raises(InvocationKilled):
        invoke(world, schedule_event(world.now), deps)
    assert world.tags(target)[STATE_TAG] == "draining"
    assert world.desired_count() == desired + 1

    # The interrupted undo is told as what it reads back (still marked: unknown), then finished.
    assert actions(next_tick(world)) == [("undo", "unknown"), ("undo", "done")]
    assert world.desired_count() == desired
    assert world.protection.enabled(arn)
    assert STATE_TAG not in world.tags(target)
    assert debt_phase(world, target) is None


def test_a_desired_count_moved_by_someone_else_is_reported_never_guessed(world: DrainerWorld) -> None:
    target, desired = world.task_ids[0], world.desired_count()
    ecs, _, deps = faulty(world)
    KillBefore(ecs, "ecs.UpdateService")
    with pytest.raises(InvocationKilled):
        invoke(world, drain(target), deps)
    world.ecs_client.update_service(cluster=CLUSTER, service=SERVICE, desiredCount=desired + 3)
    tick = next_tick(world)
    assert actions(tick) == [("cordon", "done"), ("complete-cordon", "failed")]
    assert tick["actions"][1]["error"]["code"] == "CapacityAmbiguous"
    assert tick["actions"][1]["error"]["resource"] == target
    assert world.desired_count() == desired + 3  # left as it was found
    assert world.tags(target)[CAPACITY_TAG] == "none"  # the service replaces the task on stop
    # The drain goes on without extra capacity: stopped (the service replaces it), no raise, no give-back.
    assert actions(next_tick(world)) == [("stop", "done")]
    assert world.desired_count() == desired + 3
    assert any("CapacityAmbiguous" in message for _, message in world.notifications())


def test_a_refused_cordon_whose_compensation_is_refused_too_is_finished_by_the_next_tick(
    world: DrainerWorld,
) -> None:
    target, arn, desired = world.task_ids[3], world.task_arns[3], world.desired_count()
    ecs, _, deps = faulty(world)
    EcsThrottling(ecs, "UpdateTaskProtection", times=1)
    EcsThrottling(ecs, "UntagResource", times=1)
    report = invoke(world, drain(target), deps)
    assert actions(report) == [("cordon", "failed")]
    cordon = report["actions"][0]
    assert cordon["reason"].startswith("cordon half done, undo failed too (")
    assert "next tick finishes" in cordon["reason"]
    # The step's error is the refusal that stopped the saga, not the failed compensation.
    assert cordon["error"]["code"] == "AwsApiError"
    assert "UpdateTaskProtection" in cordon["error"]["message"]
    assert world.tags(target)[STATE_TAG] == "draining"  # the marks stayed on
    assert world.protection.enabled(arn)

    assert actions(next_tick(world)) == [("complete-cordon", "done")]
    assert not world.protection.enabled(arn)
    assert world.desired_count() == desired + 1
    assert world.tags(target)[CORDON_TAG] == "complete"


def test_a_refused_raise_keeps_the_cordon_without_extra_capacity_and_owes_nothing(
    world: DrainerWorld,
) -> None:
    target, desired = world.task_ids[1], world.desired_count()
    ecs, _, deps = faulty(world)
    EcsThrottling(ecs, "UpdateService", times=1)
    report = invoke(world, drain(target), deps)
    assert actions(report) == [("cordon", "failed")]
    assert report["actions"][0]["reason"].startswith(
        "cordoned without extra capacity (the service replaces it on stop): "
    )
    assert world.desired_count() == desired
    assert debt_phase(world, target) is None
    tags = world.tags(target)
    assert (tags[STATE_TAG], tags[CAPACITY_TAG], tags[CORDON_TAG]) == ("draining", "none", "complete")


def test_a_lost_protection_reply_is_re_read_on_the_next_tick_not_compensated(world: DrainerWorld) -> None:
    target, arn, desired = world.task_ids[2], world.task_arns[2], world.desired_count()
    ecs, _, deps = faulty(world)
    LostReply(ecs, "ecs.UpdateTaskProtection")
    assert actions(invoke(world, drain(target), deps)) == [("cordon", "unknown")]
    assert world.tags(target)[STATE_TAG] == "draining"  # the marks stay: the outcome is unknown
    tick = next_tick(world)
    assert actions(tick) == [("complete-cordon", "done")]
    assert not world.protection.enabled(arn)
    assert world.desired_count() == desired + 1


def test_a_cordon_says_what_it_did(world: DrainerWorld) -> None:
    target = world.task_ids[0]
    report = invoke(world, drain(target))
    assert actions(report) == [("cordon", "done")]
    assert report["actions"][0]["reason"].startswith("cordoned (protection was on; ")
