"""The ladder's safety rules (pure, injected clock): undo only on evidence for the cause of the mark,
the operator wins, exclusion, positive evidence before a stop, the replacement before a stop, and
an interrupted cordon or capacity change finished on the next tick."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

from fleet_remediation.adapters.livekit_rooms import LiveRoom
from fleet_remediation.contract.budgets import DRAINER_STEP_BUDGET_SECONDS
from fleet_remediation.contract.policies import DrainerPolicy, ReaperPolicy, RoomRule
from fleet_remediation.core.errors import AwsApiError, LiveKitUnavailableError, RemediationError, SecretError
from fleet_remediation.core.notes import Noted
from fleet_remediation.domain.job_outcomes import JobOutcome
from worker_drainer.adapters.capacity_debts import CapacityDebt, Phase
from worker_drainer.adapters.ecs_model import EcsTask
from worker_drainer.adapters.worker_logs import JobSighting, SlowVadStats
from worker_drainer.decide.attribution import Pattern, WorkerAssessment, assess_fleet
from worker_drainer.decide.guardrails import Guardrails
from worker_drainer.decide.ladder import ManualRequest, PlannedStep, Snapshot, Step, plan_ladder
from worker_drainer.decide.recovery_evidence import Recovery, TtsEvidence, tts_recovery, vad_recovery
from worker_drainer.decide.task_tags import (
    CAPACITY_TAG,
    CAUSE_TAG,
    COOLDOWN_TAG,
    CORDON_TAG,
    DEADLINE_TAG,
    SINCE_TAG,
    STATE_TAG,
    Cause,
    TaskMarks,
    marks_of,
)
from worker_drainer.dependencies import DrainerDependencies
from worker_drainer.read.job_evidence import (
    JOB_LINE_INDEXING_MARGIN,
    JOB_LINE_READ_SLACK,
    JOB_LOOKBACK,
    RoomsSeen,
    read_rooms,
    read_tts_evidence,
)

NOW = datetime(2026, 9, 15, 17, 45, tzinfo=UTC)
POLICY = DrainerPolicy(max_draining_tasks=2, max_draining_fraction=0.5, min_healthy_tasks=2)
EXCLUDE = {"livekit-drainer:exclude": "true"}


def epoch(moment: datetime) -> str:
    return str(int(moment.timestamp()))


def task(task_id: str, **tags: str) -> EcsTask:
    return EcsTask(f"arn:aws:ecs:eu-west-1:1:task/c/{task_id}", "RUNNING", "RUNNING", "service:svc", tags)


def draining(cause: Cause, since: datetime, deadline: datetime | None = None, **extra: str) -> EcsTask:
    tags = {
        STATE_TAG: "draining",
        CAUSE_TAG: cause.value,
        SINCE_TAG: epoch(since),
        DEADLINE_TAG: epoch(deadline or NOW + timedelta(minutes=30)),
        CORDON_TAG: "complete",
    }
    return task("t0", **(tags | extra))


def slow(task_id: str, last_seen: datetime = NOW) -> SlowVadStats:
    return SlowVadStats(f"agent/c/{task_id}", 300, 40.0, last_seen - timedelta(minutes=25), last_seen, 8)


def plan_for(first: EcsTask, rows: list[SlowVadStats] | None = None, **kwargs: Any) -> dict[str, PlannedStep]:
    tasks = [first] + [task(f"t{i}") for i in range(1, 5)]
    streams = {f"agent/c/{t.task_id}": t.task_id for t in tasks}
    fleet = assess_fleet(rows or [], streams, [t.task_id for t in tasks], POLICY)
    snapshot = Snapshot(now=NOW, tasks=kwargs.pop("tasks", tasks), fleet=fleet, **kwargs)
    first: dict[str, PlannedStep] = {}
    for step in plan_ladder(snapshot, POLICY).steps:  # a task's ladder step, not its capacity step
        first.setdefault(step.task_id, step)
    return first


LONG_AGO = NOW - timedelta(minutes=POLICY.recovery_minutes + 5)
RECENT = NOW - timedelta(minutes=POLICY.recovery_minutes - 2)


def test_a_manual_drain_is_never_undone_by_the_robot() -> None:
    quiet = plan_for(draining(Cause.MANUAL, LONG_AGO), active_jobs={"t0": 1})
    assert quiet["t0"].step is Step.WAIT  # no slow inference at all: a VAD cordon would be undone
    good_tts = {"t0": TtsEvidence(jobs=10, failed=0)}
    assert (
        plan_for(draining(Cause.MANUAL, LONG_AGO), active_jobs={"t0": 1}, tts_evidence=good_tts)["t0"].step
        is Step.WAIT
    )
    # It still ends like any drain: stopped once it has no jobs.
    assert plan_for(draining(Cause.MANUAL, LONG_AGO), active_jobs={"t0": 0})["t0"].step is Step.STOP


def test_only_the_operators_undrain_ends_a_manual_drain() -> None:
    step = plan_for(draining(Cause.MANUAL, LONG_AGO), manual=ManualRequest("undrain", "t0"))["t0"]
    assert (step.step, step.cause) == (Step.UNDO, Cause.MANUAL)


def test_a_tts_suspect_cordon_is_undone_only_on_tts_evidence_after_the_window() -> None:
    cordon = draining(Cause.TTS_SUSPECT, LONG_AGO)
    # VAD quiet is not evidence for a TTS cause.
    assert plan_for(cordon, active_jobs={"t0": 1})["t0"].step is Step.WAIT
    assert plan_for(cordon, active_jobs={"t0": 1}, tts_evidence={"t0": None})["t0"].step is Step.WAIT
    few = {"t0": TtsEvidence(jobs=POLICY.tts_recovery_min_jobs - 1, failed=0)}
    assert plan_for(cordon, active_jobs={"t0": 1}, tts_evidence=few)["t0"].step is Step.WAIT
    failing = {"t0": TtsEvidence(jobs=5, failed=1)}
    assert plan_for(cordon, active_jobs={"t0": 1}, tts_evidence=failing)["t0"].step is Step.WAIT
    good = {"t0": TtsEvidence(jobs=POLICY.tts_recovery_min_jobs, failed=0)}
    too_soon = draining(Cause.TTS_SUSPECT, RECENT)
    assert plan_for(too_soon, active_jobs={"t0": 1}, tts_evidence=good)["t0"].step is Step.WAIT
    undone = plan_for(cordon, active_jobs={"t0": 1}, tts_evidence=good)["t0"]
    assert undone.step is Step.UNDO
    assert "TTS evidence" in undone.reason


def test_a_vad_cordon_is_undone_only_on_vad_evidence_after_the_window() -> None:
    good_tts = {"t0": TtsEvidence(jobs=10, failed=0)}
    still_slow = plan_for(
        draining(Cause.VAD, LONG_AGO), [slow("t0")], active_jobs={"t0": 1}, tts_evidence=good_tts
    )
    assert still_slow["t0"].step is Step.WAIT
    quiet_since = NOW - timedelta(minutes=POLICY.recovery_minutes + 1)
    too_soon = plan_for(draining(Cause.VAD, RECENT), [slow("t0", quiet_since)], active_jobs={"t0": 1})
    assert too_soon["t0"].step is Step.WAIT  # quiet, but the cordon is younger than the window
    undone = plan_for(draining(Cause.VAD, LONG_AGO), [slow("t0", quiet_since)], active_jobs={"t0": 1})
    assert undone["t0"].step is Step.UNDO


def test_the_operators_cooldown_holds_against_alarms_and_suspect_events() -> None:
    held = task("t0", **{COOLDOWN_TAG: epoch(NOW + timedelta(minutes=30))})
    for suspect in (None, "t0"):
        step = plan_for(
            held, [slow("t0")], start_new=True, rooms_to_reap={"t0": []}, suspect_task_id=suspect
        )["t0"]
        assert (step.step, step.notify) == (Step.SKIP, True)
        assert "cooldown" in step.reason


def test_a_cordon_records_why_it_was_made() -> None:
    vad = plan_for(task("t0"), [slow("t0")], start_new=True, rooms_to_reap={"t0": []})["t0"]
    assert (vad.step, vad.cause) == (Step.CORDON, Cause.VAD)
    tts = plan_for(task("t0"), [slow("t0")], start_new=True, rooms_to_reap={"t0": []}, suspect_task_id="t0")
    assert (tts["t0"].step, tts["t0"].cause) == (Step.CORDON, Cause.TTS_SUSPECT)
    manual = plan_for(task("t0"), manual=ManualRequest("drain", "t0"))["t0"]
    assert (manual.step, manual.cause) == (Step.CORDON, Cause.MANUAL)


def test_an_excluded_task_is_never_touched_and_the_operator_hears_when_it_matters() -> None:
    degraded = plan_for(task("t0", **EXCLUDE), [slow("t0")], start_new=True, rooms_to_reap={"t0": []})["t0"]
    assert (degraded.step, degraded.notify) == (Step.SKIP, True)
    assert "excluded" in degraded.reason
    assert "would have: cordon" in degraded.reason
    manual = plan_for(task("t0", **EXCLUDE), manual=ManualRequest("drain", "t0"))["t0"]
    assert (manual.step, manual.notify) == (Step.SKIP, True)
    gone_quiet = plan_for(draining(Cause.VAD, LONG_AGO, **EXCLUDE), active_jobs={"t0": 0})["t0"]
    assert (gone_quiet.step, gone_quiet.notify) == (Step.SKIP, True)  # would have undone it
    idle = plan_for(task("t0", **EXCLUDE))["t0"]
    assert (idle.step, idle.notify) == (Step.SKIP, False)


def test_unknown_jobs_keep_a_task_draining_until_the_deadline() -> None:
    step = plan_for(draining(Cause.MANUAL, LONG_AGO), active_jobs={"t0": None})["t0"]
    assert step.step is Step.WAIT
    assert "unknown active job(s)" in step.reason


def test_a_task_that_may_host_a_protected_live_room_is_never_stopped() -> None:
    due = draining(Cause.MANUAL, LONG_AGO, deadline=NOW - timedelta(seconds=1))
    hosting = plan_for(
        due, active_jobs={"t0": None}, guards_protected_rooms=True, protected_rooms={"t0": ("lesson-demo-1",)}
    )["t0"]
    assert (hosting.step, hosting.notify) == (Step.SKIP, True)
    assert "lesson-demo-1" in hosting.reason
    unknown = plan_for(due, active_jobs={"t0": 2}, guards_protected_rooms=True, protected_rooms={"t0": None})
    assert unknown["t0"].step is Step.SKIP
    none_live = plan_for(due, active_jobs={"t0": 1}, guards_protected_rooms=True, protected_rooms={"t0": ()})
    assert none_live["t0"].step is Step.STOP
    no_rules = plan_for(due, active_jobs={"t0": None})
    assert no_rules["t0"].step is Step.STOP
    # /worker says no job: the room may be live, but not on this worker.
    idle = plan_for(due, active_jobs={"t0": 0}, guards_protected_rooms=True, protected_rooms={"t0": None})
    assert idle["t0"].step is Step.STOP


def test_a_stop_waits_for_the_replacement_capacity() -> None:
    holder = draining(Cause.VAD, RECENT, **{CAPACITY_TAG: "desired-count"})
    rows = [slow("t0")]
    raising = [CapacityDebt("t0", holder.arn, 0, Phase.RAISING, 5, 6)]
    waiting = plan_for(holder, rows, active_jobs={"t0": 0}, capacity_debts=raising, desired_count=6)
    assert waiting["t0"].step is Step.WAIT
    raised = [CapacityDebt("t0", holder.arn, 0)]
    not_yet = plan_for(holder, rows, active_jobs={"t0": 0}, capacity_debts=raised, desired_count=6)
    assert not_yet["t0"].step is Step.WAIT
    assert "5 of desired 6" in not_yet["t0"].reason
    tasks = [holder] + [task(f"t{i}") for i in range(1, 6)]
    ready = plan_for(holder, rows, tasks=tasks, active_jobs={"t0": 0}, capacity_debts=raised, desired_count=6)
    assert ready["t0"].step is Step.STOP
    # Without extra capacity (the raise was refused) the service replaces the task on stop.
    fallback = draining(Cause.VAD, RECENT, **{CAPACITY_TAG: "none"})
    assert plan_for(fallback, rows, active_jobs={"t0": 0})["t0"].step is Step.STOP
    # Extra capacity on the tag and no debt on record (another task's debt does not count): wait.
    others = [CapacityDebt("t9", holder.arn.replace("t0", "t9"), 0)]
    missing = plan_for(
        holder, rows, tasks=tasks, active_jobs={"t0": 0}, capacity_debts=others, desired_count=6
    )
    assert missing["t0"].step is Step.WAIT
    assert "capacity debt missing" in missing["t0"].reason


def test_an_interrupted_cordon_is_completed_before_anything_else() -> None:
    started = draining(Cause.VAD, RECENT, **{CORDON_TAG: "started", CAPACITY_TAG: "desired-count"})
    debts = [CapacityDebt("t0", started.arn, 0, Phase.RAISING, 4, 5)]
    steps = plan_ladder(
        Snapshot(now=NOW, tasks=[started], fleet=None, active_jobs={"t0": 0}, capacity_debts=debts), POLICY
    ).steps
    assert [(s.task_id, s.step) for s in steps] == [("t0", Step.COMPLETE_CORDON)]


def test_a_capacity_change_left_half_done_is_settled() -> None:
    holder = draining(Cause.VAD, RECENT, **{CAPACITY_TAG: "desired-count"})
    lost = [CapacityDebt("t0", holder.arn, 0, Phase.RAISING, 4, 5)]
    steps = plan_ladder(
        Snapshot(now=NOW, tasks=[holder], fleet=None, active_jobs={"t0": 1}, capacity_debts=lost), POLICY
    ).steps
    assert [s.step for s in steps] == [Step.WAIT, Step.SETTLE_CAPACITY]
    orphan = [CapacityDebt("t1", task("t1").arn, 0)]
    steps = plan_ladder(
        Snapshot(now=NOW, tasks=[task("t1")], fleet=None, capacity_debts=orphan), POLICY
    ).steps
    assert [(s.task_id, s.step) for s in steps] == [("t1", Step.SETTLE_CAPACITY)]


def test_a_guardrail_refusal_is_told() -> None:
    policy = DrainerPolicy(max_draining_tasks=5, max_draining_fraction=1.0, min_healthy_tasks=5)
    tasks = [task(f"t{i}") for i in range(5)]
    streams = {f"agent/c/{t.task_id}": t.task_id for t in tasks}
    fleet = assess_fleet([slow("t0")], streams, [t.task_id for t in tasks], policy)
    snapshot = Snapshot(now=NOW, tasks=tasks, fleet=fleet, start_new=True, rooms_to_reap={"t0": []})
    (refused,) = plan_ladder(snapshot, policy).steps
    assert (refused.step, refused.notify) == (Step.SKIP, True)
    assert refused.reason.startswith("guardrail")


def test_a_reaped_tts_suspect_is_cordoned_or_released_on_tts_evidence() -> None:
    reaped = task("t0", **{STATE_TAG: "reaped", CAUSE_TAG: "tts-suspect", SINCE_TAG: epoch(LONG_AGO)})
    failing = plan_for(reaped, tts_evidence={"t0": TtsEvidence(4, 2)})["t0"]
    assert (failing.step, failing.cause) == (Step.CORDON, Cause.TTS_SUSPECT)
    assert plan_for(reaped, tts_evidence={"t0": None})["t0"].step is Step.WAIT
    assert plan_for(reaped, tts_evidence={"t0": TtsEvidence(5, 0)})["t0"].step is Step.UNDO


# --- TTS recovery evidence: the jobs that reached the TTS step, and those that failed there --------


def tts_job(job_id: str, responses: int, first_frames: int, timeouts: int = 0) -> JobOutcome:
    return JobOutcome(job_id, "agent/agent/t0", responses, first_frames, timeouts)


def test_a_job_that_never_reached_the_tts_step_is_no_evidence_either_way() -> None:
    assert TtsEvidence.from_outcomes([tts_job("idle", 0, 0), tts_job("idle-2", 0, 3)]) == TtsEvidence(
        jobs=0, failed=0
    )


def test_a_first_audio_timeout_alone_is_a_job_that_failed() -> None:
    evidence = TtsEvidence.from_outcomes([tts_job("timed-out", 0, 0, timeouts=1), tts_job("idle", 0, 0)])
    assert evidence == TtsEvidence(jobs=1, failed=1)


def test_jobs_that_reached_first_audio_count_and_those_that_did_not_fail() -> None:
    outcomes = [
        tts_job("good", 1, 1),
        tts_job("good-2", 2, 2),
        tts_job("silent", 1, 0),
        tts_job("timed-out", 1, 1, timeouts=2),
        tts_job("idle", 0, 0),
    ]
    assert TtsEvidence.from_outcomes(outcomes) == TtsEvidence(jobs=4, failed=2)


def test_recovery_counts_from_exactly_the_recovery_window() -> None:
    window = timedelta(minutes=POLICY.recovery_minutes)
    good = TtsEvidence(jobs=POLICY.tts_recovery_min_jobs, failed=0)
    assert tts_recovery(good, NOW - window, NOW, POLICY).recovered
    assert not tts_recovery(good, NOW - window + timedelta(seconds=1), NOW, POLICY).recovered
    # VAD: a last warning exactly at the start of the quiet window is not inside it.
    last = slow("t0", last_seen=NOW - window)
    worker = WorkerAssessment("t0", last.log_stream, Pattern.QUIET, 0.0, False, "quiet", last)
    assert vad_recovery(worker, True, NOW - window, NOW, POLICY).recovered
    later = slow("t0", last_seen=NOW - window + timedelta(seconds=1))
    still_warning = WorkerAssessment("t0", later.log_stream, Pattern.ELEVATED, 1.0, True, "slow", later)
    assert not vad_recovery(still_warning, True, NOW - window, NOW, POLICY).recovered


def test_each_cordon_planned_in_a_tick_counts_against_the_guardrails() -> None:
    policy = DrainerPolicy(max_draining_tasks=3, max_draining_fraction=1.0, min_healthy_tasks=1)
    fleet = [draining(Cause.VAD, RECENT)] + [task(f"t{i}") for i in range(1, 6)]
    guard = Guardrails(list(marks_of(fleet).values()), policy)
    assert (guard.draining, guard.healthy) == (1, 5)
    guard.take()
    guard.take()
    assert (guard.draining, guard.healthy) == (3, 3)
    assert guard.refusal() == "guardrail: 3 draining, at most 3 at once"


def _fleet(draining_count: int, size: int = 4) -> list[TaskMarks]:
    marked = [task(f"t{i}", **{STATE_TAG: "draining"}) for i in range(draining_count)]
    return list(marks_of(marked + [task(f"t{i}") for i in range(draining_count, size)]).values())


def test_the_guardrails_allow_a_cordon_up_to_exactly_each_limit() -> None:
    # Up to exactly half the fleet draining.
    half = DrainerPolicy(max_draining_tasks=5, max_draining_fraction=0.5, min_healthy_tasks=1)
    assert Guardrails(_fleet(1), half).refusal() is None
    assert Guardrails(_fleet(2), half).refusal() == "guardrail: 3 of 4 draining would exceed 50% of the fleet"
    # Down to exactly the minimum of healthy tasks left.
    keep_two = DrainerPolicy(max_draining_tasks=5, max_draining_fraction=0.75, min_healthy_tasks=2)
    assert Guardrails(_fleet(1), keep_two).refusal() is None
    assert Guardrails(_fleet(2), keep_two).refusal() == "guardrail: 1 healthy tasks left < minimum 2"


# --- A reaped task: the grace after the reap, at its edge and one second either side ---------------

GRACE = timedelta(minutes=POLICY.reap_grace_minutes)


def reaped(cause: Cause, at: datetime) -> EcsTask:
    return task("t0", **{STATE_TAG: "reaped", CAUSE_TAG: cause.value, SINCE_TAG: epoch(at)})


def test_a_reaped_tts_suspect_still_failing_is_cordoned_from_exactly_the_end_of_the_grace() -> None:
    failing = {"t0": TtsEvidence(jobs=4, failed=2)}
    at_edge = plan_for(reaped(Cause.TTS_SUSPECT, NOW - GRACE), tts_evidence=failing)["t0"]
    assert (at_edge.step, at_edge.cause) == (Step.CORDON, Cause.TTS_SUSPECT)
    assert at_edge.reason == "2 job(s) still without first audio after the reap (TTS evidence)"
    just_before = plan_for(
        reaped(Cause.TTS_SUSPECT, NOW - GRACE + timedelta(seconds=1)), tts_evidence=failing
    )
    assert just_before["t0"].step is Step.WAIT
    assert just_before["t0"].reason == "reaped: waiting for TTS evidence of recovery or failure"
    after = plan_for(reaped(Cause.TTS_SUSPECT, NOW - GRACE - timedelta(seconds=1)), tts_evidence=failing)
    assert after["t0"].step is Step.CORDON


def test_a_reaped_tts_suspect_that_recovered_is_undone_saying_after_the_reap() -> None:
    good = {"t0": TtsEvidence(jobs=POLICY.tts_recovery_min_jobs, failed=0)}
    undone = plan_for(reaped(Cause.TTS_SUSPECT, LONG_AGO), tts_evidence=good)["t0"]
    assert undone.step is Step.UNDO
    assert undone.reason == (
        f"recovered: {POLICY.tts_recovery_min_jobs} job(s) since the cordon all reached first audio "
        "(TTS evidence) after the reap"
    )


def test_a_reaped_vad_task_is_cordoned_only_on_a_warning_after_the_grace() -> None:
    # Reaped 5 min ago: the grace ended 2 min ago, the recovery window (10 min) is not over yet.
    reaped_at = NOW - GRACE - timedelta(minutes=2)
    grace_end = reaped_at + GRACE
    at_edge = plan_for(reaped(Cause.VAD, reaped_at), [slow("t0", last_seen=grace_end)])["t0"]
    assert at_edge.step is Step.WAIT
    assert at_edge.reason == "reaped: waiting for the grace period to judge recovery"
    later = plan_for(reaped(Cause.VAD, reaped_at), [slow("t0", last_seen=grace_end + timedelta(seconds=1))])
    assert (later["t0"].step, later["t0"].cause) == (Step.CORDON, Cause.VAD)
    assert later["t0"].reason.startswith(f"still slow {POLICY.reap_grace_minutes} min after the reap: ")


def test_a_reaped_task_without_the_fleets_assessment_waits() -> None:
    tasks = [reaped(Cause.VAD, NOW - GRACE - timedelta(minutes=2))] + [task(f"t{i}") for i in range(1, 5)]
    (step,) = plan_ladder(Snapshot(now=NOW, tasks=tasks, fleet=None), POLICY).steps
    assert (step.task_id, step.step) == ("t0", Step.WAIT)


# --- The job evidence a stop decides on: unknown is never zero (read.job_evidence) ----------------


def sighting(task_id: str, room: str, room_id: str = "", job: str = "J1") -> JobSighting:
    return JobSighting(f"agent/agent-svc/{task_id}", job, room, room_id, NOW)


def seen(live: list[LiveRoom] | None, **sightings: list[JobSighting]) -> RoomsSeen:
    return RoomsSeen(None if live is None else {r.name: r for r in live}, sightings, NOW, "lesson-.*")


OLD_ROOM = LiveRoom("lesson-old", "RM_old", NOW - timedelta(hours=2), 1)


def test_a_tasks_rooms_are_those_its_jobs_joined_with_the_same_room_sid() -> None:
    recreated = LiveRoom("lesson-b", "RM_new", NOW - timedelta(hours=1), 1)
    rooms = seen(
        [OLD_ROOM, recreated],
        t0=[
            sighting("t0", "lesson-old"),
            sighting("t0", "lesson-old", "RM_old", "J2"),
            sighting("t0", "gone"),
        ],
        t1=[sighting("t1", "lesson-b", "RM_before")],
    )
    assert [r.name for r in rooms.rooms_of("t0") or []] == ["lesson-old"]  # two jobs, one room
    assert rooms.active_jobs("t0") == 1
    assert rooms.rooms_of("t1") == []  # its job was in the room of that name before it was recreated
    assert rooms.active_jobs("t1") == 0
    assert rooms.rooms_of("t9") == []


def test_without_livekit_or_without_the_job_lines_every_count_is_unknown() -> None:
    without_livekit = RoomsSeen(None, {"t0": [sighting("t0", "lesson-old")]}, NOW)
    without_logs = RoomsSeen({"lesson-old": OLD_ROOM}, None, NOW)
    for rooms in (without_livekit, without_logs):
        assert rooms.rooms_of("t0") is None
        assert rooms.active_jobs("t0") is None
        assert rooms.protected_rooms("t0", ReaperPolicy()) is None
        assert rooms.unaccounted_recent_rooms() == []


def test_a_young_managed_room_no_job_line_accounts_for_makes_every_count_unknown() -> None:
    margin = JOB_LINE_INDEXING_MARGIN
    at_margin = LiveRoom("lesson-young", "RM_y", NOW - margin, 0)
    rooms = seen([OLD_ROOM, at_margin], t0=[sighting("t0", "lesson-old")])
    assert rooms.unaccounted_recent_rooms() == ["lesson-young"]
    assert rooms.active_jobs("t0") is None
    undated = seen([OLD_ROOM, LiveRoom("lesson-undated", "RM_u", None, 0)], t0=[sighting("t0", "lesson-old")])
    assert undated.unaccounted_recent_rooms() == ["lesson-undated"]
    older = LiveRoom("lesson-older", "RM_o", NOW - margin - timedelta(seconds=1), 0)
    assert seen([OLD_ROOM, older], t0=[sighting("t0", "lesson-old")]).active_jobs("t0") == 1
    unmanaged = LiveRoom("support-call", "RM_s", NOW, 0)
    assert seen([OLD_ROOM, unmanaged], t0=[sighting("t0", "lesson-old")]).active_jobs("t0") == 1
    accounted = seen(
        [OLD_ROOM, at_margin], t0=[sighting("t0", "lesson-old")], t1=[sighting("t1", "lesson-young")]
    )
    assert accounted.active_jobs("t0") == 1


def test_the_protected_rooms_of_a_task_are_named_in_order() -> None:
    policy = ReaperPolicy(rules=[RoomRule(name_pattern="lesson-demo-.*", protected=True)])
    demo = [LiveRoom(f"lesson-demo-{n}", f"RM_{n}", NOW - timedelta(hours=2), 1) for n in (2, 1)]
    rooms = seen([*demo, OLD_ROOM], t0=[sighting("t0", r.name, job=r.name) for r in [*demo, OLD_ROOM]])
    assert rooms.protected_rooms("t0", policy) == ("lesson-demo-1", "lesson-demo-2")
    assert rooms.protected_rooms("t1", policy) == ()


class JobLines:
    """The worker logs' two reads the evidence makes, answered from a fixed list (or refused)."""

    def __init__(self, *lines: JobSighting, error: RemediationError | None = None) -> None:
        self.lines, self.error = lines, error
        self.reads: list[tuple[list[str], datetime]] = []
        self.deadlines: list[float] = []
        self.ends: list[datetime] = []

    def job_sightings(
        self, log_streams: Sequence[str], start: datetime, end: datetime, deadline: float
    ) -> list[JobSighting]:
        self.reads.append((sorted(log_streams), start))
        self.ends.append(end)
        self.deadlines.append(deadline)
        if self.error is not None:
            raise self.error
        return [line for line in self.lines if line.log_stream in log_streams]

    def tts_outcomes(
        self, log_stream: str, start: datetime, end: datetime, deadline: float
    ) -> list[JobOutcome]:
        self.reads.append(([log_stream], start))
        self.ends.append(end)
        self.deadlines.append(deadline)
        if self.error is not None:
            raise self.error
        return [
            JobOutcome("J1", log_stream, 1, 1),
            JobOutcome("J2", log_stream, 1, 0),
            JobOutcome("J3", log_stream, 0, 0),
        ]


