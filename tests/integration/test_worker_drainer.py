"""The worker drainer end to end: moto ECS (plus ``FakeEcsTaskProtection``: moto has no task
protection), moto DynamoDB/SSM/SNS, agent logs evaluated offline (moto has no Logs Insights
statistics), the real livekit-server, and a real livekit-agents worker standing in for the
degraded task — its ``/worker`` endpoint reports active jobs, and its ``DrainAwareLoad`` reads the
task's tags from moto through ``FakeEcsTaskMetadataEndpoint``."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from livekit import api
from moto import mock_aws
from moto.moto_api import state_manager

from devkit.fakes.agent_worker import RunningAgentWorker
from devkit.fakes.drainer_world import (
    CHAT_TOPIC,
    CLUSTER,
    TOPIC,
    DrainerWorld,
    alarm_event,
    build_world,
    schedule_event,
    suspect_event,
)
from devkit.fakes.ecs_fakes import EcsThrottling, FakeEcsTaskMetadataEndpoint
from devkit.livekit_local import LocalLiveKit, free_port
from fleet_remediation.core.errors import ConcurrentActionError
from fleet_remediation.core.report_bounds import MAX_STRING_CHARS
from fleet_remediation.core.report_model import Mode
from livekit_fleet_agent import DrainAwareLoad, SlowInferenceCounter, TaskTagReader
from tests.message_samples import save_sample
from worker_drainer.decide.task_tags import CAPACITY_TAG, COOLDOWN_TAG, STATE_TAG

pytestmark = pytest.mark.livekit


@pytest.fixture
def world(livekit_server: LocalLiveKit) -> Iterator[DrainerWorld]:
    # moto moves a described task one lifecycle step per DescribeTasks by default; keep them RUNNING.
    state_manager.set_transition("ecs::task", {"progression": "manual", "times": 1_000_000})
    try:
        with mock_aws():
            # Two hours ahead of the wall clock: the LiveKit rooms created now look two hours old.
            yield build_world(livekit_server, datetime.now(UTC) + timedelta(hours=2))
    finally:
        state_manager.unset_transition("ecs::task")


async def _create_and_dispatch(server: LocalLiveKit, room: str, agent_name: str) -> str:
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as client:
        created = await client.room.create_room(api.CreateRoomRequest(name=room))
        await client.agent_dispatch.create_dispatch(
            api.CreateAgentDispatchRequest(room=room, agent_name=agent_name)
        )
        return str(created.sid)


async def _delete_room(server: LocalLiveKit, room: str) -> None:
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as client:
        await client.room.delete_room(api.DeleteRoomRequest(room=room))


def _actions(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(a["resource"], a["action"], a["outcome"]) for a in report["actions"]]


def test_reap_then_cordon_then_drain_then_stop_on_a_real_worker(world: DrainerWorld) -> None:
    bad = world.task_ids[0]
    agent_name = f"drain-{uuid.uuid4().hex[:6]}"
    world.reaper_policy = {
        "max_age_minutes": 60,
        "rules": [{"name_pattern": "lesson-live-.*", "max_age_minutes": 600}],
    }
    metadata = FakeEcsTaskMetadataEndpoint(world.task_arns[0], lambda: world.tags(bad)).start()
    reader = TaskTagReader(metadata.url, cache_seconds=0.2)
    worker = RunningAgentWorker(
        world.livekit.http_url,
        world.livekit.ws_url,
        world.livekit.api_key,
        world.livekit.api_secret,
        agent_name,
        load_fnc=DrainAwareLoad(max_jobs=4, tag_reader=reader, slow_inference=SlowInferenceCounter()),
    ).start()
    world.worker_urls[bad] = worker.http_url
    try:
        zombie, lesson = f"lesson-zombie-{agent_name}", f"lesson-live-{agent_name}"
        for jobs, room in enumerate((zombie, lesson), start=1):
            # One offer at a time, once livekit-server has heard the worker take jobs again: it
            # reports "full" while an accepted job is still launching, and an offer then is dropped.
            assert worker.wait_for(worker.told_available, 10)
            sid = asyncio.run(_create_and_dispatch(world.livekit, room, agent_name))
            world.job_request(bad, f"AJ_{room}", room, sid, minutes_ago=150)
            assert worker.wait_for(lambda jobs=jobs: worker.worker_info().get("active_jobs") == jobs, 10)
        world.slow(bad, count=240, minutes=25)
        desired = world.desired_count()

        # The VAD alarm: attribution finds the task; the first rung deletes its over-age room only.
        started = time.perf_counter()
        first = world.invoke(alarm_event(at=world.now))
        assert first["status"] == "ok", first
        assert _actions(first) == [(bad, "reap", "done")]
        assert first["actions"][0]["reason"] == f"reaped 1 room(s) ({zombie}); cordon if still bad"
        # The room listing, then the reap's re-check and its delete.
        assert first["summary"]["calls"]["livekit"] == 3
        assert world.tags(bad)[STATE_TAG] == "reaped"
        assert worker.wait_for(lambda: worker.worker_info().get("active_jobs") == 1, 10)

        # Still slow after the grace period: the next tick cordons it.
        world.now += timedelta(minutes=5)
        world.slow(bad, count=30, minutes=4)
        second = world.invoke(schedule_event(world.now))
        cordon_seconds = time.perf_counter() - started
        assert _actions(second) == [(bad, "cordon", "done")], second
        tags = world.tags(bad)
        assert tags[STATE_TAG] == "draining"
        assert tags[CAPACITY_TAG] == "desired-count"
        assert world.protection.protected[world.task_arns[0]] is False
        assert world.desired_count() == desired + 1
        # ECS's scheduler starts the replacement (moto has none: the world does what ECS would).
        assert len(world.run_service_scheduler()) == 1
        # The agent sees its own tag and stops taking jobs; its running lesson continues.
        assert worker.wait_for(lambda: worker.worker_info().get("worker_load") == 1.0, 5)

        # Draining: /worker still reports the lesson, so the task keeps running.
        world.now += timedelta(minutes=1)
        third = world.invoke(schedule_event(world.now))
        assert third["actions"] == []
        candidate = next(c for c in third["candidates"] if c["resource"] == bad)
        assert candidate["facts"]["active_jobs"] == 1

        # The lesson ends; the next tick stops the task and gives the extra capacity back.
        asyncio.run(_delete_room(world.livekit, lesson))
        assert worker.wait_for(lambda: not worker.worker_info().get("active_jobs"), 10)
        world.now += timedelta(minutes=1)
        fourth = world.invoke(schedule_event(world.now))
        assert _actions(fourth) == [(bad, "stop", "done")], fourth
        stopped = world.task(bad)
        assert stopped["lastStatus"] == "STOPPED"
        assert stopped["stoppedReason"].startswith("livekit-drainer: drained")
        assert world.desired_count() == desired
        assert [entry["action"] for entry in sorted(world.audit(bad), key=lambda e: e["sk"])] == [
            "reap",
            "cordon",
            "stop",
        ]
        print(f"alarm event to cordoned task (two invocations, reap first): {cordon_seconds:.2f}s")
    finally:
        worker.stop()
        metadata.stop()


# How long a thread waits for the other's step before the test fails (not a race: a hang guard).
HANG_GUARD_SECONDS = 60


class OrderedLedger:
    """The drainer's ledger with the two invocations' interleaving fixed, so that the test does not
    depend on the machine's load: both have planned the cordon before either takes the lease; the
    first takes it; the second asks while the first holds it (and is refused); only then does the
    first release it. Every other call goes to the real ledger."""

    def __init__(
        self, ledger: Any, first: bool, both_planned: threading.Barrier, order: dict[str, threading.Event]
    ) -> None:
        self._ledger, self._first, self._both_planned, self._order = ledger, first, both_planned, order
        self._planned = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ledger, name)

    def _wait(self, step: str) -> None:
        assert self._order[step].wait(HANG_GUARD_SECONDS), f"the other invocation never reached {step!r}"

    def acquire(self, *args: Any, **kwargs: Any) -> Any:
        if not self._planned:
            self._planned = True
            self._both_planned.wait(HANG_GUARD_SECONDS)
        if self._first:
            lease = self._ledger.acquire(*args, **kwargs)
            self._order["first holds"].set()
            return lease
        self._wait("first holds")
        try:
            return self._ledger.acquire(*args, **kwargs)
        except ConcurrentActionError:
            self._order["second refused"].set()
            raise

    def release(self, lease: Any) -> None:
        if self._first:
            self._wait("second refused")
        self._ledger.release(lease)


def test_two_concurrent_alarm_invocations_cordon_once(world: DrainerWorld) -> None:
    bad = world.task_ids[1]
    world.slow(bad, count=240, minutes=25)
    desired = world.desired_count()
    reports: list[dict[str, Any]] = []
    both_planned = threading.Barrier(2)
    order = {"first holds": threading.Event(), "second refused": threading.Event()}

    def invoke(first: bool) -> None:
        deps = world.dependencies()
        deps = dataclasses.replace(deps, ledger=OrderedLedger(deps.ledger, first, both_planned, order))
        reports.append(world.invoke(alarm_event(at=world.now), deps))

    threads = [threading.Thread(target=invoke, args=(first,)) for first in (True, False)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(HANG_GUARD_SECONDS)
    assert order["second refused"].is_set(), (
        "the second invocation asked for the lease while the first held it"
    )
    outcomes = sorted(
        outcome for report in reports for (_, action, outcome) in _actions(report) if action == "cordon"
    )
    assert outcomes == ["already-done", "done"], reports
    assert world.desired_count() == desired + 1
    assert [enabled for arn, enabled in world.protection.updates if arn == world.task_arns[1]] == [
        True,
        False,
    ]


def test_a_recovered_task_is_unmarked_and_everything_is_put_back(world: DrainerWorld) -> None:
    # Cordoned by VAD attribution (a hand drain is never undone by the robot: see the test below).
    target = world.task_ids[2]
    world.slow(target, count=240, minutes=25)
    desired = world.desired_count()
    drained = world.invoke(alarm_event(at=world.now))
    assert _actions(drained) == [(target, "cordon", "done")]
    assert world.desired_count() == desired + 1

    # No slow inference at all for longer than recovery_minutes: the next tick undoes the cordon.
    world.now += timedelta(minutes=11)
    undone = world.invoke(schedule_event(world.now))
    assert _actions(undone) == [(target, "undo", "done")], undone
    tags = world.tags(target)
    assert STATE_TAG not in tags
    assert COOLDOWN_TAG in tags
    assert world.protection.protected[world.task_arns[2]] is True
    assert world.desired_count() == desired


def test_ecs_throttling_is_a_typed_error_and_changes_nothing(world: DrainerWorld) -> None:
    target = world.task_ids[3]
    client = world.own_ecs_client()
    throttled = EcsThrottling(client, "TagResource", times=1)
    desired = world.desired_count()
    report = world.invoke(
        {"action": "drain", "task": target, "dry_run": False}, world.dependencies(ecs_client=client)
    )
    action = report["actions"][0]
    assert (action["action"], action["outcome"]) == ("cordon", "failed")
    assert action["error"]["code"] == "AwsApiError"
    assert "ThrottlingException" in action["error"]["message"]
    assert throttled.throttled == 1
    assert STATE_TAG not in world.tags(target)
    assert world.desired_count() == desired
    assert world.protection.protected[world.task_arns[3]] is True


def test_livekit_down_is_reported_and_the_degraded_task_is_still_cordoned(world: DrainerWorld) -> None:
    bad = world.task_ids[0]
    world.slow(bad, count=240, minutes=25)
    world.job_request(bad, "AJ_1", "lesson-gone", "RM_1", minutes_ago=150)
    world.livekit_url = f"http://127.0.0.1:{free_port()}"
    report = world.invoke(alarm_event(at=world.now))
    assert report["status"] == "partial"
    assert [e["code"] for e in report["errors"]] == ["LiveKitUnavailable"]
    assert _actions(report) == [(bad, "cordon", "done")]
    assert world.tags(bad)[STATE_TAG] == "draining"


def test_dry_run_and_kill_switch_change_nothing(world: DrainerWorld) -> None:
    bad = world.task_ids[0]
    world.slow(bad, count=240, minutes=25)
    world.set_mode("dry-run")
    dry = world.invoke(alarm_event(at=world.now))
    assert dry["mode"] == "dry-run"
    assert dry["actions"] == []
    assert next(c for c in dry["candidates"] if c["resource"] == bad)["decision"] == "would-act"
    world.set_mode("enforce")
    plan = world.invoke({"action": "plan", "dry_run": False})
    assert plan["mode"] == "dry-run"
    assert plan["actions"] == []
    world.set_mode("off")
    off = world.invoke(alarm_event(at=world.now))
    assert off["mode"] == "off"
    assert off["candidates"] == []
    assert STATE_TAG not in world.tags(bad)


def test_fleet_wide_slowness_notifies_and_drains_nothing(world: DrainerWorld) -> None:
    for task_id in world.task_ids[:3]:
        world.slow(task_id, count=240, minutes=25)
    report = world.invoke(alarm_event(at=world.now))
    assert report["summary"]["fleet_wide"] is True
    assert report["actions"] == []
    # One message, on each channel: the e-mail text and the chat JSON.
    assert len(report["notifications"]) == 2
    (email,), (chat,) = world.received(TOPIC), world.received(CHAT_TOPIC)
    assert email["Subject"] == "[it/agents] worker drainer drained nothing: slow inference is fleet-wide"
    save_sample("drainer-fleet-wide", email, chat)


def test_throttled_capacity_raise_leaves_no_debt_and_the_count_unchanged(world: DrainerWorld) -> None:
    target = world.task_ids[3]
    client = world.own_ecs_client()
    EcsThrottling(client, "UpdateService", times=1)
    desired = world.desired_count()
    report = world.invoke(
        {"action": "drain", "task": target, "dry_run": False}, world.dependencies(ecs_client=client)
    )
    assert report["actions"][0]["outcome"] == "failed"
    assert "UpdateService" in report["actions"][0]["reason"]
    # Marked (the agent stops taking jobs) but no extra capacity, and no debt that would lower it later.
    assert world.tags(target)[CAPACITY_TAG] == "none"
    assert world.desired_count() == desired
    assert world.dependencies().ledger.capacity_debts() == []


class SwitchTurnedOffMidRun:
    """Reads enforce once (the run's mode), then off: the executor re-reads it before each step."""

    def __init__(self) -> None:
        self.reads = 0

    def read(self) -> Mode:
        self.reads += 1
        return Mode.ENFORCE if self.reads == 1 else Mode.OFF


def test_the_kill_switch_is_read_again_before_each_step(world: DrainerWorld) -> None:
    target = world.task_ids[0]
    deps = world.dependencies()
    deps.mode_switch = SwitchTurnedOffMidRun()
    report = world.invoke({"action": "drain", "task": target, "dry_run": False}, deps)
    assert _actions(report) == [(target, "cordon", "skipped")]
    assert report["actions"][0]["reason"] == "kill switch is now off"
    assert STATE_TAG not in world.tags(target)


def test_an_expired_lease_is_taken_over_and_a_live_one_is_not(world: DrainerWorld) -> None:
    ledger = world.dependencies().ledger
    ledger.acquire("service#svc", "first", world.now, ttl_seconds=60)
    with pytest.raises(ConcurrentActionError):
        ledger.acquire("service#svc", "second", world.now + timedelta(seconds=59), ttl_seconds=60)
    taken = ledger.acquire("service#svc", "second", world.now + timedelta(seconds=61), ttl_seconds=60)
    assert taken.holder == "second"


def test_a_suspect_worker_event_cordons_that_worker_without_a_vad_outlier(world: DrainerWorld) -> None:
    # TTS never reaches the children on this worker, but its VAD warnings alone would not single it out.
    suspect = world.task_ids[1]
    world.slow(suspect, count=3, minutes=25, delay=0.5)
    report = world.invoke(suspect_event(suspect, world.now))
    assert report["trigger"]["kind"] == "suspect-worker"
    candidate = next(c for c in report["candidates"] if c["resource"] == suspect)
    assert "suspect worker (livekit-it-agents-tts-reach" in candidate["reason"]
    assert _actions(report) == [(suspect, "cordon", "done")]
    assert world.tags(suspect)[STATE_TAG] == "draining"


def test_a_suspect_worker_that_is_not_running_is_reported_and_nothing_changes(world: DrainerWorld) -> None:
    desired = world.desired_count()
    report = world.invoke(suspect_event("0123456789abcdef0123456789abcdef", world.now))
    skipped = next(c for c in report["candidates"] if c["resource"] == "0123456789abcdef0123456789abcdef")
    assert skipped["decision"] == "skip"
    assert "not a RUNNING task" in skipped["reason"]
    assert report["actions"] == []
    assert world.desired_count() == desired
    assert all(STATE_TAG not in world.tags(task_id) for task_id in world.task_ids)


@pytest.mark.parametrize(
    ("stop_reason", "refused"),
    [("livekit-drainer: drained: no active jobs", False), ("Scaling activity initiated by deployment", True)],
)
def test_a_suspect_worker_the_drainer_already_stopped_is_no_error(
    world: DrainerWorld, stop_reason: str, refused: bool
) -> None:
    """A later page's analysis still sees a stopped worker's failed sessions and names it again: if
    the drainer stopped it, there is nothing left to do and nothing failed; a task stopped by anyone
    else is still refused as not running."""
    target = world.task_ids[1]
    world.ecs_client.stop_task(cluster=CLUSTER, task=target, reason=stop_reason)
    report = world.invoke(suspect_event(target, world.now))
    skipped = next(c for c in report["candidates"] if c["resource"] == target)
    assert skipped["decision"] == "skip"
    assert report["actions"] == []
    if refused:
        assert report["status"] == "failed"
        assert [e["code"] for e in report["errors"]] == ["UntrustedEvent"]
        assert "not a RUNNING task" in skipped["reason"]
    else:
        assert report["status"] == "ok", report["errors"]
        assert skipped["reason"].startswith(
            "suspect worker already stopped by the drainer (livekit-drainer: "
        )


def test_a_suspect_worker_event_with_missing_fields_is_a_typed_error(world: DrainerWorld) -> None:
    event = suspect_event(world.task_ids[1], world.now)
    del event["detail"]["task_id"]
    report = world.invoke(event)
    assert [e["code"] for e in report["errors"]] == ["InvalidEvent"]
    assert "task_id" in report["errors"][0]["message"]
    assert report["actions"] == []


def test_an_unknown_alarm_is_a_typed_error_and_drains_nothing(world: DrainerWorld) -> None:
    bad = world.task_ids[0]
    world.slow(bad, count=240, minutes=25)
    report = world.invoke(alarm_event(name="someone-elses-alarm", at=world.now))
    assert [e["code"] for e in report["errors"]] == ["UnknownAlarm"]
    assert report["actions"] == []
    assert STATE_TAG not in world.tags(bad)


def test_a_1mb_task_in_a_manual_payload_is_not_echoed(world: DrainerWorld) -> None:
    # Manual strings are bounded (core.routing.MANUAL_STRING_MAX_CHARS): rejected, quoted in excerpt.
    report = world.invoke({"dry_run": True, "action": "drain", "task": "x" * 1_000_000})
    serialized = json.dumps(report)
    assert [e["code"] for e in report["errors"]] == ["InvalidEvent"]
    assert len(serialized) < MAX_STRING_CHARS
    assert "x" * 100 not in serialized
