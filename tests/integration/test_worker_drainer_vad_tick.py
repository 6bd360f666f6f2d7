"""The reconcile tick while the VAD alarm stays in ALARM (seed 000: at the 17:32 ALARM the starved
worker logged 2.3 warnings/min, below the attribution's 3; five minutes later it was over). moto's
CloudWatch holds the alarm's state, moto ECS/DynamoDB/SSM/SNS the rest, the real livekit-server the
rooms (see ``test_worker_drainer``)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws
from moto.moto_api import state_manager

from devkit.fakes.drainer_world import (
    DrainerWorld,
    alarm_event,
    build_world,
    put_page_stand_in,
    schedule_event,
)
from devkit.livekit_local import LocalLiveKit
from worker_drainer.decide.task_tags import STATE_TAG

pytestmark = pytest.mark.livekit
VAD_ALARM = "livekit-it-agents-vad-slow-inference"


@pytest.fixture
def world(livekit_server: LocalLiveKit) -> Iterator[DrainerWorld]:
    state_manager.set_transition("ecs::task", {"progression": "manual", "times": 1_000_000})
    try:
        with mock_aws():
            built = build_world(livekit_server, datetime.now(UTC) + timedelta(hours=2))
            put_page_stand_in(boto3.client("cloudwatch"), VAD_ALARM)
            yield built
    finally:
        state_manager.unset_transition("ecs::task")


def _set_alarm(state: str) -> None:
    boto3.client("cloudwatch").set_alarm_state(AlarmName=VAD_ALARM, StateValue=state, StateReason="test")


def _actions(report: dict[str, object]) -> list[tuple[str, str, str]]:
    return [(a["resource"], a["action"], a["outcome"]) for a in report["actions"]]  # type: ignore[index, union-attr]


def test_a_worker_crossing_the_rate_after_the_alarm_is_cordoned_by_a_tick(world: DrainerWorld) -> None:
    bad = world.task_ids[0]
    world.slow(bad, count=40, minutes=25)  # 1.6/min: below the attribution's rate at the transition
    _set_alarm("ALARM")
    at_transition = world.invoke(alarm_event(at=world.now))
    assert at_transition["actions"] == []
    assert STATE_TAG not in world.tags(bad)

    world.now += timedelta(minutes=5)
    world.slow(bad, count=120, minutes=5)  # the backlog grows: now over the rate
    tick = world.invoke(schedule_event(world.now))
    assert tick["trigger"]["kind"] == "schedule"
    assert tick["trigger"]["detail"]["vad_alarm"].startswith("ALARM since ")
    assert _actions(tick) == [(bad, "cordon", "done")], tick
    assert world.tags(bad)[STATE_TAG] == "draining"
    assert all(STATE_TAG not in world.tags(t) for t in world.task_ids[1:])


def test_a_tick_after_the_alarm_cleared_starts_nothing(world: DrainerWorld) -> None:
    bad = world.task_ids[0]
    world.slow(bad, count=240, minutes=25)
    _set_alarm("OK")
    tick = world.invoke(schedule_event(world.now))
    assert tick["actions"] == []
    assert "vad_alarm" not in tick["trigger"]["detail"]
    assert STATE_TAG not in world.tags(bad)


def test_a_tick_during_the_alarm_keeps_dry_run_and_the_fleet_wide_verdict(world: DrainerWorld) -> None:
    _set_alarm("ALARM")
    bad = world.task_ids[0]
    world.slow(bad, count=240, minutes=25)
    world.set_mode("dry-run")
    dry = world.invoke(schedule_event(world.now))
    assert dry["actions"] == []
    assert next(c for c in dry["candidates"] if c["resource"] == bad)["decision"] == "would-act"
    world.set_mode("enforce")
    for task_id in world.task_ids[1:3]:
        world.slow(task_id, count=240, minutes=25)
    fleet_wide = world.invoke(schedule_event(world.now))
    assert fleet_wide["summary"]["fleet_wide"] is True
    assert fleet_wide["actions"] == []
    assert all(STATE_TAG not in world.tags(t) for t in world.task_ids)