class ListedRooms:
    def __init__(self, *live: LiveRoom, error: RemediationError | None = None) -> None:
        self.live, self.error, self.calls, self.closed = live, error, 0, False

    async def list_rooms(self) -> list[LiveRoom]:
        self.calls += 3  # as a client that paged through three requests
        if self.error is not None:
            raise self.error
        return list(self.live)

    async def aclose(self) -> None:
        self.closed = True


def stream_of(task_id: str) -> str:
    return f"agent/agent-svc/{task_id}"


# What the evidence reads of the settings: each task's log stream, the Insights timeout, the rooms we manage.
EVIDENCE_SETTINGS = SimpleNamespace(
    log_stream_for=stream_of,
    drainer=SimpleNamespace(insights_timeout_seconds=22.0),
    reaper=SimpleNamespace(policy=ReaperPolicy()),
)
RECENT_READ = NOW - JOB_LINE_INDEXING_MARGIN - JOB_LINE_READ_SLACK
LOGS_DOWN = AwsApiError("Logs Insights query failed: timed out", aws_code="ReadTimeout")


def started(task_id: str, at: datetime | None) -> EcsTask:
    return replace(task(task_id), started_at=at)


def evidence(
    tasks: list[EcsTask],
    of_interest: list[EcsTask] | None,
    logs: JobLines,
    rooms: ListedRooms,
    deadline: float = 1e12,
) -> tuple[RoomsSeen, int, Noted]:
    deps = SimpleNamespace(settings=EVIDENCE_SETTINGS, worker_logs=logs, room_service_factory=lambda: rooms)
    noted = Noted()
    seen_rooms, calls = read_rooms(tasks, cast(DrainerDependencies, deps), noted, NOW, deadline, of_interest)
    return seen_rooms, calls, noted


