"""The drainer's scheduled tick finds one silent task by its own first-audio timeouts (per-task TTS
reach, no VAD symptom) and cordons it on moto ECS; healthy traffic and a fleet-wide silence cordon
nothing, reading the service's running tasks once per tick. Under the service profile, a per-task
look whose Logs Insights query takes the profile's p99 still decides and cordons
(``ProfiledWorkerLogs``: the real adapter against the Insights stand-in, on a simulated clock that
the handler's own deadline rides)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from devkit.fakes.drainer_world import (
    DrainerWorld,
    moto_world,
    schedule_event,
    stream_of,
    tts_record,
)
from devkit.fakes.profiled_logs import ProfiledWorkerLogs
from devkit.livekit_local import LocalLiveKit
from devkit.process_work import own_monotonic
from livekit_fleet_remediation.offline.log_export import LogEvent
from livekit_fleet_remediation.offline.service_profile import AWS_PROFILE, SimulatedClock
from worker_drainer.adapters.ecs_model import EcsTask
from worker_drainer.decide.task_tags import STATE_TAG
from worker_drainer.read.silent_task_tick import PER_TASK_REACH


@pytest.fixture
def world(livekit_server: LocalLiveKit) -> Iterator[DrainerWorld]:
    with moto_world(livekit_server) as built:
        yield built


def _responses(world: DrainerWorld, task_id: str, count: int, *, silent: bool) -> None:
    """``count`` responses over the last two minutes: each gets its first frame, or times out."""
    for n in range(count):
        job = f"AJ_{task_id[:6]}_{n}"
        at = world.now - timedelta(seconds=110 - n * 100 / count)
        world.events.append(LogEvent(stream_of(task_id), at, tts_record("agent_response_started", job)))
        answer = "tts_first_audio_timeout" if silent else "tts_node_first_audio_frame"
        world.events.append(LogEvent(stream_of(task_id), at + timedelta(seconds=3), tts_record(answer, job)))


def _cordons(report: dict[str, object]) -> list[str]:
    actions = report["actions"]
    assert isinstance(actions, list)
    return [a["resource"] for a in actions if a["action"] == "cordon"]


def test_a_task_whose_own_responses_time_out_is_cordoned_by_the_tick(world: DrainerWorld) -> None:
    silent = world.task_ids[2]
    for task in world.task_ids:
        _responses(world, task, 12, silent=False)
    quiet = world.invoke(schedule_event(world.now))
    assert _cordons(quiet) == []
    assert "task_reach" in quiet["trigger"]["detail"]

    world.now += timedelta(minutes=1)
    _responses(world, silent, 8, silent=True)
    # Its first sighting: the first task of a spreading failure looks the same, so it waits a tick.
    first = world.invoke(schedule_event(world.now))
    assert _cordons(first) == []
    assert first["trigger"]["detail"]["task_reach"].startswith("first sighting")

    world.now += timedelta(minutes=1)
    _responses(world, silent, 8, silent=True)
    report = world.invoke(schedule_event(world.now))
    assert report["trigger"]["detail"]["silent_task"] == silent
    assert _cordons(report) == [silent], report
    reason = next(c["reason"] for c in report["candidates"] if c["resource"] == silent)
    assert PER_TASK_REACH in reason
    assert world.tags(silent)[STATE_TAG] == "draining"


def test_a_tick_reads_the_running_tasks_once_and_a_cordon_re_checks_them_once(
    world: DrainerWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The silent-task look and the snapshot judge one listing; the cordon re-reads the fleet for
    its guardrails right before it acts."""
    silent = world.task_ids[2]
    for task in world.task_ids:
        _responses(world, task, 12, silent=False)
    listings: list[int] = []
    quiet = world.invoke(schedule_event(world.now), _counting(world, listings, monkeypatch))
    assert _cordons(quiet) == []
    assert listings == [len(world.task_ids)]

    world.now += timedelta(minutes=1)
    _responses(world, silent, 8, silent=True)
    world.invoke(schedule_event(world.now))  # its first sighting

    listings.clear()
    world.now += timedelta(minutes=1)
    _responses(world, silent, 8, silent=True)
    report = world.invoke(schedule_event(world.now), _counting(world, listings, monkeypatch))
    assert _cordons(report) == [silent], report
    assert listings == [len(world.task_ids)] * 2


def _counting(world: DrainerWorld, listings: list[int], monkeypatch: pytest.MonkeyPatch) -> Any:
    """The world's dependencies, with each listing of the running tasks counted."""
    deps = world.dependencies()
    listed = deps.ecs.running_tasks

    def counted() -> list[EcsTask]:
        tasks = listed()
        listings.append(len(tasks))
        return tasks

    monkeypatch.setattr(deps.ecs, "running_tasks", counted)
    return deps


def test_every_task_silent_at_once_is_fleet_wide_and_cordons_nothing(world: DrainerWorld) -> None:
    for task in world.task_ids:
        _responses(world, task, 8, silent=True)
    report = world.invoke(schedule_event(world.now))
    assert "silent_task" not in report["trigger"]["detail"]
    assert _cordons(report) == []


def test_a_per_task_look_whose_query_takes_the_profiles_p99_still_cordons_the_silent_task(
    world: DrainerWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = SimulatedClock(real=own_monotonic)
    monkeypatch.setattr(time, "monotonic", clock.monotonic)  # the handler's deadline sees the waits
    silent = world.task_ids[2]
    for task in world.task_ids:
        _responses(world, task, 12, silent=False)
    world.now += timedelta(minutes=1)
    _responses(world, silent, 8, silent=True)
    world.invoke(schedule_event(world.now))  # its first sighting
    world.now += timedelta(minutes=1)
    _responses(world, silent, 8, silent=True)
    logs = ProfiledWorkerLogs(world.events, clock)
    deps = world.dependencies()
    deps.worker_logs = logs
    started = clock.monotonic()

    report = world.invoke(schedule_event(world.now), deps)

    assert report["trigger"]["detail"]["silent_task"] == silent, report
    assert _cordons(report) == [silent], report
    assert world.tags(silent)[STATE_TAG] == "draining"
    (look,) = logs.client.queries.values()
    p99 = AWS_PROFILE.insights_queue_and_run_seconds(AWS_PROFILE.per_task_look_bytes, 0.99)
    assert look.polls >= p99  # one poll a second, Scheduled then Running, until Complete
    assert not look.stopped
    assert clock.monotonic() - started >= p99
