"""Capacity settled from the service's real desired count (pure), and the protection undo restores."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from fleet_remediation.adapters.livekit_rooms import LiveRoom, RoomService
from fleet_remediation.contract.policies import DrainerPolicy, ReaperPolicy
from fleet_remediation.contract.sections import TaskActionScope
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Mode
from fleet_remediation.domain.reaping import RoomDecision, Verdict
from livekit_fleet_remediation.offline.fixed_mode import FixedModeSwitch
from livekit_fleet_remediation.offline.replay_stores import SimulatedLedger
from worker_drainer.act.ladder_executor import DrainerExecutor
from worker_drainer.adapters.capacity_debts import CapacityDebt, Phase
from worker_drainer.adapters.ecs_model import EcsTask, ServiceCapacity, TaskProtection, task_id_of
from worker_drainer.decide.capacity_settlement import Move, replacement_refusal, settle
from worker_drainer.decide.plan_model import LadderPlan, PlannedStep, Step
from worker_drainer.decide.task_tags import (
    CAPACITY_TAG,
    CORDON_TAG,
    STATE_TAG,
    Cause,
    State,
    TaskMarks,
    cordon_tags,
    protection_to_restore,
)

ARN = "arn:aws:ecs:eu-west-1:1:task/c/t0"
NOW = datetime(2026, 9, 15, 17, 45, tzinfo=UTC)


def debt(phase: Phase, before: int | None = None, after: int | None = None) -> CapacityDebt:
    return CapacityDebt("t0", ARN, 0, phase, before, after)


@pytest.mark.parametrize(
    ("owed", "desired", "want", "move", "target"),
    [
        # Nothing owed yet: a cordon raises; anything else has nothing to do.
        (None, 4, True, Move.RAISE, 5),
        (None, 4, False, Move.NONE, None),
        # Raised and confirmed: kept while draining, given back otherwise.
        (debt(Phase.RAISED), 5, True, Move.NONE, None),
        (debt(Phase.RAISED), 5, False, Move.LOWER, 4),
        # A raise whose reply was lost: the service has the new count.
        (debt(Phase.RAISING, 4, 5), 5, True, Move.CONFIRM, None),
        (debt(Phase.RAISING, 4, 5), 5, False, Move.LOWER, 4),
        # Killed between the ledger write and UpdateService: the count never moved.
        (debt(Phase.RAISING, 4, 5), 4, True, Move.RAISE, 5),
        (debt(Phase.RAISING, 4, 5), 4, False, Move.FORGET, None),
        # Someone else moved the count too: never guessed.
        (debt(Phase.RAISING, 4, 5), 7, True, Move.AMBIGUOUS, None),
        # A give-back whose reply was lost, and one that never reached the service.
        (debt(Phase.LOWERING, 5, 4), 4, False, Move.FORGET, None),
        (debt(Phase.LOWERING, 5, 4), 5, False, Move.LOWER, 4),
        (debt(Phase.LOWERING, 5, 4), 3, False, Move.AMBIGUOUS, None),
    ],
)
def test_each_debt_settles_from_the_real_desired_count(
    owed: CapacityDebt | None, desired: int, want: bool, move: Move, target: int | None
) -> None:
    plan = settle(owed, desired, want)
    assert plan.move is move, plan.reason
    if target is not None:
        assert (plan.before, plan.after) == (desired, target)


def test_a_give_back_never_goes_below_zero() -> None:
    assert settle(debt(Phase.RAISED), 0, False).after == 0


def test_a_stop_waits_for_its_replacement_to_run() -> None:
    assert "capacity debt missing" in str(replacement_refusal(None, 5, 5))
    assert "capacity debt raising" in str(replacement_refusal(debt(Phase.RAISING, 4, 5), 5, 5))
    assert "unknown" in str(replacement_refusal(debt(Phase.RAISED), 5, None))
    assert replacement_refusal(debt(Phase.RAISED), 4, 5) == (
        "replacement not running yet: 4 of desired 5 tasks running"
    )
    assert replacement_refusal(debt(Phase.RAISED), 5, 5) is None


def cordoned(protection: TaskProtection) -> EcsTask:
    tags = cordon_tags(NOW, "why", Cause.VAD, "desired-count", protection, 3600, "it.incident")
    return EcsTask(ARN, "RUNNING", "RUNNING", "service:svc", tags)


def test_undo_restores_the_original_protection_expiry_not_a_fresh_default() -> None:
    original = NOW + timedelta(hours=10)
    task = cordoned(TaskProtection(True, original))
    later = NOW + timedelta(minutes=11)
    restore = protection_to_restore(task, later)
    assert restore.restore
    assert restore.minutes == 589  # 10 h after the cordon, 11 min later: the same instant
    assert later + timedelta(minutes=restore.minutes) - original < timedelta(minutes=1)


def test_undo_leaves_off_a_protection_that_has_expired_since() -> None:
    task = cordoned(TaskProtection(True, NOW + timedelta(minutes=5)))
    restore = protection_to_restore(task, NOW + timedelta(minutes=11))
    assert not restore.restore
    assert "expired" in restore.note


def test_undo_caps_the_restored_protection_at_48_hours_and_skips_an_unprotected_task() -> None:
    long = cordoned(TaskProtection(True, NOW + timedelta(days=5)))
    assert protection_to_restore(long, NOW).minutes == 2880
    assert not protection_to_restore(cordoned(TaskProtection(False)), NOW).restore


# --- The executor over an ECS and a ledger in memory: what each step leaves behind ------------------


class MemoryEcs:
    """One service's ECS in memory: its tasks (status and tags), their protection, the desired count;
    ``stops`` and ``protection_writes`` list what the drainer asked for."""

    def __init__(self, *tasks: EcsTask, desired: int | None = None, protected: bool = False) -> None:
        self.calls = 0
        self.tasks = {t.task_id: t for t in tasks}
        self.protected = {t.task_id: protected for t in tasks}
        self.desired = len(tasks) if desired is None else desired
        self.stops: list[tuple[str, str]] = []
        self.protection_writes: list[tuple[str, bool, int | None]] = []

    def running_tasks(self) -> list[EcsTask]:
        return [t for t in self.tasks.values() if t.running]

    def describe_task(self, task: str) -> EcsTask | None:
        return self.tasks.get(task_id_of(task))

    def tag_task(self, task_arn: str, tags: Mapping[str, str]) -> None:
        task = self.tasks[task_id_of(task_arn)]
        self.tasks[task.task_id] = replace(task, tags={**task.tags, **tags})

    def untag_task(self, task_arn: str, keys: Sequence[str]) -> None:
        task = self.tasks[task_id_of(task_arn)]
        self.tasks[task.task_id] = replace(task, tags={k: v for k, v in task.tags.items() if k not in keys})

    def protection(self, task_arn: str) -> TaskProtection:
        return TaskProtection(self.protected[task_id_of(task_arn)])

    def set_protection(self, task_arn: str, enabled: bool, expires_in_minutes: int | None = None) -> None:
        self.protected[task_id_of(task_arn)] = enabled
        self.protection_writes.append((task_id_of(task_arn), enabled, expires_in_minutes))

    def stop_task(self, task_arn: str, reason: str) -> None:
        task = self.tasks[task_id_of(task_arn)]
        self.tasks[task.task_id] = replace(task, last_status="STOPPED", desired_status="STOPPED")
        self.stops.append((task.task_id, reason))

    def capacity(self) -> ServiceCapacity:
        return ServiceCapacity(self.desired, len(self.running_tasks()))

    def ecs_managed_tags(self) -> bool:
        return True

    def deployment_in_progress(self) -> str | None:
        return None

    def set_desired_count(self, count: int) -> None:
        self.desired = count


class UncountedRooms:
    """LiveKit's rooms in memory, without a request counter (as a client that keeps none)."""

    def __init__(self, *live: LiveRoom) -> None:
        self.live = {room.name: room for room in live}

    def _request(self) -> None:
        return None

    async def list_rooms(self, names: Sequence[str] | None = None) -> list[LiveRoom]:
        self._request()
        return [room for name, room in self.live.items() if names is None or name in names]

    async def delete_room(self, name: str) -> None:
        self._request()
        self.live.pop(name)

    async def aclose(self) -> None:
        return None