def test_the_tasks_of_interest_are_read_since_the_oldest_started_and_the_fleet_over_the_margin() -> None:
    tasks = [
        started("t0", NOW - timedelta(hours=2)),
        started("t1", NOW - timedelta(hours=1)),
        started("t2", None),
    ]
    logs = JobLines()
    evidence(tasks, tasks[:2], logs, ListedRooms())
    assert logs.reads == [
        ([stream_of("t0"), stream_of("t1")], NOW - timedelta(hours=2)),
        (sorted(stream_of(t.task_id) for t in tasks), RECENT_READ),
    ]


def test_a_task_of_interest_without_a_start_time_is_read_over_the_lookback() -> None:
    tasks = [started("t0", NOW - timedelta(hours=1)), started("t1", None)]
    logs = JobLines()
    evidence(tasks, None, logs, ListedRooms())
    assert logs.reads == [([stream_of("t0"), stream_of("t1")], NOW - JOB_LOOKBACK)]  # the fleet, in one read


def test_the_fleet_is_read_over_the_margin_when_its_tasks_of_interest_started_after_it() -> None:
    tasks = [started("t0", RECENT_READ + timedelta(seconds=1))]
    logs = JobLines()
    evidence(tasks, None, logs, ListedRooms())
    assert logs.reads == [
        ([stream_of("t0")], RECENT_READ + timedelta(seconds=1)),
        ([stream_of("t0")], RECENT_READ),
    ]
    at_the_read = JobLines()
    evidence([started("t0", RECENT_READ)], None, at_the_read, ListedRooms())
    assert at_the_read.reads == [([stream_of("t0")], RECENT_READ)]


