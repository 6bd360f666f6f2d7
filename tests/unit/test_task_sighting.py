"""The sighting rule of the one verdict (``fleet_remediation.domain.task_reach``, ``earlier``): with the
previous tick's failing tasks remembered, a suspect stands at its second sighting, and not while
another task began failing beside it (a spreading failure's first task waits for its group)."""

from __future__ import annotations

from fleet_remediation.contract.task_reach import TaskReachSettings
from fleet_remediation.domain.group_verdict import TaskFacts
from fleet_remediation.domain.task_reach import TaskReach, TaskReachAssessment, assess_task_reach

SETTINGS = TaskReachSettings()
TASKS = 60
NAMES = [f"agent/a/t{i}" for i in range(TASKS)]
# Three zones, and a minority TTS endpoint on 18 tasks (the spreading family's shape).
FACTS = [TaskFacts(name, f"eu-west-1{'abc'[i % 3]}") for i, name in enumerate(NAMES)]
MINORITY = set(NAMES[:18])


def _row(name: str, failing: bool, frames_before: int = 20) -> TaskReach:
    endpoint = "tts/us-east-1" if name in MINORITY else "tts/eu-west-1"
    if not failing:
        return TaskReach(name, 60, 60, 0, tts_endpoint=endpoint)
    # A failure that began inside the window: frames before it, every response since times out.
    return TaskReach(name, frames_before + 30, frames_before, 30, tts_endpoint=endpoint)


def _judge(failing: set[str], earlier: set[str] | None, frames_before: int = 20) -> TaskReachAssessment:
    rows = [_row(name, name in failing, frames_before) for name in NAMES]
    return assess_task_reach(rows, SETTINGS, TASKS, FACTS, None, earlier)


def test_without_memory_the_verdict_names_the_suspect_at_once() -> None:
    found = _judge({NAMES[0]}, None)
    assert [v.log_stream for v in found.suspects] == [NAMES[0]]


def test_a_lone_young_failure_waits_for_its_second_sighting() -> None:
    first = _judge({NAMES[0]}, set())
    assert first.suspects == ()
    assert first.reason.startswith("first sighting")
    second = _judge({NAMES[0]}, {NAMES[0]})
    assert [v.log_stream for v in second.suspects] == [NAMES[0]]


def test_a_task_silent_the_whole_window_needs_no_second_sighting() -> None:
    found = _judge({NAMES[0]}, set(), frames_before=0)
    assert [v.log_stream for v in found.suspects] == [NAMES[0]]


def test_a_second_task_failing_beside_a_seen_one_holds_both() -> None:
    # Two failing tasks of an 18-task endpoint among 60: p = 0.086, not yet a group event.
    found = _judge({NAMES[0], NAMES[1]}, {NAMES[0]})
    assert found.group is None
    assert found.suspects == ()
    assert found.spreading == (NAMES[1],)
    assert "began failing since the last tick" in found.reason


def test_the_next_tick_sees_the_group_formed() -> None:
    spread = {NAMES[0], NAMES[1], NAMES[2], NAMES[3]}
    found = _judge(spread, {NAMES[0], NAMES[1]})
    assert found.group is not None
    assert found.group.value == "tts/us-east-1"
    assert set(found.group.members) == MINORITY
    assert found.suspects == ()


def test_two_failures_that_stop_spreading_are_cordoned_at_the_next_tick() -> None:
    # Two unrelated dead tasks, both seen before and no new one: the most significant stands.
    found = _judge({NAMES[0], NAMES[30]}, {NAMES[0], NAMES[30]})
    assert found.group is None
    assert len(found.suspects) == 2


def test_a_healthy_task_crossing_only_the_looser_level_holds_nothing() -> None:
    rows = [_row(name, name == NAMES[0]) for name in NAMES]
    # Two missing frames in 20 responses: failing at the looser level, below a suspect's floor.
    rows[40] = TaskReach(NAMES[40], 20, 18, 2)
    found = assess_task_reach(rows, SETTINGS, TASKS, FACTS, None, {NAMES[0]})
    assert NAMES[40] in found.failing
    assert [v.log_stream for v in found.suspects] == [NAMES[0]]