class CountedRooms(UncountedRooms):
    """``calls`` counts the requests, as the production client does."""

    def __init__(self, *live: LiveRoom) -> None:
        super().__init__(*live)
        self.calls = 0

    def _request(self) -> None:
        self.calls += 1


def in_service(task_id: str, **tags: str) -> EcsTask:
    return EcsTask(f"arn:aws:ecs:eu-west-1:1:task/c/{task_id}", "RUNNING", "RUNNING", "service:svc", tags)


def executor(
    ecs: MemoryEcs, rooms: Callable[[], RoomService] = CountedRooms, **changes: Any
) -> DrainerExecutor:
    values: dict[str, Any] = {
        "ecs": ecs,
        "ledger": SimulatedLedger(),
        "mode_switch": FixedModeSwitch(Mode.ENFORCE),
        "room_service_factory": rooms,
        "policy": DrainerPolicy(),
        "reaper_policy": ReaperPolicy(),
        "cluster": "c",
        "service": "svc",
        "task_scope": TaskActionScope.SERVICE,
        "invocation_id": "invocation-1",
        "incident_id": "incident-1",
        "clock": lambda: NOW,
        "deadline": time.monotonic() + 60,
        "livekit_request_timeout_seconds": 1.0,
    }
    return DrainerExecutor(**(values | changes))