def test_no_task_of_interest_reads_only_the_fleet_over_the_margin() -> None:
    logs = JobLines()
    evidence([started("t0", None)], [], logs, ListedRooms())
    assert logs.reads == [([stream_of("t0")], RECENT_READ)]


def test_job_lines_are_kept_per_task_once_per_job_and_room() -> None:
    line = JobSighting(stream_of("t0"), "J1", "lesson-old", "RM_old", NOW)
    other_job = replace(line, job_id="J2")
    elsewhere = JobSighting("agent/other/t9", "J3", "lesson-old", "", NOW)
    rooms, calls, noted = evidence(
        [started("t0", None)], None, JobLines(line, line, other_job, elsewhere), ListedRooms(OLD_ROOM)
    )
    assert rooms.sightings == {"t0": [line, other_job]}
    assert rooms.active_jobs("t0") == 1
    assert (calls, noted.pending) == (3, [])


def test_unreadable_job_lines_make_the_counts_unknown_and_are_noted() -> None:
    rooms, _, noted = evidence([started("t0", None)], None, JobLines(error=LOGS_DOWN), ListedRooms(OLD_ROOM))
    assert rooms.sightings is None
    assert rooms.active_jobs("t0") is None
    assert noted.pending == [LOGS_DOWN]


def test_unreachable_livekit_makes_the_rooms_unknown_is_noted_and_its_requests_counted() -> None:
    down = LiveKitUnavailableError("LiveKit unreachable", resource="livekit")
    client = ListedRooms(error=down)
    rooms, calls, noted = evidence([started("t0", None)], None, JobLines(), client)
    assert (rooms.live, rooms.active_jobs("t0"), calls) == (None, None, 3)
    assert noted.pending == [down]
    assert client.closed


