"""The escalation ladder's decisions (pure, injected clock): transitions and guardrails."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fleet_remediation.adapters.livekit_rooms import LiveRoom
from fleet_remediation.contract.policies import DrainerPolicy
from fleet_remediation.domain.reaping import RoomDecision, Verdict
from worker_drainer.adapters.ecs_tasks import EcsTask
from worker_drainer.adapters.ledger import CapacityDebt, Phase
from worker_drainer.adapters.worker_logs import SlowVadStats
from worker_drainer.decide.attribution import assess_fleet
from worker_drainer.decide.ladder import ManualRequest, Snapshot, Step, plan_ladder
from worker_drainer.decide.task_tags import (
    CAPACITY_TAG,
    COOLDOWN_TAG,
    CORDON_TAG,
    DEADLINE_TAG,
    SINCE_TAG,
    STATE_TAG,
    Cause,
    State,
)

NOW = datetime(2026, 9, 15, 17, 45, tzinfo=UTC)
POLICY = DrainerPolicy(max_draining_tasks=2, max_draining_fraction=0.5, min_healthy_tasks=2)


def task(task_id: str, **tags: str) -> EcsTask:
    return EcsTask(f"arn:aws:ecs:eu-west-1:1:task/c/{task_id}", "RUNNING", "RUNNING", "service:svc", tags)


def epoch(moment: datetime) -> str:
    return str(int(moment.timestamp()))


def slow(task_id: str, last_seen: datetime = NOW) -> SlowVadStats:
    return SlowVadStats(f"agent/c/{task_id}", 300, 40.0, last_seen - timedelta(minutes=25), last_seen, 8)


def snapshot(tasks: list[EcsTask], rows: list[SlowVadStats], **kwargs: object) -> Snapshot:
    streams = {f"agent/c/{t.task_id}": t.task_id for t in tasks}
    fleet = assess_fleet(rows, streams, [t.task_id for t in tasks], POLICY)
    return Snapshot(now=NOW, tasks=tasks, fleet=fleet, **kwargs)  # type: ignore[arg-type]


def zombie_room() -> RoomDecision:
    room = LiveRoom("lesson-zombie", "RM_1", NOW - timedelta(hours=3), 1)
    return RoomDecision(room, Verdict.REAP, "age 3h >= 1h", 3 * 3600, 3600, "default")


def steps_by_task(plan_steps: tuple) -> dict[str, Step]:  # type: ignore[type-arg]
    return {s.task_id: s.step for s in plan_steps}


def test_a_degraded_worker_with_an_over_age_room_is_reaped_first() -> None:
    tasks = [task(f"t{i}") for i in range(5)]
    snap = snapshot(tasks, [slow("t0")], start_new=True, rooms_to_reap={"t0": [zombie_room()]})
    plan = plan_ladder(snap, POLICY)
    assert steps_by_task(plan.steps) == {"t0": Step.REAP}
    assert plan.steps[0].rooms[0].room.name == "lesson-zombie"


def test_with_nothing_to_reap_the_degraded_worker_is_cordoned() -> None:
    tasks = [task(f"t{i}") for i in range(5)]
    plan = plan_ladder(snapshot(tasks, [slow("t0")], start_new=True, rooms_to_reap={"t0": []}), POLICY)
    assert steps_by_task(plan.steps) == {"t0": Step.CORDON}


def test_livekit_unavailable_still_cordons_and_says_why() -> None:
    tasks = [task(f"t{i}") for i in range(5)]
    plan = plan_ladder(snapshot(tasks, [slow("t0")], start_new=True, rooms_to_reap={"t0": None}), POLICY)
    assert plan.steps[0].step is Step.CORDON
    assert "LiveKit unavailable" in plan.steps[0].reason


def test_a_schedule_tick_does_not_start_a_new_ladder() -> None:
    tasks = [task(f"t{i}") for i in range(5)]
    assert plan_ladder(snapshot(tasks, [slow("t0")], start_new=False), POLICY).steps == ()


def test_reaped_and_still_slow_after_the_grace_is_cordoned() -> None:
    reaped_at = NOW - timedelta(minutes=POLICY.reap_grace_minutes + 2)
    tasks = [task("t0", **{STATE_TAG: "reaped", SINCE_TAG: epoch(reaped_at)})] + [
        task(f"t{i}") for i in range(1, 5)
    ]
    assert steps_by_task(plan_ladder(snapshot(tasks, [slow("t0")]), POLICY).steps) == {"t0": Step.CORDON}


def test_reaped_within_the_grace_waits() -> None:
    tasks = [task("t0", **{STATE_TAG: "reaped", SINCE_TAG: epoch(NOW - timedelta(minutes=1))})]
    tasks += [task(f"t{i}") for i in range(1, 5)]
    assert steps_by_task(plan_ladder(snapshot(tasks, [slow("t0")]), POLICY).steps) == {"t0": Step.WAIT}


def draining(task_id: str, deadline: datetime, **extra: str) -> EcsTask:
    return task(task_id, **{STATE_TAG: "draining", DEADLINE_TAG: epoch(deadline)}, **extra)


def test_draining_with_jobs_waits_and_without_jobs_stops() -> None:
    tasks = [draining("t0", NOW + timedelta(minutes=30))] + [task(f"t{i}") for i in range(1, 5)]
    busy = plan_ladder(snapshot(tasks, [slow("t0")], active_jobs={"t0": 1}), POLICY)
    assert steps_by_task(busy.steps) == {"t0": Step.WAIT}
    idle = plan_ladder(snapshot(tasks, [slow("t0")], active_jobs={"t0": 0}), POLICY)
    assert steps_by_task(idle.steps) == {"t0": Step.STOP}


def test_unknown_active_jobs_wait_until_the_deadline_then_stop() -> None:
    tasks = [draining("t0", NOW - timedelta(seconds=1))] + [task(f"t{i}") for i in range(1, 5)]
    plan = plan_ladder(snapshot(tasks, [slow("t0")], active_jobs={"t0": None}), POLICY)
    assert plan.steps[0].step is Step.STOP
    assert "deadline" in plan.steps[0].reason


def test_a_draining_worker_that_recovered_is_undone() -> None:
    quiet_since = NOW - timedelta(minutes=POLICY.recovery_minutes + 1)
    tasks = [draining("t0", NOW + timedelta(minutes=30))] + [task(f"t{i}") for i in range(1, 5)]
    plan = plan_ladder(snapshot(tasks, [slow("t0", last_seen=quiet_since)], active_jobs={"t0": 1}), POLICY)
    assert steps_by_task(plan.steps) == {"t0": Step.UNDO}


def test_not_yet_recovered_is_not_undone() -> None:
    recent = NOW - timedelta(minutes=POLICY.recovery_minutes - 1)
    tasks = [draining("t0", NOW + timedelta(minutes=30))] + [task(f"t{i}") for i in range(1, 5)]
    plan = plan_ladder(snapshot(tasks, [slow("t0", last_seen=recent)], active_jobs={"t0": 1}), POLICY)
    assert steps_by_task(plan.steps) == {"t0": Step.WAIT}


def test_at_most_k_tasks_drain_at_once() -> None:
    policy = DrainerPolicy(max_draining_tasks=1, max_draining_fraction=1.0, min_healthy_tasks=1)
    tasks = [draining("t0", NOW + timedelta(minutes=30))] + [task(f"t{i}") for i in range(1, 10)]
    rows = [slow("t0"), slow("t1")]
    plan = plan_ladder(
        snapshot(tasks, rows, start_new=True, rooms_to_reap={"t1": []}, active_jobs={"t0": 1}), policy
    )
    refused = next(s for s in plan.steps if s.task_id == "t1")
    assert refused.step is Step.SKIP
    assert "at most 1 at once" in refused.reason


def test_at_most_a_fraction_of_the_fleet_drains() -> None:
    policy = DrainerPolicy(max_draining_tasks=5, max_draining_fraction=0.2, min_healthy_tasks=0)
    tasks = [task(f"t{i}") for i in range(4)]
    plan = plan_ladder(snapshot(tasks, [slow("t0")], start_new=True, rooms_to_reap={"t0": []}), policy)
    assert plan.steps[0].step is Step.SKIP
    assert "20% of the fleet" in plan.steps[0].reason


def test_never_fewer_than_the_minimum_healthy_tasks() -> None:
    policy = DrainerPolicy(max_draining_tasks=5, max_draining_fraction=1.0, min_healthy_tasks=3)
    tasks = [task(f"t{i}") for i in range(3)]
    plan = plan_ladder(snapshot(tasks, [slow("t0")], start_new=True, rooms_to_reap={"t0": []}), policy)
    assert plan.steps[0].step is Step.SKIP
    assert "minimum 3" in plan.steps[0].reason


def test_a_task_in_cooldown_is_not_marked_again() -> None:
    tasks = [task("t0", **{COOLDOWN_TAG: epoch(NOW + timedelta(minutes=5))})] + [
        task(f"t{i}") for i in range(1, 5)
    ]
    plan = plan_ladder(snapshot(tasks, [slow("t0")], start_new=True, rooms_to_reap={"t0": []}), POLICY)
    assert plan.steps[0].step is Step.SKIP
    assert "cooldown" in plan.steps[0].reason


def test_a_fleet_wide_slowdown_drains_nobody() -> None:
    tasks = [task(f"t{i}") for i in range(5)]
    rows = [slow(f"t{i}") for i in range(4)]
    plan = plan_ladder(
        snapshot(tasks, rows, start_new=True, rooms_to_reap={f"t{i}": [] for i in range(4)}), POLICY
    )
    assert plan.acting() == ()


def test_manual_drain_and_undrain_name_one_task() -> None:
    tasks = [task(f"t{i}") for i in range(5)]
    drain = plan_ladder(snapshot(tasks, [], manual=ManualRequest("drain", "t3")), POLICY)
    assert steps_by_task(drain.steps) == {"t3": Step.CORDON}
    marked = [draining("t3", NOW + timedelta(minutes=30))] + [task(f"t{i}") for i in range(3)]
    undrain = plan_ladder(snapshot(marked, [slow("t3")], manual=ManualRequest("undrain", "t3")), POLICY)
    assert steps_by_task(undrain.steps) == {"t3": Step.UNDO}
    unknown = plan_ladder(snapshot(tasks, [], manual=ManualRequest("drain", "nope")), POLICY)
    assert steps_by_task(unknown.steps) == {"nope": Step.SKIP}


def test_capacity_is_given_back_for_a_task_that_is_gone() -> None:
    # t1 still drains with its extra capacity (and jobs): its debt stays; the stopped task's is paid.
    holding = draining("t1", NOW + timedelta(minutes=30), **{CAPACITY_TAG: "desired-count"})
    tasks = [task("t0"), holding, task("t2")]
    debts = [CapacityDebt("gone", "arn:aws:ecs:eu-west-1:1:task/c/gone", 0), CapacityDebt("t1", "arn:t1", 0)]
    plan = plan_ladder(snapshot(tasks, [slow("t1")], capacity_debts=debts, active_jobs={"t1": 1}), POLICY)
    assert steps_by_task(plan.steps) == {"gone": Step.REVERT_CAPACITY, "t1": Step.WAIT}


# --- Each threshold of the ladder at its edge and one second either side -------------------------


def first_step(plan_steps: tuple) -> tuple[Step, str]:  # type: ignore[type-arg]
    return plan_steps[0].step, plan_steps[0].reason


def test_a_draining_task_with_jobs_waits_until_exactly_its_deadline() -> None:
    def step_at(deadline: datetime) -> tuple[Step, str]:
        tasks = [draining("t0", deadline, **{CORDON_TAG: "complete"})] + [task(f"t{i}") for i in range(1, 5)]
        return first_step(plan_ladder(snapshot(tasks, [slow("t0")], active_jobs={"t0": 2}), POLICY).steps)

    assert step_at(NOW) == (Step.STOP, f"drain deadline {NOW.isoformat()} reached with 2 active job(s)")
    later = NOW + timedelta(seconds=1)
    assert step_at(later) == (Step.WAIT, f"draining: 2 active job(s), deadline {later}")
    assert step_at(NOW - timedelta(seconds=1))[0] is Step.STOP


def test_a_draining_task_without_a_deadline_waits_while_its_jobs_are_unknown() -> None:
    marked = task("t0", **{STATE_TAG: "draining", CORDON_TAG: "complete"})
    tasks = [marked] + [task(f"t{i}") for i in range(1, 5)]
    plan = plan_ladder(snapshot(tasks, [slow("t0")], active_jobs={"t0": None}), POLICY)
    assert first_step(plan.steps) == (Step.WAIT, "draining: unknown active job(s), deadline None")
    idle = plan_ladder(snapshot(tasks, [slow("t0")], active_jobs={"t0": 0}), POLICY)
    assert first_step(idle.steps) == (Step.STOP, "drained: no active jobs")


def test_an_interrupted_cordon_is_finished_first() -> None:
    started = draining("t0", NOW + timedelta(minutes=30), **{CORDON_TAG: "started"})
    tasks = [started] + [task(f"t{i}") for i in range(1, 5)]
    plan = plan_ladder(snapshot(tasks, [slow("t0")], active_jobs={"t0": 0}), POLICY)
    assert first_step(plan.steps) == (Step.COMPLETE_CORDON, "the cordon was interrupted: finishing it")


def test_a_cooldown_holds_until_exactly_its_end() -> None:
    def step_with_cooldown(until: datetime) -> tuple[Step, str]:
        tasks = [task("t0", **{COOLDOWN_TAG: epoch(until)})] + [task(f"t{i}") for i in range(1, 5)]
        snap = snapshot(tasks, [slow("t0")], start_new=True, rooms_to_reap={"t0": []})
        return first_step(plan_ladder(snap, POLICY).steps)

    later = NOW + timedelta(seconds=1)
    assert step_with_cooldown(later) == (Step.SKIP, f"cooldown until {later.isoformat()}: not marked again")
    assert step_with_cooldown(NOW)[0] is Step.CORDON
    assert step_with_cooldown(NOW - timedelta(seconds=1))[0] is Step.CORDON


def test_a_reap_and_a_cordon_say_why_and_only_a_degraded_worker_starts_a_ladder() -> None:
    tasks = [task(f"t{i}") for i in range(5)]
    reap = plan_ladder(
        snapshot(tasks, [slow("t0")], start_new=True, rooms_to_reap={"t0": [zombie_room()]}), POLICY
    )
    assert reap.steps[0].reason.startswith("reap first (1 over-age room(s)): ")
    assert reap.steps[0].cause is Cause.VAD
    cordon = plan_ladder(snapshot(tasks, [slow("t0")], start_new=True, rooms_to_reap={"t0": []}), POLICY)
    assert cordon.steps[0].reason.startswith("degraded: ")
    assert plan_ladder(snapshot(tasks, [], start_new=True), POLICY).steps == ()


def test_a_ladder_in_progress_takes_the_guardrail_budget_before_a_new_one() -> None:
    policy = DrainerPolicy(max_draining_tasks=1, max_draining_fraction=1.0, min_healthy_tasks=1)
    reaped_at = NOW - timedelta(minutes=policy.reap_grace_minutes + 2)
    still_slow = task("t4", **{STATE_TAG: "reaped", SINCE_TAG: epoch(reaped_at)})
    tasks = [task(f"t{i}") for i in range(4)] + [still_slow]
    snap = snapshot(tasks, [slow("t0"), slow("t4")], start_new=True, rooms_to_reap={"t0": []})
    plan = plan_ladder(snap, policy)
    assert [(s.task_id, s.step) for s in plan.steps] == [("t4", Step.CORDON), ("t0", Step.SKIP)]
    assert (plan.healthy_running, plan.draining) == (4, 1)


def test_a_manual_target_that_is_no_longer_running_was_stopped_already() -> None:
    tasks = [task(f"t{i}") for i in range(5)]
    (step,) = plan_ladder(snapshot(tasks, [], manual=ManualRequest("drain", "gone")), POLICY).steps
    assert (step.task_id, step.task_arn, step.step, step.reason, step.seen_state) == (
        "gone",
        "gone",
        Step.SKIP,
        "already stopped by the drainer: nothing left to do",
        State.HEALTHY,
    )


def test_a_manual_plan_without_a_task_plans_the_whole_fleet() -> None:
    tasks = [task(f"t{i}") for i in range(5)]
    snap = snapshot(
        tasks, [slow("t0")], start_new=True, rooms_to_reap={"t0": []}, manual=ManualRequest("plan")
    )
    assert steps_by_task(plan_ladder(snap, POLICY).steps) == {"t0": Step.CORDON}


def test_a_debt_mid_change_of_a_task_that_acts_this_tick_is_left_to_its_step() -> None:
    started = draining(
        "t0", NOW + timedelta(minutes=30), **{CORDON_TAG: "started", CAPACITY_TAG: "desired-count"}
    )
    tasks = [started] + [task(f"t{i}") for i in range(1, 5)]
    debts = [CapacityDebt("t0", started.arn, 0, Phase.RAISING, 4, 5)]
    plan = plan_ladder(snapshot(tasks, [slow("t0")], capacity_debts=debts, active_jobs={"t0": 1}), POLICY)
    assert steps_by_task(plan.steps) == {"t0": Step.COMPLETE_CORDON}
    # A raised debt the task no longer holds (its tag says the service replaces it) is settled.
    released = draining("t0", NOW + timedelta(minutes=30), **{CORDON_TAG: "complete", CAPACITY_TAG: "none"})
    tasks = [released] + [task(f"t{i}") for i in range(1, 5)]
    raised = [CapacityDebt("t0", released.arn, 0)]
    steps = plan_ladder(
        snapshot(tasks, [slow("t0")], capacity_debts=raised, active_jobs={"t0": 1}), POLICY
    ).steps
    assert [(s.step, s.reason) for s in steps] == [
        (Step.WAIT, f"draining: 1 active job(s), deadline {NOW + timedelta(minutes=30)}"),
        (Step.SETTLE_CAPACITY, "capacity debt raised: settling it from the service's desired count"),
    ]


def test_capacity_steps_name_the_task_its_arn_and_the_state_seen() -> None:
    holder = draining("t1", NOW + timedelta(minutes=30), **{CORDON_TAG: "complete", CAPACITY_TAG: "none"})
    tasks = [task("t0"), holder, task("t2")]
    gone_arn = "arn:aws:ecs:eu-west-1:1:task/c/gone"
    debts = [CapacityDebt("gone", gone_arn, 0), CapacityDebt("t1", holder.arn, 0)]  # the gone task's first
    steps = plan_ladder(
        snapshot(tasks, [slow("t1")], capacity_debts=debts, active_jobs={"t1": 1}), POLICY
    ).steps
    capacity = [
        (s.task_id, s.task_arn, s.step, s.reason, s.seen_state) for s in steps if s.step is not Step.WAIT
    ]
    assert capacity == [
        ("gone", gone_arn, Step.REVERT_CAPACITY, "task stopped", State.HEALTHY),
        (
            "t1",
            holder.arn,
            Step.SETTLE_CAPACITY,
            "capacity debt raised: settling it from the service's desired count",
            State.DRAINING,
        ),
    ]


def test_a_planned_step_carries_its_tasks_arn_and_the_state_it_was_seen_in() -> None:
    tasks = [draining("t0", NOW + timedelta(minutes=30), **{CORDON_TAG: "complete"})] + [
        task(f"t{i}") for i in range(1, 5)
    ]
    (step,) = plan_ladder(snapshot(tasks, [slow("t0")], active_jobs={"t0": 0}), POLICY).steps
    assert (step.task_arn, step.seen_state) == (tasks[0].arn, State.DRAINING)


def test_an_idle_excluded_task_is_skipped_saying_it_is_never_touched() -> None:
    tasks = [task("t0", **{"livekit-drainer:exclude": "true"})] + [task(f"t{i}") for i in range(1, 5)]
    (step,) = plan_ladder(snapshot(tasks, []), POLICY).steps
    assert step.reason == "excluded by the tag livekit-drainer:exclude=true: never touched"


def test_a_failure_a_group_event_explains_undoes_the_cordon_with_its_reason() -> None:
    tasks = [draining("t0", NOW + timedelta(minutes=30), **{CORDON_TAG: "complete"})] + [
        task(f"t{i}") for i in range(1, 5)
    ]
    shared = {"t0": "the failure is the revision's, shared by 3 tasks: undone"}
    snap = snapshot(tasks, [slow("t0")], active_jobs={"t0": 1}, shared_failures=shared)
    (step,) = plan_ladder(snap, POLICY).steps
    assert (step.step, step.reason) == (Step.UNDO, "the failure is the revision's, shared by 3 tasks: undone")
    others = snapshot(tasks, [slow("t0")], active_jobs={"t0": 1}, shared_failures={"t9": "another task's"})
    assert plan_ladder(others, POLICY).steps[0].step is Step.WAIT


def test_a_cordon_with_rooms_unknown_says_livekit_was_unavailable() -> None:
    tasks = [task(f"t{i}") for i in range(5)]
    plan = plan_ladder(snapshot(tasks, [slow("t0")], start_new=True, rooms_to_reap={"t0": None}), POLICY)
    assert plan.steps[0].reason.startswith("degraded (its rooms are unknown: LiveKit unavailable): ")