def run(built: DrainerExecutor, *steps: PlannedStep) -> list[tuple[str, str, str, str]]:
    report = ReportBuilder("worker_drainer", "test")
    built.run(LadderPlan(steps, healthy_running=0, draining=0), report)
    return [(a.resource, a.action, a.outcome.value, a.reason) for a in report.actions]


def live(name: str) -> LiveRoom:
    return LiveRoom(name, f"RM_{name}", NOW - timedelta(hours=3), 1)


def over_age(name: str) -> RoomDecision:
    return RoomDecision(live(name), Verdict.REAP, "age 3h >= 1h", 3 * 3600, 3600, "default")


def reap_step(task: EcsTask, cause: Cause | None, *rooms: RoomDecision) -> PlannedStep:
    return PlannedStep(task.task_id, task.arn, Step.REAP, "degraded", State.HEALTHY, rooms, cause)


def test_a_reap_marks_the_task_reaped_for_the_cause_it_was_planned_for() -> None:
    tasks = [in_service("t0"), in_service("t1")]
    ecs = MemoryEcs(*tasks)
    built = executor(ecs, lambda: CountedRooms(live("a"), live("b")))
    run(
        built, reap_step(tasks[0], Cause.TTS_SUSPECT, over_age("a")), reap_step(tasks[1], None, over_age("b"))
    )
    assert TaskMarks.read(ecs.tasks["t0"].tags).cause is Cause.TTS_SUSPECT
    assert TaskMarks.read(ecs.tasks["t1"].tags).cause is Cause.VAD  # no cause planned: the VAD default
    assert {t: TaskMarks.read(ecs.tasks[t].tags).state for t in ("t0", "t1")} == {
        "t0": State.REAPED,
        "t1": State.REAPED,
    }


def test_the_livekit_requests_of_every_reap_in_a_run_are_counted() -> None:
    tasks = [in_service("t0"), in_service("t1")]
    built = executor(MemoryEcs(*tasks), lambda: CountedRooms(live("a"), live("b")))
    done = run(
        built, reap_step(tasks[0], Cause.VAD, over_age("a")), reap_step(tasks[1], Cause.VAD, over_age("b"))
    )
    assert [outcome for _, _, outcome, _ in done] == ["done", "done"]
    assert built.livekit_calls == 4  # each reap: the re-check's listing and one delete


def test_a_room_service_without_a_request_counter_counts_none() -> None:
    (task,) = tasks = [in_service("t0")]
    built = executor(MemoryEcs(*tasks), lambda: UncountedRooms(live("a")))
    assert run(built, reap_step(task, Cause.VAD, over_age("a"))) == [
        ("t0", "reap", "done", "reaped 1 room(s) (a); cordon if still bad")
    ]
    assert built.livekit_calls == 0


def revert(task: EcsTask) -> PlannedStep:
    return PlannedStep(task.task_id, task.arn, Step.REVERT_CAPACITY, "task stopped", State.HEALTHY)


def test_capacity_owed_for_a_task_ecs_no_longer_knows_is_given_back() -> None:
    gone = in_service("gone")
    ecs = MemoryEcs(in_service("t1"), desired=2)
    built = executor(ecs)
    built.ledger.put_capacity_debt(CapacityDebt("gone", gone.arn, 0), expected=None)
    assert run(built, revert(gone)) == [
        ("gone", "revert-capacity", "done", "capacity given back: desired count 2 -> 1")
    ]
    assert ecs.desired == 1
    assert built.ledger.capacity_debt("gone") is None


def test_capacity_owed_for_a_stopped_task_still_tagged_draining_is_given_back() -> None:
    holder = in_service(
        "t0", **{STATE_TAG: "draining", CAPACITY_TAG: "desired-count", CORDON_TAG: "complete"}
    )
    ecs = MemoryEcs(holder, in_service("t1"), desired=3)
    ecs.stop_task(holder.arn, "stopped by the test")
    built = executor(ecs)
    built.ledger.put_capacity_debt(CapacityDebt("t0", holder.arn, 0), expected=None)
    assert run(built, revert(holder))[0][2:] == ("done", "capacity given back: desired count 3 -> 2")
    assert ecs.desired == 2