def test_each_logs_read_ends_by_the_insights_timeout_or_a_step_before_the_deadline() -> None:
    timeout = EVIDENCE_SETTINGS.drainer.insights_timeout_seconds
    far = JobLines()
    before = time.monotonic()
    evidence([started("t0", None)], None, far, ListedRooms())
    assert all(before + timeout <= d <= time.monotonic() + timeout for d in far.deadlines)
    near = JobLines()
    deadline = time.monotonic() + DRAINER_STEP_BUDGET_SECONDS + 1
    evidence([started("t0", None)], None, near, ListedRooms(), deadline)
    assert near.deadlines == [deadline - DRAINER_STEP_BUDGET_SECONDS]


def test_tts_evidence_is_read_from_the_tasks_stream_since_its_cordon() -> None:
    deps = cast(DrainerDependencies, SimpleNamespace(settings=EVIDENCE_SETTINGS, worker_logs=JobLines()))
    noted = Noted()
    assert read_tts_evidence(task("t0"), LONG_AGO, deps, noted, NOW, 1e12) == TtsEvidence(jobs=2, failed=1)
    assert deps.worker_logs.reads == [([stream_of("t0")], LONG_AGO)]  # type: ignore[attr-defined]
    refused = cast(
        DrainerDependencies,
        SimpleNamespace(settings=EVIDENCE_SETTINGS, worker_logs=JobLines(error=LOGS_DOWN)),
    )
    assert read_tts_evidence(task("t0"), LONG_AGO, refused, noted, NOW, 1e12) is None
    assert noted.pending == [LOGS_DOWN]


