"""The tick's per-task look in the unit that owns it (``worker_drainer.read.silent_task_tick``): what it
reads (the window, the tick memory, the recorded group event), what it writes (the memory, a group's
hold), the suspect it names and its evidence, the ECS facts a group is found by, and each unreadable
result left as the trigger it was. Stand-ins for the ledger and the logs; no AWS, no LiveKit."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from devkit.fakes.drainer_world import offline_settings
from fleet_remediation.contract.events import SuspectWorkerDetail, TimeWindow
from fleet_remediation.core.errors import AwsApiError, RemediationError
from fleet_remediation.core.notes import Noted
from fleet_remediation.core.report_model import Trigger, TriggerKind
from worker_drainer.adapters.ecs_model import EcsTask
from worker_drainer.decide.task_reach import TaskFacts, TaskReach
from worker_drainer.events import DrainerTrigger
from worker_drainer.read.silent_task_tick import (
    GROUP_EVENT,
    PER_TASK_REACH,
    during_silent_task,
    task_facts,
)

NOW = datetime(2026, 12, 2, 8, 0, tzinfo=UTC)
OLD = NOW - timedelta(hours=3)
WINDOW_MINUTES = 4
HOLD_MINUTES = 20
SETTINGS = offline_settings(
    "unit", task_reach={"window_minutes": WINDOW_MINUTES, "group_hold_minutes": HOLD_MINUTES}
)
TASKS = 60
TASK_IDS = [f"{i:02d}aa{i:02d}bb" for i in range(TASKS)]
STREAMS = [SETTINGS.log_stream_for(task_id) for task_id in TASK_IDS]
ZONES = [f"eu-west-1{'abc'[i % 3]}" for i in range(TASKS)]
REVISION = "arn:aws:ecs:eu-west-1:123456789012:task-definition/agent:7"


def _task(index: int, zone: str | None = None, revision: str = REVISION) -> EcsTask:
    return EcsTask(
        arn=f"arn:aws:ecs:eu-west-1:123456789012:task/cluster/{TASK_IDS[index]}",
        last_status="RUNNING",
        desired_status="RUNNING",
        group="service:agent",
        started_at=OLD,
        availability_zone=ZONES[index] if zone is None else zone,
        task_definition_arn=revision,
    )


RUNNING = [_task(i) for i in range(TASKS)]


def _rows(failing: set[int], frames_before: int = 20) -> list[TaskReach]:
    """Every task answers 60 responses; a failing one times out on 30 since its first frames."""
    return [
        TaskReach(STREAMS[i], frames_before + 30, frames_before, 30)
        if i in failing
        else TaskReach(STREAMS[i], 60, 60, 0)
        for i in range(TASKS)
    ]


@dataclass
class _TickMemory:
    before: list[str] = field(default_factory=list)
    written: list[tuple[tuple[str, ...], datetime, int]] = field(default_factory=list)
    read_error: RemediationError | None = None
    write_error: RemediationError | None = None

    def remember(self, streams: Sequence[str], now: datetime, ttl_seconds: int) -> None:
        if self.write_error is not None:
            raise self.write_error
        self.written.append((tuple(streams), now, ttl_seconds))

    def earlier(self, now: datetime) -> list[str]:
        if self.read_error is not None:
            raise self.read_error
        return self.before


@dataclass
class _Ledger:
    tick_memory: _TickMemory
    held: str | None = None
    holds: list[tuple[str, datetime, int]] = field(default_factory=list)
    read_error: RemediationError | None = None

    def group_event(self, now: datetime) -> str | None:
        if self.read_error is not None:
            raise self.read_error
        return self.held

    def hold_group_event(self, description: str, now: datetime, ttl_seconds: int) -> None:
        self.holds.append((description, now, ttl_seconds))


@dataclass
class _Logs:
    rows: list[TaskReach]
    reads: list[tuple[datetime, datetime]] = field(default_factory=list)
    error: RemediationError | None = None

    def task_reach(self, start: datetime, end: datetime, deadline: float) -> list[TaskReach]:
        self.reads.append((start, end))
        if self.error is not None:
            raise self.error
        return self.rows


def _deps(rows: list[TaskReach], earlier: Sequence[int] = (), held: str | None = None) -> Any:
    memory = _TickMemory([STREAMS[i] for i in earlier])
    return SimpleNamespace(
        settings=SETTINGS, ledger=_Ledger(memory, held), worker_logs=_Logs(rows), clock=lambda: NOW
    )


def _tick() -> DrainerTrigger:
    return DrainerTrigger(Trigger(kind=TriggerKind.SCHEDULE, detail={}), False)


def _suspect_event(index: int) -> DrainerTrigger:
    suspect = SuspectWorkerDetail(
        environment="unit",
        agent_service=SETTINGS.agent_service,
        log_stream=STREAMS[index],
        task_id=TASK_IDS[index],
        alarm_name="tts-reach",
        p_value=1e-9,
        window=TimeWindow(start=NOW - timedelta(minutes=5), end=NOW),
    )
    return DrainerTrigger(Trigger(kind=TriggerKind.SUSPECT_WORKER, detail={}), True, suspect=suspect)


def _run(
    parsed: DrainerTrigger, deps: Any, tasks: Sequence[EcsTask] = RUNNING
) -> tuple[DrainerTrigger, Noted]:
    noted = Noted()
    return during_silent_task(parsed, deps, tasks, noted, deadline=10**9), noted


def test_the_tick_reads_its_window_and_names_the_silent_task_with_its_evidence() -> None:
    deps = _deps(_rows({5}), earlier=[5])
    found, noted = _run(_tick(), deps)

    assert noted.pending == []
    assert deps.worker_logs.reads == [(NOW - timedelta(minutes=WINDOW_MINUTES), NOW)]
    assert found.start_new is True
    assert found.group_members == frozenset()
    suspect = found.suspect
    assert suspect is not None
    assert suspect.task_id == TASK_IDS[5]
    assert suspect.log_stream == STREAMS[5]
    assert suspect.alarm_name == PER_TASK_REACH
    assert (suspect.environment, suspect.agent_service) == ("unit", SETTINGS.agent_service)
    assert suspect.window == TimeWindow(start=NOW - timedelta(minutes=WINDOW_MINUTES), end=NOW)
    assert set(suspect.evidence) == {"responses", "timeouts", "baseline_rate"}
    assert (suspect.evidence["responses"], suspect.evidence["timeouts"]) == (50, 30)
    # Every other task answered all 60 of its responses: the fleet's rate is far below the suspect's.
    assert 0 <= suspect.evidence["baseline_rate"] < 0.1
    assert 0 < suspect.p_value < 1e-6
    detail = found.trigger.detail
    assert detail["silent_task"] == TASK_IDS[5]
    assert found_reason(detail).startswith("1 of 60 tasks fail beyond chance")
    assert GROUP_EVENT not in detail


def found_reason(detail: dict[str, Any]) -> str:
    reason = detail["task_reach"]
    assert isinstance(reason, str)
    assert reason
    return reason


def test_the_tick_remembers_its_failing_tasks_for_the_window() -> None:
    deps = _deps(_rows({5, 31}), earlier=[5, 31])
    _run(_tick(), deps)
    ((streams, at, ttl),) = deps.ledger.tick_memory.written
    assert set(streams) == {STREAMS[5], STREAMS[31]}
    assert (at, ttl) == (NOW, WINDOW_MINUTES * 60)


def test_a_tick_memory_that_cannot_be_written_is_noted_and_the_suspect_still_named() -> None:
    deps = _deps(_rows({5}), earlier=[5])
    unwritten = AwsApiError("the tick memory was not written", aws_code="InternalServerError")
    deps.ledger.tick_memory.write_error = unwritten
    found, noted = _run(_tick(), deps)
    assert noted.pending == [unwritten]
    assert found.suspect is not None
    assert found.suspect.task_id == TASK_IDS[5]


def test_a_suspect_event_is_re_checked_without_writing_the_tick_memory() -> None:
    deps = _deps(_rows({5}), earlier=[5])
    event = _suspect_event(5)
    found, noted = _run(event, deps)
    assert noted.pending == []
    assert deps.ledger.tick_memory.written == []
    assert found.suspect == event.suspect  # its own suspect, not one the tick names
    assert "silent_task" not in found.trigger.detail
    assert found_reason(found.trigger.detail)
    assert GROUP_EVENT not in found.trigger.detail


@pytest.mark.parametrize("kind", [TriggerKind.ALARM, TriggerKind.MANUAL])
def test_an_alarm_or_a_manual_run_reads_nothing_and_is_left_as_it_was(kind: TriggerKind) -> None:
    deps = _deps(_rows({5}), earlier=[5])
    parsed = DrainerTrigger(Trigger(kind=kind, detail={}), True)
    found, noted = _run(parsed, deps)
    assert found is parsed
    assert found.trigger.detail == {}
    assert deps.worker_logs.reads == []
    assert (noted.pending, deps.ledger.tick_memory.written) == ([], [])


def test_a_schedule_that_already_names_a_suspect_is_not_a_tick() -> None:
    deps = _deps(_rows({5}), earlier=[5])
    named = _suspect_event(7)
    parsed = DrainerTrigger(Trigger(kind=TriggerKind.SCHEDULE, detail={}), False, suspect=named.suspect)
    found, _ = _run(parsed, deps)
    assert found is parsed
    assert deps.worker_logs.reads == []


@pytest.mark.parametrize("unreadable", ["group event", "tick memory", "logs"])
def test_an_unreadable_look_is_noted_and_leaves_the_trigger_as_it_was(unreadable: str) -> None:
    deps = _deps(_rows({5}), earlier=[5])
    error = AwsApiError(f"the {unreadable} could not be read", aws_code="InternalServerError")
    if unreadable == "group event":
        deps.ledger.read_error = error
    elif unreadable == "tick memory":
        deps.ledger.tick_memory.read_error = error
    else:
        deps.worker_logs.error = error
    parsed = _tick()
    found, noted = _run(parsed, deps)
    assert found is parsed
    assert found.trigger.detail == {}
    assert noted.pending == [error]
    assert (deps.ledger.tick_memory.written, deps.ledger.holds) == ([], [])


def test_a_recorded_group_event_holds_the_tick_and_names_no_suspect() -> None:
    held = "group event: 4 of the 20 tasks with zone eu-west-1a fail"
    deps = _deps(_rows({5}), earlier=[5], held=held)
    found, noted = _run(_tick(), deps)
    assert noted.pending == []
    assert found.suspect is None
    assert found.trigger.detail[GROUP_EVENT] == held
    assert "silent_task" not in found.trigger.detail
    assert deps.ledger.holds == []  # the verdict sees no group now: the record is not renewed


# Four failing tasks of zone c (every third task from index 2), each seen at the previous tick.
ZONE_C_FAILING = {2, 5, 8, 11}


def test_a_group_seen_now_is_recorded_for_its_hold_and_its_tasks_named_for_the_undo() -> None:
    deps = _deps(_rows(ZONE_C_FAILING), earlier=sorted(ZONE_C_FAILING))
    found, noted = _run(_tick(), deps)
    assert noted.pending == []
    assert found.suspect is None
    ((description, at, ttl),) = deps.ledger.holds
    assert "eu-west-1c" in description
    assert (at, ttl) == (NOW, HOLD_MINUTES * 60)
    assert found.trigger.detail[GROUP_EVENT] == description
    zone_c = {TASK_IDS[i] for i in range(TASKS) if ZONES[i] == "eu-west-1c"}
    assert found.group_members == zone_c


def test_the_group_is_found_by_the_zone_each_running_task_is_in() -> None:
    # The same failing tasks, spread over three zones by ECS: no zone holds them, no group.
    spread = [_task(i, zone="eu-west-1" + "abc"[n % 3]) for n, i in enumerate(range(TASKS))]
    for n, i in enumerate(sorted(ZONE_C_FAILING)):
        spread[i] = _task(i, zone="eu-west-1" + "ab"[n % 2])
    deps = _deps(_rows(ZONE_C_FAILING), earlier=sorted(ZONE_C_FAILING))
    found, _ = _run(_tick(), deps, spread)
    assert deps.ledger.holds == []
    assert GROUP_EVENT not in found.trigger.detail


def test_the_group_is_found_by_the_revision_each_running_task_runs() -> None:
    # One zone each, but the failing tasks alone run revision 8.
    revised = [_task(i, zone="eu-west-1a") for i in range(TASKS)]
    for i in ZONE_C_FAILING:
        revised[i] = _task(i, zone="eu-west-1a", revision=REVISION.replace(":7", ":8"))
    deps = _deps(_rows(ZONE_C_FAILING), earlier=sorted(ZONE_C_FAILING))
    found, _ = _run(_tick(), deps, revised)
    ((description, _, _),) = deps.ledger.holds
    assert "task definition agent:8" in description
    assert found.group_members == {TASK_IDS[i] for i in ZONE_C_FAILING}


def test_a_task_fact_carries_the_stream_zone_revision_and_start_of_the_task() -> None:
    started = NOW - timedelta(minutes=7)
    task = EcsTask(
        arn=f"arn:aws:ecs:eu-west-1:123456789012:task/cluster/{TASK_IDS[3]}",
        last_status="RUNNING",
        desired_status="RUNNING",
        group="service:agent",
        started_at=started,
        availability_zone="eu-west-1b",
        task_definition_arn=REVISION,
    )
    assert task_facts(task, SETTINGS) == TaskFacts(STREAMS[3], "eu-west-1b", REVISION, started)


def test_a_suspect_event_while_a_second_task_begins_failing_is_held_as_a_group_forming() -> None:
    # Task 0 (zone a) was failing at the last tick; task 1 (zone b) began since: spreading, no group.
    deps = _deps(_rows({0, 1}), earlier=[0])
    found, _ = _run(_suspect_event(0), deps)
    assert deps.ledger.holds == []
    hold = found.trigger.detail[GROUP_EVENT]
    assert hold.startswith("a group may be forming (")
    assert hold.endswith("): this suspect drains nobody")
    assert found_reason(found.trigger.detail) in hold


def test_a_tick_while_a_second_task_begins_failing_names_no_suspect_and_records_no_hold() -> None:
    deps = _deps(_rows({0, 1}), earlier=[0])
    found, _ = _run(_tick(), deps)
    assert found.suspect is None
    assert GROUP_EVENT not in found.trigger.detail
    assert deps.ledger.holds == []


def test_every_task_failing_is_fleet_wide_and_names_no_suspect() -> None:
    everyone = set(range(TASKS))
    deps = _deps(_rows(everyone), earlier=sorted(everyone))
    found, _ = _run(_tick(), deps)
    assert found.suspect is None
    assert "silent_task" not in found.trigger.detail


def test_a_young_task_is_judged_by_its_age_at_the_tick() -> None:
    # Started two minutes before the tick, under the five-minute warm-up: a young task's partial
    # failure names nobody, a young task silent the whole window is named.
    young = [*RUNNING]
    young[5] = dataclasses.replace(RUNNING[5], started_at=NOW - timedelta(minutes=2))
    partial, _ = _run(_tick(), _deps(_rows({5}), earlier=[5]), young)
    assert partial.suspect is None
    silent, _ = _run(_tick(), _deps(_rows({5}, frames_before=0), earlier=[5]), young)
    assert silent.suspect is not None
    assert silent.suspect.task_id == TASK_IDS[5]
