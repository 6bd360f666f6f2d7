"""The drainer under a hold (moto ECS, the real livekit-server): outside the disruption window it
starts no cordon, tells what it holds, finishes a cordon already begun, and a manual run acts; the
same while the agent service deploys."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import time, timedelta
from typing import Any

import pytest

from devkit.fakes.drainer_world import DrainerWorld, alarm_event, moto_world, schedule_event
from devkit.fakes.ecs_fakes import EcsRollingDeployment
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.contract.disruption_window import DisruptionWindow
from worker_drainer.decide.task_tags import CORDON_TAG, STATE_TAG

# Closed all day but one minute that the tests never reach.
CLOSED = DisruptionWindow(start=time(3, 0), end=time(3, 1), timezone="UTC")


@pytest.fixture
def world(livekit_server: LocalLiveKit) -> Iterator[DrainerWorld]:
    with moto_world(livekit_server) as built:
        yield built


def _held(world: DrainerWorld, event: dict[str, Any]) -> dict[str, Any]:
    deps = world.dependencies()
    deps.settings = deps.settings.model_copy(update={"disruption_window": CLOSED})
    return world.invoke(event, deps)


def test_outside_the_window_a_cordon_is_held_and_told_and_a_manual_drain_still_acts(
    world: DrainerWorld,
) -> None:
    bad = world.task_ids[1]
    world.slow(bad, count=240, minutes=25)
    desired = world.desired_count()
    report = _held(world, alarm_event(at=world.now))
    assert report["actions"] == []
    assert report["summary"]["held"].startswith("outside the disruption window")
    decision = next(c for c in report["candidates"] if c["resource"] == bad)
    assert decision["decision"] == "held"
    assert STATE_TAG not in world.tags(bad)
    assert world.desired_count() == desired
    told = [text for _, text in world.notifications()]
    assert any(f"{bad}: held, would cordon" in text for text in told), told

    manual = _held(world, {"action": "drain", "task": bad, "dry_run": False})
    assert [(a["resource"], a["action"], a["outcome"]) for a in manual["actions"]] == [
        (bad, "cordon", "done")
    ]
    assert world.tags(bad)[STATE_TAG] == "draining"


def test_a_cordon_begun_before_the_window_closed_is_finished_while_held(world: DrainerWorld) -> None:
    target = world.task_ids[2]
    world.slow(target, count=240, minutes=25)
    drained = world.invoke({"action": "drain", "task": target, "dry_run": False})
    assert [a["action"] for a in drained["actions"]] == ["cordon"]
    # As if the run that cordoned it had died half-way: the cordon's progress mark says "started"
    # (on the next tick, a minute later: ECS's reads show the marks as they are by then).
    world.ecs_client.tag_resource(
        resourceArn=world.task_arns[2], tags=[{"key": CORDON_TAG, "value": "started"}]
    )
    world.now += timedelta(minutes=1)
    report = _held(world, schedule_event(world.now))
    assert [(a["resource"], a["action"], a["outcome"]) for a in report["actions"]] == [
        (target, "complete-cordon", "done")
    ]
    assert "held" not in report["summary"]


def test_during_a_rolling_deployment_a_cordon_is_held_and_a_manual_drain_acts(world: DrainerWorld) -> None:
    """moto keeps one deployment per service: ``EcsRollingDeployment`` (a named fake) lists the old
    one beside the new PRIMARY, as ECS does during a rolling update."""
    deployment = EcsRollingDeployment(world.drainer_ecs_client())
    bad = world.task_ids[1]
    world.slow(bad, count=240, minutes=25)
    deployment.rolling = True
    report = world.invoke(alarm_event(at=world.now))
    assert report["actions"] == []
    assert "a deployment of" in report["summary"]["held"]
    assert next(c for c in report["candidates"] if c["resource"] == bad)["decision"] == "held"
    manual = world.invoke({"action": "drain", "task": bad, "dry_run": False})
    assert [a["action"] for a in manual["actions"]] == ["cordon"]
    deployment.rolling = False
    world.now += timedelta(minutes=1)
    after = world.invoke(schedule_event(world.now))
    assert "held" not in after["summary"]


@pytest.mark.parametrize("hold", ["outside the window", "during a deployment"])
def test_a_stop_is_held_like_a_cordon_and_goes_ahead_once_the_hold_ends(
    world: DrainerWorld, hold: str
) -> None:
    """The stop starts a disruption of its own (the task's last sessions end): held outside the
    disruption window and while the service deploys, as the cordon is."""
    deployment = EcsRollingDeployment(world.drainer_ecs_client())
    target = world.task_ids[3]
    drained = world.invoke({"action": "drain", "task": target, "dry_run": False})
    assert [a["action"] for a in drained["actions"]] == ["cordon"]
    world.run_service_scheduler()
    world.now += timedelta(minutes=1)
    deployment.rolling = hold == "during a deployment"
    report = _held(world, schedule_event(world.now)) if hold == "outside the window" else None
    report = report or world.invoke(schedule_event(world.now))
    assert report["actions"] == [], report["actions"]
    assert next(c for c in report["candidates"] if c["resource"] == target)["decision"] == "held"
    assert world.task(target)["lastStatus"] == "RUNNING"
    deployment.rolling = False
    world.now += timedelta(minutes=1)
    after = world.invoke(schedule_event(world.now))
    assert [(a["resource"], a["action"], a["outcome"]) for a in after["actions"]] == [
        (target, "stop", "done")
    ]