def test_a_manual_request_says_what_it_does_for_each_state() -> None:
    unmarked = plan_for(task("t0"), manual=ManualRequest("undrain", "t0"))["t0"]
    assert (unmarked.step, unmarked.reason) == (Step.SKIP, "not marked: nothing to undo")
    marked = plan_for(draining(Cause.VAD, LONG_AGO), manual=ManualRequest("undrain", "t0"))["t0"]
    assert (marked.step, marked.reason) == (Step.UNDO, "manual undrain (the operator's cooldown follows)")
    again = plan_for(draining(Cause.VAD, LONG_AGO), manual=ManualRequest("drain", "t0"))["t0"]
    assert (again.step, again.reason) == (Step.SKIP, "already draining")
    reaped_task = task("t0", **{STATE_TAG: "reaped", SINCE_TAG: epoch(LONG_AGO)})
    drained = plan_for(reaped_task, manual=ManualRequest("drain", "t0"))["t0"]
    assert (drained.step, drained.reason, drained.cause) == (Step.CORDON, "manual drain", Cause.MANUAL)


def test_a_stop_held_for_protected_rooms_names_them_or_says_they_are_unknown() -> None:
    due = draining(Cause.MANUAL, LONG_AGO, deadline=NOW - timedelta(seconds=1))
    guarded = {"guards_protected_rooms": True, "active_jobs": {"t0": 2}}
    two = plan_for(due, protected_rooms={"t0": ("lesson-demo-1", "lesson-demo-2")}, **guarded)["t0"]
    assert two.reason == "not stopped: hosts protected live room(s) lesson-demo-1, lesson-demo-2"
    unknown = plan_for(due, protected_rooms={"t0": None}, **guarded)["t0"]
    assert unknown.reason == "not stopped: its rooms are unknown and the reaper policy protects some rooms"


