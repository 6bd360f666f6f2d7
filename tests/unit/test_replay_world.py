"""The replay's simulated world behaves as the adapter protocols promise, built from log lines."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from fleet_remediation.adapters.livekit_rooms import NOT_FOUND
from fleet_remediation.core.errors import ConcurrentActionError, LiveKitApiError
from livekit_fleet_remediation.offline.log_export import LogEvent
from livekit_fleet_remediation.offline.replay_ecs import SimulatedEcsService, SimulatedWorkerProbe
from livekit_fleet_remediation.offline.replay_stores import SimulatedLedger
from livekit_fleet_remediation.offline.replay_world import (
    SimulatedClock,
    SimulatedLiveKit,
    SimulatedRoomService,
    jobs_from_events,
)
from worker_drainer.adapters.ledger import CapacityDebt, Phase
from worker_drainer.decide.task_tags import SINCE_TAG

T0 = datetime(2026, 9, 15, 15, 0, tzinfo=UTC)
A, B = "agent/agent-svc/taskaaaa", "agent/agent-svc/taskbbbb"


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def request(stream: str, minutes: float, job: str, room: str) -> LogEvent:
    record = {
        "message": "received job request",
        "job_id": job,
        "room": room,
        "room_id": f"RM_{room}",
        "pid": 7,
    }
    return LogEvent(stream, at(minutes), record)


def exiting(stream: str, minutes: float, job: str | None) -> LogEvent:
    record = {"message": "process exiting", "reason": "job completed", "pid": 900}
    if job:
        record["job_id"] = job
    return LogEvent(stream, at(minutes), record)


EVENTS = sorted(
    [
        request(A, 0, "AJ_zombie", "test-zombie"),
        request(A, 10, "AJ_1", "lesson-1"),
        exiting(A, 20, "AJ_1"),
        exiting(A, 21, None),  # an idle process exits: it ends no job
        LogEvent(B, at(15), {"message": "inference is slower than realtime", "delay": 1.0}),
        request(A, 40, "AJ_2", "lesson-2"),
        exiting(A, 50, "AJ_2"),
    ],
    key=lambda e: e.at,
)


def test_rooms_live_from_job_request_to_process_exit_or_deletion() -> None:
    clock = SimulatedClock(at(5))
    livekit = SimulatedLiveKit(jobs_from_events(EVENTS), clock)
    service = SimulatedRoomService(livekit)

    def names() -> list[str]:
        return sorted(room.name for room in asyncio.run(service.list_rooms()))

    assert names() == ["test-zombie"]
    clock.now = at(15)
    assert names() == ["lesson-1", "test-zombie"]
    room = asyncio.run(service.list_rooms(["test-zombie"]))[0]
    assert (room.sid, room.created_at) == ("RM_test-zombie", at(0))
    clock.now = at(25)
    assert names() == ["test-zombie"]  # the job with no exit line lives on
    asyncio.run(service.delete_room("test-zombie"))
    assert names() == []
    with pytest.raises(LiveKitApiError) as gone:
        asyncio.run(service.delete_room("test-zombie"))
    assert gone.value.twirp_code == NOT_FOUND
    assert livekit.deletions == [(at(25), "test-zombie", "RM_test-zombie")]


def test_tasks_appear_with_their_first_line_and_replacements_follow_the_desired_count() -> None:
    clock = SimulatedClock(at(1))
    ecs = SimulatedEcsService(EVENTS, clock, cluster="c", service="agent-svc", region="r", account="1")
    assert [t.task_id for t in ecs.running_tasks()] == ["taskaaaa"]
    clock.now = at(16)
    running = ecs.running_tasks()
    assert sorted(t.task_id for t in running) == ["taskaaaa", "taskbbbb"]
    assert all(t.group == "service:agent-svc" and t.running for t in running)
    assert running[0].arn == "arn:aws:ecs:r:1:task/c/taskaaaa"
    assert ecs.capacity().desired_count == 2
    ecs.set_desired_count(3)
    assert len(ecs.running_tasks()) == 3
    ecs.stop_task(running[0].arn, "drained")
    stopped = ecs.describe_task(running[0].arn)
    assert stopped is not None
    assert stopped.last_status == "STOPPED"
    # As DescribeTasks: the drainer knows a task it stopped itself by its reason.
    assert stopped.stopped_reason == "drained"
    ecs.set_desired_count(2)
    assert sorted(t.task_id for t in ecs.running_tasks()) == ["sim-replacement-1", "taskbbbb"]
    assert not ecs.protection(running[1].arn).enabled


def test_a_draining_task_counts_only_the_jobs_it_received_before_its_cordon() -> None:
    clock = SimulatedClock(at(12))
    jobs = jobs_from_events(EVENTS)
    livekit = SimulatedLiveKit(jobs, clock)
    ecs = SimulatedEcsService(EVENTS, clock, cluster="c", service="agent-svc", region="r", account="1")
    probe = SimulatedWorkerProbe(jobs, ecs, livekit)
    task = ecs.running_tasks()[0]
    ecs.tag_task(task.arn, {SINCE_TAG: str(int(at(5).timestamp()))})
    task = ecs.describe_task(task.arn)
    assert task is not None
    assert probe.active_jobs(task) == 1  # the zombie; lesson-1 came after the cordon
    asyncio.run(SimulatedRoomService(livekit).delete_room("test-zombie"))
    assert probe.active_jobs(task) == 0


def test_the_ledger_lease_excludes_another_holder_until_it_expires() -> None:
    ledger = SimulatedLedger()
    ledger.acquire("service#s", "first", at(0), 60)
    with pytest.raises(ConcurrentActionError):
        ledger.acquire("service#s", "second", at(0.5), 60)
    assert ledger.acquire("service#s", "second", at(1.1), 60).holder == "second"
    ledger.put_capacity_debt(CapacityDebt("task", "arn", 0), expected=None)
    ledger.forget_capacity_debt("task", expected=Phase.RAISED)  # given back once
    with pytest.raises(ConcurrentActionError):
        ledger.forget_capacity_debt("task", expected=Phase.RAISED)  # and never twice
