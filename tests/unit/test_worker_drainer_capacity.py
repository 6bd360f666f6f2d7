"""Capacity settled from the service's real desired count (pure), and the protection undo restores."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from fleet_remediation.adapters.livekit_rooms import LiveRoom, RoomService
from fleet_remediation.contract.budgets import DRAINER_STEP_BUDGET_SECONDS
from fleet_remediation.contract.policies import DrainerPolicy, ReaperPolicy
from fleet_remediation.contract.sections import TaskActionScope
from fleet_remediation.core.errors import AwsApiError, ConcurrentActionError, KillSwitchError, LiveKitApiError
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Mode, Outcome
from fleet_remediation.domain.reaping import RoomDecision, Verdict
from livekit_fleet_remediation.offline.fixed_mode import FixedModeSwitch
from livekit_fleet_remediation.offline.replay_stores import SimulatedLedger
from worker_drainer.act.capacity_keeper import CapacityKeeper
from worker_drainer.act.cordon_saga import PROTECTION_READ_SETTLES, STOP_REASON_LIMIT, CordonSaga
from worker_drainer.act.ladder_executor import LEASE_POLL_SECONDS, DrainerExecutor
from worker_drainer.act.step_outcomes import CapacityAmbiguousError
from worker_drainer.adapters.capacity_debts import CapacityDebt, Phase
from worker_drainer.adapters.ecs_model import EcsTask, ServiceCapacity, TaskProtection, task_id_of
from worker_drainer.adapters.journal_model import AuditKey, OpenIntent, TagWrite
from worker_drainer.adapters.ledger import Lease
from worker_drainer.decide.capacity_settlement import Move, debt_for, replacement_refusal, settle
from worker_drainer.decide.plan_model import LadderPlan, PlannedStep, Step
from worker_drainer.decide.task_tags import (
    CAPACITY_TAG,
    COOLDOWN_TAG,
    CORDON_TAG,
    INCIDENT_TAG,
    SINCE_TAG,
    STATE_TAG,
    STATE_TAGS,
    STOP_REASON_PREFIX,
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
        "policy": POLICY,
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


# --- The cordon saga and the capacity keeper over the ECS and the ledger in memory ------------------

REFUSED = AwsApiError("ECS call failed: AccessDenied", aws_code="AccessDeniedException", resource=ARN)
# A reply lost after the service acted, and one lost before it did.
LOST = AwsApiError("ECS call failed: reply lost", aws_code="Transport", resource=ARN, unknown=True)
LOST_UNAPPLIED = AwsApiError("ECS call failed: no reply", aws_code="Transport", resource=ARN, unknown=True)


class FailingEcs(MemoryEcs):
    """``failures`` maps an operation to the errors its next calls raise (after acting, for a lost reply)."""

    def __init__(self, *tasks: EcsTask, failures: dict[str, list[AwsApiError | None]], **kwargs: Any) -> None:
        super().__init__(*tasks, **kwargs)
        self.failures = failures

    def _fail(self, operation: str) -> None:
        queued = self.failures.get(operation, [])
        error = queued.pop(0) if queued else None  # None: this call answers
        if error is not None:
            raise error

    def set_protection(self, task_arn: str, enabled: bool, expires_in_minutes: int | None = None) -> None:
        if self.failures.get("set_protection") and self.failures["set_protection"][0] is LOST:
            super().set_protection(task_arn, enabled, expires_in_minutes)
        self._fail("set_protection")
        super().set_protection(task_arn, enabled, expires_in_minutes)

    def set_desired_count(self, count: int) -> None:
        if self.failures.get("set_desired_count") and self.failures["set_desired_count"][0] is LOST:
            super().set_desired_count(count)
        self._fail("set_desired_count")
        super().set_desired_count(count)

    def untag_task(self, task_arn: str, keys: Sequence[str]) -> None:
        self._fail("untag_task")
        super().untag_task(task_arn, keys)

    def capacity(self) -> ServiceCapacity:
        self._fail("capacity")
        return super().capacity()


POLICY = DrainerPolicy(max_draining_tasks=2, max_draining_fraction=0.5, min_healthy_tasks=1)


def saga(ecs: MemoryEcs, ledger: SimulatedLedger | None = None, policy: DrainerPolicy = POLICY) -> CordonSaga:
    keeper = CapacityKeeper(ecs, ledger or SimulatedLedger(), lambda: NOW)
    return CordonSaga(ecs, keeper, policy, ReaperPolicy(), lambda: NOW)


def cordon_step(task: EcsTask, cause: Cause | None = Cause.VAD) -> PlannedStep:
    return PlannedStep(task.task_id, task.arn, Step.CORDON, "degraded: slow", State.HEALTHY, cause=cause)


def fleet(size: int = 4) -> list[EcsTask]:
    return [in_service(f"t{i}") for i in range(size)]


def test_a_cordon_tags_then_unprotects_then_raises_capacity_then_completes() -> None:
    tasks = fleet()
    ecs = MemoryEcs(*tasks, protected=True)
    ledger = SimulatedLedger()
    result = saga(ecs, ledger).cordon(tasks[0], cordon_step(tasks[0], None), "incident-7")
    assert (result.outcome, result.reason) == (
        Outcome.DONE,
        "cordoned (protection was on; replacement capacity: desired count 4 -> 5)",
    )
    marks = TaskMarks.read(ecs.tasks["t0"].tags)
    assert (marks.state, marks.cause, marks.cordon_complete, marks.incident) == (
        State.DRAINING,
        Cause.VAD,
        True,
        "incident-7",
    )
    assert ecs.protection_writes == [("t0", False, None)]
    assert ecs.desired == 5
    assert ledger.capacity_debt("t0") == CapacityDebt("t0", tasks[0].arn, int(NOW.timestamp()), Phase.RAISED)


def test_a_cordon_is_refused_again_by_the_guardrails_it_re_reads() -> None:
    tasks = [in_service("t0", **{STATE_TAG: "draining"}), *fleet(4)[1:]]
    ecs = MemoryEcs(*tasks)
    result = saga(ecs, policy=DrainerPolicy(max_draining_tasks=1, min_healthy_tasks=0)).cordon(
        tasks[1], cordon_step(tasks[1]), "incident-1"
    )
    assert (result.outcome, result.reason) == (
        Outcome.SKIPPED,
        "re-check: guardrail: 1 draining, at most 1 at once",
    )
    assert STATE_TAG not in ecs.tasks["t1"].tags


def test_a_refused_protection_change_is_compensated_and_a_refused_compensation_left_for_the_next_tick() -> (
    None
):
    tasks = fleet()
    ecs = FailingEcs(*tasks, protected=True, failures={"set_protection": [REFUSED]})
    result = saga(ecs).cordon(tasks[0], cordon_step(tasks[0]), "incident-1")
    assert (result.outcome, result.reason) == (
        Outcome.FAILED,
        "cordon refused, compensated (marks removed): ECS call failed: AccessDenied",
    )
    assert not set(STATE_TAGS) & set(ecs.tasks["t0"].tags)
    both = FailingEcs(*tasks, protected=True, failures={"set_protection": [REFUSED], "untag_task": [REFUSED]})
    half = saga(both).cordon(tasks[0], cordon_step(tasks[0]), "incident-1")
    assert (half.outcome, half.reason) == (
        Outcome.FAILED,
        "cordon half done, undo failed too (ECS call failed: AccessDenied); next tick finishes: "
        "ECS call failed: AccessDenied",
    )
    assert TaskMarks.read(both.tasks["t0"].tags).state is State.DRAINING


def test_a_lost_protection_reply_leaves_the_cordon_started_for_the_next_tick() -> None:
    tasks = fleet()
    ecs = FailingEcs(*tasks, protected=True, failures={"set_protection": [LOST]})
    with pytest.raises(AwsApiError):
        saga(ecs).cordon(tasks[0], cordon_step(tasks[0]), "incident-1")
    marks = TaskMarks.read(ecs.tasks["t0"].tags)
    assert (marks.state, marks.cordon_complete) == (State.DRAINING, False)


def test_a_refused_raise_keeps_the_cordon_without_extra_capacity_and_owes_nothing() -> None:
    tasks = fleet()
    ledger = SimulatedLedger()
    ecs = FailingEcs(*tasks, failures={"set_desired_count": [REFUSED]})
    result = saga(ecs, ledger).cordon(tasks[0], cordon_step(tasks[0]), "incident-1")
    assert (result.outcome, result.reason) == (
        Outcome.FAILED,
        "cordoned without extra capacity (the service replaces it on stop): ECS call failed: AccessDenied",
    )
    assert ecs.tasks["t0"].tags[CAPACITY_TAG] == "none"
    assert TaskMarks.read(ecs.tasks["t0"].tags).cordon_complete
    assert (ecs.desired, ledger.capacity_debt("t0")) == (4, None)


def test_a_lost_raise_reply_that_took_effect_is_owed_and_one_that_did_not_is_left_raising() -> None:
    tasks = fleet()
    ledger = SimulatedLedger()
    took = FailingEcs(*tasks, failures={"set_desired_count": [LOST]})
    assert saga(took, ledger).cordon(tasks[0], cordon_step(tasks[0]), "incident-1").outcome is Outcome.DONE
    assert (took.desired, ledger.capacity_debt("t0").phase) == (5, Phase.RAISED)  # type: ignore[union-attr]
    for failures in (
        {"set_desired_count": [LOST_UNAPPLIED]},
        {"set_desired_count": [LOST], "capacity": [None, REFUSED]},
    ):
        unsure = SimulatedLedger()
        ecs = FailingEcs(*tasks, failures=dict(failures))
        keeper = CapacityKeeper(ecs, unsure, lambda: NOW)
        with pytest.raises(AwsApiError):
            keeper.settle("t0", tasks[0].arn, want_raised=True)
        assert unsure.capacity_debt("t0").phase is Phase.RAISING  # type: ignore[union-attr]


def test_completing_a_cordon_waits_while_protection_may_show_its_value_from_before() -> None:
    settles = int((NOW - PROTECTION_READ_SETTLES).timestamp())
    old = in_service("t0", **{STATE_TAG: "draining", SINCE_TAG: str(settles), CORDON_TAG: "started"})
    ecs = MemoryEcs(old, protected=True)
    done = saga(ecs).complete(old)
    assert (done.outcome, done.reason) == (
        Outcome.DONE,
        "cordon completed (protection was on; the service replaces it when it stops)",
    )
    assert ecs.protection_writes == [("t0", False, None)]
    assert TaskMarks.read(ecs.tasks["t0"].tags).cordon_complete
    young = replace(old, tags={**old.tags, SINCE_TAG: str(settles + 1)})
    ecs = MemoryEcs(young, protected=True)
    wait = saga(ecs).complete(young)
    assert (wait.outcome, wait.reason) == (
        Outcome.SKIPPED,
        "protection shows on, possibly from before this cordon; re-read next tick",
    )
    assert ecs.protection_writes == []
    assert saga(MemoryEcs(young)).complete(young).outcome is Outcome.DONE


def cordoned_in(
    ecs: MemoryEcs, task_id: str, protection: TaskProtection, mode: str = "desired-count"
) -> EcsTask:
    """``task_id`` as a cordon left it (tags complete), its debt raised when ``mode`` is desired-count."""
    tags = cordon_tags(NOW, "why", Cause.VAD, mode, protection, 3600, "incident-1") | {CORDON_TAG: "complete"}
    ecs.tag_task(ecs.tasks[task_id].arn, tags)
    return ecs.tasks[task_id]


def test_undo_restores_protection_gives_capacity_back_unmarks_and_starts_the_cooldown() -> None:
    ecs = MemoryEcs(*fleet(), desired=5)
    ledger = SimulatedLedger()
    task = cordoned_in(ecs, "t0", TaskProtection(True, NOW + timedelta(hours=1)))
    ledger.put_capacity_debt(CapacityDebt("t0", task.arn, 0), expected=None)
    until = NOW + timedelta(minutes=POLICY.cooldown_minutes)
    result = saga(ecs, ledger).undo(task, by_operator=False)
    assert (result.outcome, result.reason) == (
        Outcome.DONE,
        f"protection restored until {(NOW + timedelta(hours=1)).isoformat()}; capacity given back: desired "
        f"count 5 -> 4; unmarked; cooldown until {until.isoformat(timespec='seconds')}",
    )
    assert ecs.protection_writes == [("t0", True, 60)]
    assert (ecs.desired, ledger.capacity_debt("t0")) == (4, None)
    assert ecs.tasks["t0"].tags == {COOLDOWN_TAG: str(int(until.timestamp()))}


def test_an_operators_undo_says_its_undrain_holds_and_touches_no_capacity_it_did_not_raise() -> None:
    ecs = MemoryEcs(*fleet(), desired=4)
    task = cordoned_in(ecs, "t0", TaskProtection(False), mode="none")
    result = saga(ecs).undo(task, by_operator=True)
    until = (NOW + timedelta(minutes=POLICY.cooldown_minutes)).isoformat(timespec="seconds")
    assert (
        result.reason == f"it was not protected before; unmarked; the operator's undrain holds until {until}"
    )
    assert (ecs.protection_writes, ecs.desired) == ([], 4)


def stop_step(task: EcsTask, reason: str = "drained: no active jobs") -> PlannedStep:
    return PlannedStep(task.task_id, task.arn, Step.STOP, reason, State.DRAINING)


def test_a_stop_re_checks_that_its_replacement_runs_then_gives_the_capacity_back() -> None:
    ecs = MemoryEcs(*fleet(5), desired=5)
    ledger = SimulatedLedger()
    task = cordoned_in(ecs, "t0", TaskProtection(False))
    ledger.put_capacity_debt(CapacityDebt("t0", task.arn, 0), expected=None)
    ecs.desired = 6  # the replacement is asked for and not running yet
    waiting = saga(ecs, ledger).stop(task, stop_step(task))
    assert (waiting.outcome, waiting.reason) == (
        Outcome.SKIPPED,
        "re-check: replacement not running yet: 5 of desired 6 tasks running",
    )
    assert ecs.stops == []
    ecs.desired = 5
    done = saga(ecs, ledger).stop(task, stop_step(task))
    assert (done.outcome, done.reason) == (Outcome.DONE, "stopped; capacity given back: desired count 5 -> 4")
    assert ecs.stops == [("t0", "livekit-drainer: drained: no active jobs")]


def test_a_stop_reason_is_cut_at_the_limit_stop_task_takes() -> None:
    for length in (
        STOP_REASON_LIMIT - len(STOP_REASON_PREFIX),
        STOP_REASON_LIMIT - len(STOP_REASON_PREFIX) + 1,
    ):
        ecs = MemoryEcs(*fleet())
        task = cordoned_in(ecs, "t0", TaskProtection(False), mode="none")
        result = saga(ecs).stop(task, stop_step(task, "r" * length))
        assert (result.outcome, result.reason) == (
            Outcome.DONE,
            "stopped; the service starts its replacement",
        )
        ((_, reason),) = ecs.stops
        assert reason == (STOP_REASON_PREFIX + "r" * length)[:STOP_REASON_LIMIT]
        assert len(reason) == STOP_REASON_LIMIT


def test_a_stopped_task_whose_give_back_failed_is_told_and_left_owed() -> None:
    ecs = FailingEcs(*fleet(5), desired=5, failures={"set_desired_count": [REFUSED]})
    ledger = SimulatedLedger()
    task = cordoned_in(ecs, "t0", TaskProtection(False))
    ledger.put_capacity_debt(CapacityDebt("t0", task.arn, 0), expected=None)
    result = saga(ecs, ledger).stop(task, stop_step(task))
    assert (result.outcome, result.reason) == (
        Outcome.FAILED,
        "stopped; giving its capacity back did not complete: ECS call failed: AccessDenied",
    )
    assert ecs.stops != []
    assert ledger.capacity_debt("t0").phase is Phase.LOWERING  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("owed", "desired", "want", "left", "count"),
    [
        (debt(Phase.RAISING, 4, 5), 5, True, Phase.RAISED, 5),  # confirmed
        (debt(Phase.RAISING, 4, 5), 4, False, None, 4),  # forgotten: the raise never happened
        (debt(Phase.LOWERING, 5, 4), 5, False, None, 4),  # lowered again, then forgotten
        (debt(Phase.RAISED), 5, True, Phase.RAISED, 5),  # nothing to do
    ],
)
def test_the_keeper_makes_the_one_move_the_debt_and_count_call_for(
    owed: CapacityDebt, desired: int, want: bool, left: Phase | None, count: int
) -> None:
    ledger = SimulatedLedger()
    ledger.put_capacity_debt(owed, expected=None)
    ecs = MemoryEcs(*fleet(), desired=desired)
    CapacityKeeper(ecs, ledger, lambda: NOW).settle("t0", ARN, want_raised=want)
    held = ledger.capacity_debt("t0")
    assert (held.phase if held else None, ecs.desired) == (left, count)


def test_a_count_moved_by_someone_else_drops_the_debt_and_is_raised_as_ambiguous() -> None:
    ledger = SimulatedLedger()
    ledger.put_capacity_debt(debt(Phase.RAISING, 4, 5), expected=None)
    ecs = MemoryEcs(*fleet(), desired=7)
    with pytest.raises(CapacityAmbiguousError, match="neither 4 nor 5"):
        CapacityKeeper(ecs, ledger, lambda: NOW).settle("t0", ARN, want_raised=True)
    assert (ledger.capacity_debt("t0"), ecs.desired) == (None, 7)


def test_a_give_back_whose_reply_was_lost_is_settled_from_the_count_read_back() -> None:
    for failures, left in (
        ({"set_desired_count": [LOST]}, None),  # it took effect: nothing owed
        ({"set_desired_count": [LOST_UNAPPLIED]}, Phase.LOWERING),  # it did not: lowered again next tick
        ({"set_desired_count": [REFUSED]}, Phase.LOWERING),
    ):
        ledger = SimulatedLedger()
        ledger.put_capacity_debt(debt(Phase.RAISED), expected=None)
        ecs = FailingEcs(*fleet(), desired=5, failures=dict(failures))
        keeper = CapacityKeeper(ecs, ledger, lambda: NOW)
        if left is None:
            keeper.settle("t0", ARN, want_raised=False)
        else:
            with pytest.raises(AwsApiError):
                keeper.settle("t0", ARN, want_raised=False)
        held = ledger.capacity_debt("t0")
        assert (held.phase if held else None) == left


def settle_step(task: EcsTask) -> PlannedStep:
    why = "capacity debt raising: settling it from the service's desired count"
    return PlannedStep(task.task_id, task.arn, Step.SETTLE_CAPACITY, why, State.DRAINING)


def holding(ecs: MemoryEcs) -> EcsTask:
    return cordoned_in(ecs, "t0", TaskProtection(False))


def test_a_settlement_keeps_the_capacity_a_running_draining_task_holds() -> None:
    ecs = MemoryEcs(*fleet(), desired=5)
    built = executor(ecs)
    task = holding(ecs)
    built.ledger.put_capacity_debt(CapacityDebt("t0", task.arn, 0, Phase.RAISING, 4, 5), expected=None)
    assert run(built, settle_step(task))[0][2:] == ("done", "the raise to 5 took effect (its reply was lost)")
    assert (ecs.desired, built.ledger.capacity_debt("t0").phase) == (5, Phase.RAISED)


def test_a_settlement_raises_again_for_a_holder_whose_raise_never_happened() -> None:
    ecs = MemoryEcs(*fleet(), desired=4)
    built = executor(ecs)
    task = holding(ecs)
    built.ledger.put_capacity_debt(CapacityDebt("t0", task.arn, 0, Phase.RAISING, 4, 5), expected=None)
    run(built, settle_step(task))
    assert ecs.desired == 5
    assert built.ledger.capacity_debt("t0") == CapacityDebt(
        "t0", task.arn, int(NOW.timestamp()), Phase.RAISED
    )


def test_a_settlement_with_nothing_to_move_is_already_done() -> None:
    ecs = MemoryEcs(*fleet(), desired=5)
    built = executor(ecs)
    task = holding(ecs)
    built.ledger.put_capacity_debt(CapacityDebt("t0", task.arn, 0), expected=None)
    assert run(built, settle_step(task))[0][2:] == ("already-done", "replacement capacity in place")


# --- The executor's re-checks right before each step, and its journal ------------------------------


class JournalLedger(SimulatedLedger):
    """The ledger in memory; ``entries`` lists every audit write (the intent, then the outcome), and
    ``broken`` names the calls that fail."""

    def __init__(self, *broken: str) -> None:
        super().__init__()
        self.entries: list[dict[str, str]] = []
        self.broken = set(broken)
        self.leases: list[str] = []
        self.audited: list[tuple[str, AuditKey]] = []
        self.tag_write_keys: list[AuditKey] = []

    def _check(self, call: str) -> None:
        if call in self.broken:
            raise AwsApiError(f"DynamoDB ledger call failed: {call}", aws_code="InternalServerError")

    def audit(self, task_id: str, key: AuditKey, entry: Mapping[str, str]) -> None:
        self._check("audit" if entry["outcome"] == "intended" else "audit of the outcome")
        self.entries.append(dict(entry))
        self.audited.append((task_id, key))
        super().audit(task_id, key, entry)

    def open_intent(self, task_id: str, key: AuditKey, entry: Mapping[str, str]) -> None:
        self._check("open_intent")
        super().open_intent(task_id, key, entry)

    def tag_writes_since(self, moment: datetime) -> list[TagWrite]:
        self._check("tag_writes_since")
        return super().tag_writes_since(moment)

    def open_intents(self) -> list[OpenIntent]:
        self._check("open_intents")
        return super().open_intents()

    def close_intent(self, task_id: str, key: AuditKey) -> bool:
        self._check("close_intent")
        return super().close_intent(task_id, key)

    def record_tag_write(self, key: AuditKey, write: TagWrite) -> None:
        self._check("record_tag_write")
        self.tag_write_keys.append(key)
        super().record_tag_write(key, write)

    def acquire(self, key: str, holder: str, now: datetime, ttl_seconds: int) -> Lease:
        self.leases.append(key)
        return super().acquire(key, holder, now, ttl_seconds)


class UnreadableSwitch:
    def read(self) -> Mode:
        raise KillSwitchError("cannot read kill switch /lkfr/it/mode: timed out", resource="/lkfr/it/mode")


class UnmanagedEcs(MemoryEcs):
    def ecs_managed_tags(self) -> bool:
        return False


def reported(built: DrainerExecutor, *steps: PlannedStep) -> ReportBuilder:
    report = ReportBuilder("worker_drainer", "test")
    built.run(LadderPlan(steps, healthy_running=0, draining=0), report)
    return report


def test_each_step_re_reads_the_kill_switch_and_is_journaled_when_it_is_skipped() -> None:
    tasks = fleet()
    for switch, why in (
        (FixedModeSwitch(Mode.DRY_RUN), "kill switch is now dry-run"),
        (UnreadableSwitch(), "kill switch unreadable: cannot read kill switch /lkfr/it/mode: timed out"),
    ):
        ecs, ledger = MemoryEcs(*tasks), JournalLedger()
        assert run(executor(ecs, ledger=ledger, mode_switch=switch), cordon_step(tasks[0])) == [
            ("t0", "cordon", "skipped", why)
        ]
        assert STATE_TAG not in ecs.tasks["t0"].tags
        assert [e["outcome"] for e in ledger.entries] == ["skipped"]


def test_a_step_without_its_intent_on_record_is_not_taken() -> None:
    tasks = fleet()
    ecs = MemoryEcs(*tasks)
    built = executor(ecs, ledger=JournalLedger("open_intent"))
    assert run(built, cordon_step(tasks[0])) == [
        ("t0", "cordon", "skipped", "intent not recorded: DynamoDB ledger call failed: open_intent")
    ]
    assert STATE_TAG not in ecs.tasks["t0"].tags


def test_the_journal_holds_the_intent_then_the_outcome_of_each_step() -> None:
    tasks = fleet()
    ledger = JournalLedger()
    run(executor(MemoryEcs(*tasks), ledger=ledger), cordon_step(tasks[0], Cause.TTS_SUSPECT))
    planned = {
        "action": "cordon",
        "planned_because": "degraded: slow",
        "task_arn": tasks[0].arn,
        "incident": "incident-1",
        "cause": "tts-suspect",
    }
    assert ledger.entries == [
        planned | {"outcome": "intended"},
        planned
        | {
            "outcome": "done",
            "reason": "cordoned (protection was off; replacement capacity: desired count 4 -> 5)",
        },
    ]
    assert ledger.open_intents() == []


def test_an_unrecorded_outcome_or_tag_write_is_reported_and_the_step_stands() -> None:
    for broken in ("audit of the outcome", "record_tag_write", "close_intent"):
        tasks = fleet()
        ecs = MemoryEcs(*tasks)
        report = reported(executor(ecs, ledger=JournalLedger(broken)), cordon_step(tasks[0]))
        assert [(a.action, a.outcome) for a in report.actions] == [("cordon", Outcome.DONE)], broken
        assert [e.message for e in report.errors] == [f"DynamoDB ledger call failed: {broken}"]
        assert TaskMarks.read(ecs.tasks["t0"].tags).state is State.DRAINING


def test_a_step_acts_only_on_the_state_it_was_planned_for() -> None:
    marked = in_service("t0", **{STATE_TAG: "draining", CORDON_TAG: "complete"})
    ecs = MemoryEcs(marked, *fleet()[1:])
    cases = [
        (cordon_step(marked), "already-done", "task state changed from healthy to draining"),
        (
            PlannedStep("t0", marked.arn, Step.STOP, "idle", State.REAPED),
            "skipped",
            "task state changed from reaped to draining",
        ),
        (
            PlannedStep("t0", marked.arn, Step.COMPLETE_CORDON, "x", State.DRAINING),
            "already-done",
            "cordon already complete",
        ),
    ]
    for step, outcome, why in cases:
        assert run(executor(ecs), step)[0][2:] == (outcome, why)
    unmarked = fleet()[1]
    undo = PlannedStep(unmarked.task_id, unmarked.arn, Step.UNDO, "recovered", State.DRAINING)
    assert run(executor(ecs), undo)[0][2:] == ("already-done", "task state changed from draining to healthy")
    assert ecs.stops == []


def test_a_task_gone_before_its_step_is_stopped_already_or_skipped() -> None:
    gone = in_service("t0")
    ecs = MemoryEcs(gone, *fleet()[1:])
    ecs.stop_task(gone.arn, "stopped by someone else")
    ecs.stops.clear()
    stop = PlannedStep("t0", gone.arn, Step.STOP, "idle", State.DRAINING)
    assert run(executor(ecs), stop)[0][2:] == ("already-done", "task already stopped")
    assert run(executor(ecs), cordon_step(gone))[0][2:] == ("skipped", "task is no longer RUNNING")
    unknown = in_service("t9")
    assert run(executor(ecs), cordon_step(unknown))[0][2:] == ("skipped", "task is no longer RUNNING")
    assert ecs.stops == []


def test_a_task_excluded_since_the_plan_is_not_touched() -> None:
    excluded = in_service("t0", **{"livekit-drainer:exclude": "true"})
    ecs = MemoryEcs(excluded, *fleet()[1:])
    assert run(executor(ecs), cordon_step(excluded))[0][2:] == (
        "skipped",
        "re-check: the task is now excluded from the drainer",
    )
    assert STATE_TAG not in ecs.tasks["t0"].tags


def test_a_ladder_keeps_the_incident_that_started_it() -> None:
    reaped_task = in_service("t0", **{STATE_TAG: "reaped", INCIDENT_TAG: "incident-0"})
    ecs = MemoryEcs(reaped_task, *fleet()[1:])
    step = PlannedStep("t0", reaped_task.arn, Step.CORDON, "still slow", State.REAPED, cause=Cause.VAD)
    run(executor(ecs, incident_id="incident-2"), step)
    assert TaskMarks.read(ecs.tasks["t0"].tags).incident == "incident-0"
    run(executor(ecs, incident_id="incident-2"), cordon_step(ecs.tasks["t1"]))
    assert TaskMarks.read(ecs.tasks["t1"].tags).incident == "incident-2"


def test_task_changes_a_service_without_managed_tags_would_be_denied_are_refused_once() -> None:
    tasks = fleet()
    ecs = UnmanagedEcs(*tasks)
    built = executor(ecs)
    built.ledger.put_capacity_debt(
        CapacityDebt("gone", "arn:aws:ecs:eu-west-1:1:task/c/gone", 0), expected=None
    )
    report = reported(built, cordon_step(tasks[0]), cordon_step(tasks[1]), revert(in_service("gone")))
    assert [(a.resource, a.outcome, a.reason) for a in report.actions] == [
        ("t0", Outcome.SKIPPED, "task changes refused (EcsManagedTagsOff)"),
        ("t1", Outcome.SKIPPED, "task changes refused (EcsManagedTagsOff)"),
        ("gone", Outcome.DONE, "capacity given back: desired count 4 -> 3"),
    ]
    assert [e.code for e in report.errors] == ["EcsManagedTagsOff"]
    cluster_wide = executor(UnmanagedEcs(*tasks), task_scope=TaskActionScope.CLUSTER)
    assert run(cluster_wide, cordon_step(tasks[0]))[0][2] == "done"


def test_a_step_the_service_refuses_fails_with_its_error() -> None:
    tasks = fleet()
    ecs = FailingEcs(*tasks, protected=True, failures={"set_protection": [LOST]})
    assert run(executor(ecs), cordon_step(tasks[0])) == [
        ("t0", "cordon", "unknown", "ECS call failed: reply lost; the next tick re-reads it")
    ]


def test_a_run_with_nothing_to_do_takes_no_lease_and_reports_an_unreadable_journal() -> None:
    ledger = JournalLedger()
    run(executor(MemoryEcs(*fleet()), ledger=ledger))
    assert ledger.leases == []
    broken = JournalLedger("open_intents")
    report = reported(executor(MemoryEcs(*fleet()), ledger=broken))
    assert [e.message for e in report.errors] == ["DynamoDB ledger call failed: open_intents"]
    assert broken.leases == []


def test_a_lease_held_by_another_run_is_waited_for_then_refused() -> None:
    tasks = fleet()
    ledger = JournalLedger()
    ledger.acquire("service#svc", "another-run", NOW, 220)
    ecs = MemoryEcs(*tasks)
    started = time.monotonic()
    with pytest.raises(ConcurrentActionError):
        run(executor(ecs, ledger=ledger, policy=DrainerPolicy(lease_wait_seconds=0.3)), cordon_step(tasks[0]))
    assert LEASE_POLL_SECONDS <= time.monotonic() - started < 5  # polled once, then refused
    assert STATE_TAG not in ecs.tasks["t0"].tags


def test_a_step_whose_intent_cannot_be_journaled_is_not_taken() -> None:
    tasks = fleet()
    ecs = MemoryEcs(*tasks)
    assert run(executor(ecs, ledger=JournalLedger("audit")), cordon_step(tasks[0])) == [
        ("t0", "cordon", "skipped", "intent not recorded: DynamoDB ledger call failed: audit")
    ]
    assert STATE_TAG not in ecs.tasks["t0"].tags


@pytest.mark.parametrize(
    ("owed", "desired", "want", "reason"),
    [
        (None, 4, True, "replacement capacity: desired count 4 -> 5"),
        (None, 4, False, "none owed"),
        (debt(Phase.RAISED), 5, True, "replacement capacity in place"),
        (debt(Phase.RAISED), 5, False, "capacity given back: desired count 5 -> 4"),
        (debt(Phase.RAISING, 4, 5), 5, True, "the raise to 5 took effect (its reply was lost)"),
        (debt(Phase.RAISING, 4, 5), 5, False, "the raise took effect, giving it back: desired count 5 -> 4"),
        (debt(Phase.RAISING, 4, 5), 4, True, "the raise never happened, raising now: desired count 4 -> 5"),
        (debt(Phase.RAISING, 4, 5), 4, False, "the raise never happened (desired count 4)"),
        (debt(Phase.LOWERING, 5, 4), 4, False, "capacity already given back (desired count 4)"),
        (
            debt(Phase.LOWERING, 5, 4),
            5,
            False,
            "giving back the capacity again (the last attempt did not take effect): desired count 5 -> 4",
        ),
        (
            debt(Phase.LOWERING, 5, 4),
            3,
            False,
            "desired count is 3, neither 5 nor 4 as the interrupted lowering expected: someone else "
            "changed it too; left as is, check the service",
        ),
    ],
)
def test_each_settlement_says_what_it_read_and_what_it_does(
    owed: CapacityDebt | None, desired: int, want: bool, reason: str
) -> None:
    assert settle(owed, desired, want).reason == reason


def test_a_debt_is_found_by_its_task_among_several() -> None:
    debts = [CapacityDebt("t1", ARN, 1), CapacityDebt("t0", ARN, 2), CapacityDebt("t0", ARN, 3)]
    assert debt_for(debts, "t0") == CapacityDebt("t0", ARN, 2)
    assert debt_for(debts, "t9") is None


def test_a_step_without_the_time_it_needs_is_skipped_naming_its_task() -> None:
    tasks = fleet()
    ecs = MemoryEcs(*tasks)
    report = reported(executor(ecs, deadline=time.monotonic() + 5), cordon_step(tasks[0]))
    ((action),) = report.actions
    assert (action.outcome, action.reason) == (Outcome.SKIPPED, "not enough time left for this step")
    assert action.error is not None
    assert (action.error.code, action.error.resource) == ("DeadlineExceeded", "t0")
    assert STATE_TAG not in ecs.tasks["t0"].tags


def test_each_ladder_step_is_applied_by_its_own_saga_step() -> None:
    ecs = MemoryEcs(*fleet(), desired=4)
    started = in_service("t0", **{STATE_TAG: "draining", CORDON_TAG: "started", CAPACITY_TAG: "none"})
    ecs.tasks["t0"] = started
    complete = PlannedStep("t0", started.arn, Step.COMPLETE_CORDON, "interrupted", State.DRAINING)
    assert run(executor(ecs), complete)[0][2:] == (
        "done",
        "cordon completed (protection was off; the service replaces it when it stops)",
    )
    stop = PlannedStep("t0", started.arn, Step.STOP, "drained", State.DRAINING)
    assert run(executor(ecs), stop)[0][2:] == ("done", "stopped; the service starts its replacement")
    assert ecs.stops == [("t0", "livekit-drainer: drained")]
    until = (NOW + timedelta(minutes=POLICY.cooldown_minutes)).isoformat(timespec="seconds")
    for cause, holds in ((Cause.MANUAL, "the operator's undrain holds"), (Cause.VAD, "cooldown")):
        marked = cordoned_in(ecs, "t1", TaskProtection(False), mode="none")
        undo = PlannedStep("t1", marked.arn, Step.UNDO, "recovered", State.DRAINING, cause=cause)
        assert run(executor(ecs), undo)[0][2:] == (
            "done",
            f"it was not protected before; unmarked; {holds} until {until}",
        )


def test_a_planned_stop_of_a_task_undone_since_is_skipped() -> None:
    task = in_service("t0")
    stop = PlannedStep("t0", task.arn, Step.STOP, "drained", State.DRAINING)
    ecs = MemoryEcs(task, *fleet()[1:])
    assert run(executor(ecs), stop)[0][2:] == ("skipped", "task state changed from draining to healthy")
    assert ecs.stops == []


class RefusingRooms(CountedRooms):
    """LiveKit refuses the deletes of the rooms named in ``refused`` (a 4xx: nothing was done)."""

    def __init__(self, *live: LiveRoom, refused: Sequence[str]) -> None:
        super().__init__(*live)
        self.refused = list(refused)

    async def delete_room(self, name: str) -> None:
        if name in self.refused:
            self.calls += 1
            raise LiveKitApiError(
                f"delete of {name} refused", twirp_code="permission_denied", http_status=403
            )
        await super().delete_room(name)


def test_a_reap_whose_every_delete_is_refused_fails_with_the_first_refusal() -> None:
    (task,) = tasks = [in_service("t0")]
    ecs = MemoryEcs(*tasks)
    rooms = lambda: RefusingRooms(live("a"), live("b"), refused=["a", "b"])  # noqa: E731
    step = reap_step(task, Cause.VAD, over_age("a"), over_age("b"))
    assert run(executor(ecs, rooms), step)[0][2:] == ("failed", "delete of a refused")
    assert STATE_TAG not in ecs.tasks["t0"].tags  # not marked reaped: the next tick tries again


def test_a_reap_with_some_rooms_deleted_marks_the_task_and_names_every_room() -> None:
    (task,) = tasks = [in_service("t0")]
    ecs = MemoryEcs(*tasks)
    rooms = lambda: RefusingRooms(live("a"), live("b"), refused=["b"])  # noqa: E731
    step = reap_step(task, Cause.VAD, over_age("a"), over_age("b"))
    assert run(executor(ecs, rooms), step)[0][2:] == ("done", "reaped 1 room(s) (a, b); cordon if still bad")
    assert TaskMarks.read(ecs.tasks["t0"].tags).state is State.REAPED


def test_a_lost_raise_reply_whose_count_cannot_be_read_leaves_the_cordon_to_the_next_tick() -> None:
    tasks = fleet()
    ecs = FailingEcs(*tasks, failures={"set_desired_count": [LOST_UNAPPLIED]})
    with pytest.raises(AwsApiError):
        saga(ecs).cordon(tasks[0], cordon_step(tasks[0]), "incident-1")
    marks = TaskMarks.read(ecs.tasks["t0"].tags)
    assert (marks.cordon_complete, ecs.tasks["t0"].tags[CAPACITY_TAG]) == (False, "desired-count")


def test_a_change_in_flight_records_the_counts_it_expects() -> None:
    tasks = fleet()
    ledger = SimulatedLedger()
    ecs = FailingEcs(*tasks, failures={"set_desired_count": [LOST_UNAPPLIED]})
    with pytest.raises(AwsApiError):
        CapacityKeeper(ecs, ledger, lambda: NOW).settle("t0", ARN, want_raised=True)
    assert ledger.capacity_debt("t0") == CapacityDebt("t0", ARN, int(NOW.timestamp()), Phase.RAISING, 4, 5)
    lowering = SimulatedLedger()
    lowering.put_capacity_debt(CapacityDebt("t0", ARN, 7), expected=None)
    refusing = FailingEcs(*tasks, desired=5, failures={"set_desired_count": [REFUSED]})
    with pytest.raises(AwsApiError):
        CapacityKeeper(refusing, lowering, lambda: NOW).settle("t0", ARN, want_raised=False)
    assert lowering.capacity_debt("t0") == CapacityDebt("t0", ARN, 7, Phase.LOWERING, 5, 4)


def test_an_ambiguous_count_names_the_task_it_was_owed_for() -> None:
    ledger = SimulatedLedger()
    ledger.put_capacity_debt(debt(Phase.LOWERING, 5, 4), expected=None)
    with pytest.raises(CapacityAmbiguousError) as ambiguous:
        CapacityKeeper(MemoryEcs(*fleet(), desired=9), ledger, lambda: NOW).settle(
            "t0", ARN, want_raised=False
        )
    assert ambiguous.value.resource == "t0"


def test_an_unknown_desired_count_refuses_a_stop_saying_so() -> None:
    assert replacement_refusal(debt(Phase.RAISED), 5, None) == "the service's desired count is unknown"


def test_a_run_takes_again_the_lease_its_own_invocation_holds() -> None:
    tasks = fleet()
    ledger = JournalLedger()
    ledger.acquire("service#svc", "invocation-1", NOW, 220)
    ecs = MemoryEcs(*tasks)
    assert run(executor(ecs, ledger=ledger), cordon_step(tasks[0]))[0][2] == "done"


def test_a_held_lease_is_waited_for_no_later_than_a_step_before_the_deadline() -> None:
    ledger = JournalLedger()
    ledger.acquire("service#svc", "another-run", NOW, 220)
    built = executor(
        MemoryEcs(*fleet()), ledger=ledger, deadline=time.monotonic() + DRAINER_STEP_BUDGET_SECONDS + 0.5
    )
    started = time.monotonic()
    with pytest.raises(ConcurrentActionError):
        run(built, cordon_step(fleet()[0]))
    assert time.monotonic() - started < 3  # not the policy's 20 s of waiting


def test_each_journal_item_is_the_steps_own_under_its_task() -> None:
    tasks = fleet()
    ledger = JournalLedger()
    run(executor(ecs := MemoryEcs(*tasks), ledger=ledger), cordon_step(tasks[1]))
    key = AuditKey("invocation-1", NOW, 0)
    assert ledger.audited == [("t1", key), ("t1", key)]
    assert ledger.tag_write_keys == [key]
    assert TaskMarks.read(ecs.tasks["t1"].tags).state is State.DRAINING


def test_a_step_is_skipped_while_the_drainers_own_recent_tag_writes_are_unreadable() -> None:
    tasks = fleet()
    ecs = MemoryEcs(*tasks)
    report = reported(executor(ecs, ledger=JournalLedger("tag_writes_since")), cordon_step(tasks[0]))
    ((action),) = report.actions
    assert (action.outcome, action.reason) == (
        Outcome.SKIPPED,
        "own recent tag writes unreadable: DynamoDB ledger call failed: tag_writes_since",
    )
    assert (action.error.code if action.error else None) == "AwsApiError"
    assert STATE_TAG not in ecs.tasks["t0"].tags


def test_each_refused_or_failed_step_carries_its_error_in_the_report() -> None:
    tasks = fleet()
    cases = [
        (executor(MemoryEcs(*tasks), mode_switch=UnreadableSwitch()), "KillSwitchError"),
        (executor(UnmanagedEcs(*tasks)), "EcsManagedTagsOff"),
        (executor(MemoryEcs(*tasks), ledger=JournalLedger("open_intent")), "AwsApiError"),
        (executor(FailingEcs(*tasks, protected=True, failures={"set_protection": [REFUSED]})), "AwsApiError"),
    ]
    for built, code in cases:
        ((action),) = reported(built, cordon_step(tasks[0])).actions
        assert (action.error.code if action.error else None) == code, action


def test_a_skipped_step_whose_journal_write_fails_is_reported() -> None:
    tasks = fleet()
    ledger = JournalLedger("audit of the outcome")
    report = reported(
        executor(MemoryEcs(*tasks), ledger=ledger, mode_switch=FixedModeSwitch(Mode.DRY_RUN)),
        cordon_step(tasks[0]),
    )
    assert [e.message for e in report.errors] == ["DynamoDB ledger call failed: audit of the outcome"]


def test_the_intent_is_journaled_with_the_reason_the_step_was_planned_for(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tasks = fleet()
    with caplog.at_level("INFO"):
        run(executor(MemoryEcs(*tasks)), cordon_step(tasks[0]))
    (intent,) = [r for r in caplog.records if r.getMessage() == "journal: intent"]
    assert intent.journal["reason"] == "degraded: slow"  # type: ignore[attr-defined]


def test_a_plan_of_task_steps_alone_is_refused_without_managed_tags_naming_the_fix() -> None:
    tasks = fleet()
    report = reported(executor(UnmanagedEcs(*tasks)), cordon_step(tasks[0]))
    assert [a.outcome for a in report.actions] == [Outcome.SKIPPED]
    (error,) = report.errors
    assert "ECS service svc has ECS managed tags off" in error.message
    assert "aws ecs update-service --cluster c --service svc --enable-ecs-managed-tags" in error.message


def test_too_late_for_any_step_the_service_setting_is_not_read() -> None:
    tasks = fleet()
    report = reported(executor(UnmanagedEcs(*tasks), deadline=time.monotonic() + 5), cordon_step(tasks[0]))
    assert report.errors == []
    assert [a.reason for a in report.actions] == ["not enough time left for this step"]


def test_a_step_a_killed_run_left_open_is_read_back_told_and_closed() -> None:
    marked = in_service("t0", **{STATE_TAG: "draining", CORDON_TAG: "complete"})
    ecs = MemoryEcs(marked, *fleet()[1:])
    ledger = JournalLedger()
    left = AuditKey("killed-run", NOW - timedelta(minutes=2), 0)
    ledger.open_intent("t0", left, {"action": "cordon", "task_arn": marked.arn, "outcome": "intended"})
    report = reported(executor(ecs, ledger=ledger))
    assert [(a.resource, a.action, a.outcome, a.reason) for a in report.actions] == [
        (
            "t0",
            "cordon",
            Outcome.DONE,
            "begun by run killed-run, which ended before recording it; read back: cordoned (the task is "
            "marked draining; cordon complete)",
        )
    ]
    assert ledger.open_intents() == []
    assert ledger.entries[-1]["outcome"] == "done"


def test_an_unreadable_journal_under_the_lease_is_reported_and_the_steps_still_run() -> None:
    tasks = fleet()
    ecs = MemoryEcs(*tasks)
    report = reported(executor(ecs, ledger=JournalLedger("open_intents")), cordon_step(tasks[0]))
    assert [e.message for e in report.errors] == ["DynamoDB ledger call failed: open_intents"]
    assert [a.outcome for a in report.actions] == [Outcome.DONE]


def test_an_interrupted_raise_under_a_count_moved_by_someone_else_says_what_it_read() -> None:
    assert settle(debt(Phase.RAISING, 4, 5), 7, want_raised=False).reason == (
        "desired count is 7, neither 4 nor 5 as the interrupted raising expected: someone else "
        "changed it too; left as is, check the service"
    )