def test_tts_evidence_is_read_up_to_now_within_the_step_deadline() -> None:
    logs = JobLines()
    deps = cast(DrainerDependencies, SimpleNamespace(settings=EVIDENCE_SETTINGS, worker_logs=logs))
    deadline = time.monotonic() + DRAINER_STEP_BUDGET_SECONDS + 1
    read_tts_evidence(task("t0"), LONG_AGO, deps, Noted(), NOW, deadline)
    assert (logs.ends, logs.deadlines) == ([NOW], [deadline - DRAINER_STEP_BUDGET_SECONDS])


def test_the_guardrails_allow_exactly_k_draining_tasks() -> None:
    two = DrainerPolicy(max_draining_tasks=2, max_draining_fraction=1.0, min_healthy_tasks=1)
    assert Guardrails(_fleet(1, size=6), two).refusal() is None
    assert Guardrails(_fleet(2, size=6), two).refusal() == "guardrail: 2 draining, at most 2 at once"


def test_vad_recovery_needs_the_fleets_assessment_and_counts_a_silent_worker_as_quiet() -> None:
    assert vad_recovery(None, False, LONG_AGO, NOW, POLICY) == Recovery(False, "")
    quiet = Recovery(True, f"recovered: no slow inference for {POLICY.recovery_minutes} min")
    assert vad_recovery(None, True, LONG_AGO, NOW, POLICY) == quiet
    no_stats = WorkerAssessment("t0", "agent/c/t0", Pattern.QUIET, 0.0, False, "quiet", None)
    assert vad_recovery(no_stats, True, None, NOW, POLICY) == quiet  # no mark time: the window is open


