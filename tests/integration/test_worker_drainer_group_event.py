"""A failure shared by a group (here the TTS endpoint the agents' summary lines name) is a group
event on every path to the drainer: the scheduled tick and a suspect-worker event both notify,
name the group and drain nobody, and the hold outlives the failure (moto ECS and DynamoDB, the
real livekit-server; the agents' lines as the agent package writes them)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from devkit.fakes.drainer_world import DrainerWorld, moto_world, schedule_event, stream_of, suspect_event
from devkit.livekit_local import LocalLiveKit
from livekit_fleet_remediation.offline.log_export import LogEvent
from worker_drainer.decide.task_tags import STATE_TAG
from worker_drainer.read.silent_task_tick import GROUP_EVENT

TASKS = 11
FAILING_ENDPOINT = "tts/us-east-1"


@pytest.fixture
def world(livekit_server: LocalLiveKit) -> Iterator[DrainerWorld]:
    with moto_world(livekit_server, tasks=TASKS) as built:
        yield built


def _lines(world: DrainerWorld, task_id: str, endpoint: str, *, silent: bool, responses: int = 10) -> None:
    """Two minutes of one task's lines: a summary per 30 s, and a timeout line per silent answer."""
    stream = stream_of(task_id)
    job = f"AJ_{task_id[:8]}"
    for half_minute in range(4):
        at = world.now - timedelta(seconds=115 - 30 * half_minute)
        count = responses // 4 + (half_minute < responses % 4)
        summary = {"message": "agent_tts_summary", "name": "livekit_fleet_agent.signals", "job_id": job}
        summary |= {"tts_endpoint": endpoint, "responses": count, "first_frames": 0 if silent else count}
        world.events.append(LogEvent(stream, at, summary))
        if silent:
            for n in range(count):
                timeout = {"message": "tts_first_audio_timeout", "name": "livekit_fleet_agent.signals"}
                timeout |= {"job_id": job, "tts_endpoint": endpoint, "speech_id": f"speech_{half_minute}_{n}"}
                world.events.append(LogEvent(stream, at + timedelta(seconds=10), timeout))


def _regional_outage(world: DrainerWorld) -> list[str]:
    """Two tasks use the failing endpoint and answer nothing; nine elsewhere are healthy."""
    failing = world.task_ids[:2]
    for task in world.task_ids:
        endpoint = FAILING_ENDPOINT if task in failing else "tts/eu-west-1"
        _lines(world, task, endpoint, silent=task in failing)
    return failing


def _cordons(report: dict[str, Any]) -> list[str]:
    return [a["resource"] for a in report["actions"] if a["action"] == "cordon"]


def test_the_tick_names_the_group_and_drains_nobody(world: DrainerWorld) -> None:
    _regional_outage(world)
    report = world.invoke(schedule_event(world.now))
    held = report["trigger"]["detail"][GROUP_EVENT]
    assert f"2 of the 2 tasks with TTS endpoint {FAILING_ENDPOINT} fail" in held
    assert "silent_task" not in report["trigger"]["detail"]
    assert _cordons(report) == []
    assert all(world.tags(task).get("livekit-remediation:state") != "draining" for task in world.task_ids)


def test_a_suspect_worker_event_for_a_task_of_the_group_drains_nobody(world: DrainerWorld) -> None:
    failing = _regional_outage(world)
    # What the responder would send, naming one task of the group as the worker.
    report = world.invoke(suspect_event(failing[0], world.now))
    assert FAILING_ENDPOINT in report["trigger"]["detail"][GROUP_EVENT]
    assert _cordons(report) == []
    assert report["summary"].get("held", "").startswith("group event")


