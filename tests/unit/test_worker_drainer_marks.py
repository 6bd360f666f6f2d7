"""A task's drainer tags are read once into a typed, frozen state (``task_tags.TaskMarks``): what each tag
reads as, what an unreadable tag reads as, and that deciding, recording and telling a run read
each task's tags only once."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from devkit.fakes.drainer_world import FUNCTION_ARN, offline_settings, schedule_event
from fleet_remediation.contract.events import DRAINER_EVENT_AGES
from fleet_remediation.contract.policies import DrainerPolicy
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Mode, Trigger, TriggerKind
from livekit_fleet_remediation.offline.eventbridge_events import door_on_arrival
from worker_drainer.adapters.ecs_model import EcsTask, TaskProtection
from worker_drainer.adapters.worker_logs import SlowVadStats
from worker_drainer.decide import task_tags as tags
from worker_drainer.decide.attribution import assess_fleet
from worker_drainer.decide.ladder import Snapshot, Step, plan_ladder
from worker_drainer.decide.task_tags import Cause, CordonProgress, State, TaskMarks
from worker_drainer.events import route_drainer_event
from worker_drainer.tell.incident_thread import message_incident
from worker_drainer.tell.message_lines import message_lines
from worker_drainer.tell.record import record_plan

NOW = datetime(2026, 9, 15, 17, 45, tzinfo=UTC)
POLICY = DrainerPolicy(max_draining_tasks=2, max_draining_fraction=0.5, min_healthy_tasks=1)


def epoch(moment: datetime) -> str:
    return str(int(moment.timestamp()))


def task(task_id: str, **marks: str) -> EcsTask:
    return EcsTask(f"arn:aws:ecs:eu-west-1:1:task/c/{task_id}", "RUNNING", "RUNNING", "service:svc", marks)


def test_a_cordon_reads_back_as_the_state_it_wrote() -> None:
    protection = TaskProtection(True, NOW + timedelta(minutes=30))
    written = tags.cordon_tags(NOW, "slow", Cause.TTS_SUSPECT, "desired-count", protection, 600, "inc-1")
    marks = TaskMarks.read(written)
    assert marks == TaskMarks(
        state=State.DRAINING,
        cause=Cause.TTS_SUSPECT,
        incident="inc-1",
        since=NOW,
        deadline=NOW + timedelta(seconds=600),
        cordon=CordonProgress.STARTED,
        capacity="desired-count",
        protected_before=True,
        protected_until=NOW + timedelta(minutes=30),
    )
    assert marks.marked
    assert marks.raised_capacity
    assert not marks.cordon_complete


def test_an_untagged_task_is_healthy_and_unmarked() -> None:
    marks = TaskMarks.read({})
    assert marks == TaskMarks()
    assert not marks.marked
    assert marks.cordon_complete  # a cordon without the progress tag was written in one go
    assert not marks.raised_capacity
    assert not marks.excluded


def test_unreadable_tags_read_as_absent_and_an_unreadable_cordon_is_finished_again() -> None:
    marks = TaskMarks.read(
        {
            tags.STATE_TAG: "sideways",
            tags.CAUSE_TAG: "gremlins",
            tags.SINCE_TAG: "yesterday",
            tags.COOLDOWN_TAG: "",
            tags.DEADLINE_TAG: "9" * 30,
            tags.CORDON_TAG: "half",
            tags.INCIDENT_TAG: "",
        }
    )
    assert (marks.state, marks.cause, marks.since, marks.cooldown_until) == (
        State.HEALTHY,
        Cause.VAD,
        None,
        None,
    )
    assert marks.incident is None
    assert marks.deadline is None  # a number beyond any date
    assert marks.cordon is CordonProgress.STARTED


@pytest.mark.parametrize(
    ("value", "excluded"), [("true", True), (" TRUE ", True), ("false", False), ("", False)]
)
def test_the_exclude_tag_is_read_as_a_flag(value: str, excluded: bool) -> None:
    assert TaskMarks.read({"livekit-drainer:exclude": value}).excluded is excluded


def test_the_state_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        TaskMarks().state = State.DRAINING  # type: ignore[misc]


def test_deciding_recording_and_telling_a_run_read_each_tasks_tags_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: list[str] = []
    read = TaskMarks.read.__func__  # type: ignore[attr-defined]

    def counted(cls: type[TaskMarks], found: dict[str, str]) -> TaskMarks:
        reads.append(found.get(tags.STATE_TAG, "healthy"))
        return read(cls, found)  # type: ignore[no-any-return]

    monkeypatch.setattr(TaskMarks, "read", classmethod(counted))
    cordoned = NOW - timedelta(minutes=5)
    fleet = [
        task(
            "t0", **{tags.STATE_TAG: "draining", tags.SINCE_TAG: epoch(cordoned), tags.INCIDENT_TAG: "inc-7"}
        ),
        task("t1", **{tags.STATE_TAG: "reaped", tags.SINCE_TAG: epoch(cordoned)}),
        task("t2"),
        task("t3"),
    ]
    slow = SlowVadStats("agent/c/t2", 300, 40.0, NOW - timedelta(minutes=25), NOW, 8)
    streams = {f"agent/c/{t.task_id}": t.task_id for t in fleet}
    assessed = assess_fleet([slow], streams, [t.task_id for t in fleet], POLICY)
    snapshot = Snapshot(now=NOW, tasks=fleet, fleet=assessed, start_new=True, active_jobs={"t0": 0})
    plan = plan_ladder(snapshot, POLICY)
    report = ReportBuilder("worker_drainer", "inv-1")
    report.mode = Mode.DRY_RUN
    report.trigger = Trigger(kind=TriggerKind.SCHEDULE, source="aws.events", detail={"time": "now"})
    record_plan(snapshot, plan, report)
    tick = schedule_event()
    door = door_on_arrival(tick, DRAINER_EVENT_AGES, FUNCTION_ARN, NOW)
    routed = route_drainer_event(tick, offline_settings("it"), door)
    assert message_incident(routed, "run", plan, snapshot) == "inc-7"
    assert message_lines(report.facts(), plan, snapshot)
    assert {s.task_id: s.step for s in plan.steps} == {"t0": Step.STOP, "t1": Step.WAIT, "t2": Step.CORDON}
    assert sorted(reads) == ["draining", "healthy", "healthy", "reaped"]