def test_tts_recovery_without_evidence_or_with_a_failure_is_not_yet() -> None:
    enough = POLICY.tts_recovery_min_jobs
    assert tts_recovery(None, LONG_AGO, NOW, POLICY) == Recovery(False, "")
    assert not tts_recovery(TtsEvidence(jobs=enough + 5, failed=1), LONG_AGO, NOW, POLICY).recovered
    assert tts_recovery(TtsEvidence(jobs=enough, failed=0), None, NOW, POLICY) == Recovery(
        True, f"recovered: {enough} job(s) since the cordon all reached first audio (TTS evidence)"
    )


def test_the_evidence_counts_only_the_rooms_the_reaper_manages() -> None:
    young_support_call = LiveRoom("support-call", "RM_s", NOW, 0)
    settings = SimpleNamespace(
        log_stream_for=stream_of,
        drainer=SimpleNamespace(insights_timeout_seconds=22.0),
        reaper=SimpleNamespace(policy=ReaperPolicy(managed_room_pattern="lesson-.*")),
    )
    deps = SimpleNamespace(
        settings=settings,
        worker_logs=JobLines(),
        room_service_factory=lambda: ListedRooms(young_support_call),
    )
    rooms, _ = read_rooms([started("t0", None)], cast(DrainerDependencies, deps), Noted(), NOW, 1e12)
    assert rooms.active_jobs("t0") == 0


def test_the_job_lines_are_read_up_to_now() -> None:
    logs = JobLines()
    evidence(
        [started("t0", NOW - timedelta(hours=1)), started("t1", None)],
        [started("t0", NOW - timedelta(hours=1))],
        logs,
        ListedRooms(),
    )
    assert logs.ends == [NOW, NOW]


class UncountedListing:
    async def list_rooms(self) -> list[LiveRoom]:
        return [OLD_ROOM]

    async def aclose(self) -> None:
        return None


def test_a_room_service_without_a_counter_or_not_built_counts_no_livekit_request() -> None:
    _, calls, _ = evidence([started("t0", None)], None, JobLines(), UncountedListing())  # type: ignore[arg-type]
    assert calls == 0
    secret_down = SecretError("LiveKit credentials unreadable", resource="livekit")

    def no_client() -> Any:
        raise secret_down

    deps = SimpleNamespace(settings=EVIDENCE_SETTINGS, worker_logs=JobLines(), room_service_factory=no_client)
    noted = Noted()
    rooms, calls = read_rooms([started("t0", None)], cast(DrainerDependencies, deps), noted, NOW, 1e12)
    assert (rooms.live, calls, noted.pending) == (None, 0, [secret_down])