def test_the_group_event_holds_after_the_failure_is_gone(world: DrainerWorld) -> None:
    failing = _regional_outage(world)
    world.invoke(schedule_event(world.now))
    # Ten minutes later the endpoint is back for one task only: alone it would be a suspect now,
    # but the group event still holds (group_hold_minutes, 15 by default).
    world.now += timedelta(minutes=10)
    world.events.clear()
    for task in world.task_ids:
        _lines(world, task, "tts/eu-west-1", silent=task == failing[1])
    report = world.invoke(schedule_event(world.now))
    assert FAILING_ENDPOINT in report["trigger"]["detail"][GROUP_EVENT]
    assert _cordons(report) == []
    assert "silent_task" not in report["trigger"]["detail"]


def _undos(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(a["resource"], a["reason"]) for a in report["actions"] if a["action"] == "undo"]


def test_a_cordon_made_before_the_group_was_seen_is_undone_when_it_is(world: DrainerWorld) -> None:
    first, second = world.task_ids[:2]
    desired = world.desired_count()
    # One task of the endpoint answers nothing for the whole window: alone, it is cordoned at once.
    for task in world.task_ids:
        _lines(
            world,
            task,
            FAILING_ENDPOINT if task in (first, second) else "tts/eu-west-1",
            silent=task == first,
        )
    alone = world.invoke(schedule_event(world.now))
    assert _cordons(alone) == [first], alone
    assert world.tags(first)[STATE_TAG] == "draining"
    assert world.desired_count() == desired + 1  # its replacement's capacity
    world.run_service_scheduler()

    # A minute later the second task of the endpoint fails too: the group is seen, the first
    # task's cordon is undone through the undo step, told with the group's evidence.
    world.now += timedelta(minutes=1)
    world.events.clear()
    for task in world.task_ids:
        failing = task in (first, second)
        _lines(world, task, FAILING_ENDPOINT if failing else "tts/eu-west-1", silent=failing)
    seen = world.invoke(schedule_event(world.now))
    assert FAILING_ENDPOINT in seen["trigger"]["detail"][GROUP_EVENT]
    assert _cordons(seen) == []
    ((undone, done),) = _undos(seen)
    assert undone == first
    why = next(c["reason"] for c in seen["candidates"] if c["resource"] == first)
    assert "shared, not its own" in why
    assert f"TTS endpoint {FAILING_ENDPOINT}" in why
    assert world.tags(first).get(STATE_TAG) != "draining"
    assert any(f"TTS endpoint {FAILING_ENDPOINT}" in text for _, text in world.notifications())
    # The replacement's capacity is given back with the undo: nothing leaks.
    assert f"desired count {desired + 1} -> {desired}" in done
    assert world.desired_count() == desired


def test_a_suspect_event_while_a_second_task_begins_failing_drains_nobody(world: DrainerWorld) -> None:
    # The tick sees one task failing (its first sighting); a minute later a second task fails
    # beside it (two of the endpoint's four tasks: not yet a group beyond chance) when the
    # responder's suspect-worker event for the first arrives: a group may be forming.
    first, second = world.task_ids[:2]
    endpoint_of = {
        task: FAILING_ENDPOINT if task in world.task_ids[:4] else "tts/eu-west-1" for task in world.task_ids
    }
    for task in world.task_ids:
        _lines(world, task, endpoint_of[task], silent=task == first, responses=40)
    # Its answers before the failure, still in the window: the failure began inside it.
    summary = {"message": "agent_tts_summary", "name": "livekit_fleet_agent.signals", "job_id": "AJ_before"}
    summary |= {"tts_endpoint": FAILING_ENDPOINT, "responses": 10, "first_frames": 10}
    world.events.append(LogEvent(stream_of(first), world.now - timedelta(seconds=170), summary))
    sighted = world.invoke(schedule_event(world.now))
    assert sighted["trigger"]["detail"]["task_reach"].startswith("first sighting"), sighted["trigger"]
    world.now += timedelta(minutes=1)
    world.events.clear()
    for task in world.task_ids:
        _lines(world, task, endpoint_of[task], silent=task in (first, second), responses=40)
    report = world.invoke(suspect_event(first, world.now))
    assert "a group may be forming" in report["trigger"]["detail"][GROUP_EVENT], report["trigger"]
    assert _cordons(report) == []
