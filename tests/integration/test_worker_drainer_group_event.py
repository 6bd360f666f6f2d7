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
