"""The one verdict every path reaches (``fleet_remediation.domain.task_reach`` with
``group_verdict``): groups before workers, warm-up, late frames — at its edges."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime, timedelta

import pytest

from fleet_remediation.contract.task_reach import TaskReachSettings
from fleet_remediation.domain.group_verdict import (
    COHORT,
    ENDPOINT,
    REVISION,
    ZONE,
    TaskFacts,
    find_group_event,
    hypergeometric_tail,
)
from fleet_remediation.domain.task_reach import TaskReach, assess_task_reach

SETTINGS = TaskReachSettings()
NOW = datetime(2026, 12, 2, 8, 0, tzinfo=UTC)
OLD = NOW - timedelta(hours=3)


def streams(count: int, prefix: str = "t") -> list[str]:
    return [f"agent/a/{prefix}{i}" for i in range(count)]


def healthy(stream: str, responses: int = 60) -> TaskReach:
    return TaskReach(stream, responses, responses, 0)


def silent(stream: str, responses: int = 20) -> TaskReach:
    return TaskReach(stream, responses, 0, responses)


def zoned(names: list[str], zones: list[str], revision: str = "agent:7") -> list[TaskFacts]:
    return [
        TaskFacts(n, z, f"arn:aws:ecs:eu-west-1:1:task-definition/{revision}", OLD)
        for n, z in zip(names, zones, strict=True)
    ]


def test_the_hypergeometric_tail_is_the_exact_sum() -> None:
    # All 2 failing tasks in a group of 2 out of 11: 1 / C(11, 2).
    assert hypergeometric_tail(11, 2, 2, 2) == pytest.approx(1 / 55)
    # Two failing tasks in one of three equal zones of 999 tasks: about 1/9 each way.
    assert hypergeometric_tail(999, 333, 2, 2) == pytest.approx(333 * 332 / (999 * 998))
    assert hypergeometric_tail(10, 3, 2, 0) == 1.0
    assert hypergeometric_tail(10, 3, 2, 3) == 0.0


def _exact_tail(population: int, group: int, drawn: int, observed: int) -> float:
    ways = math.comb(population, drawn)
    return sum(
        math.comb(group, k) * math.comb(population - group, drawn - k) / ways
        for k in range(max(observed, 0), drawn + 1)
    )


@pytest.mark.parametrize("population", range(1, 13))
def test_the_hypergeometric_tail_is_a_probability_equal_to_the_exact_sum(population: int) -> None:
    for group in range(population + 1):
        for drawn in range(population + 1):
            for observed in range(-1, drawn + 2):
                tail = hypergeometric_tail(population, group, drawn, observed)
                assert 0.0 <= tail <= 1.0, (population, group, drawn, observed)
                assert tail == pytest.approx(_exact_tail(population, group, drawn, observed), abs=1e-12)
                if observed <= 0:
                    assert tail == 1.0  # exactly: never a sum that rounds below it


@pytest.mark.parametrize(
    ("alpha", "group"),
    # The group's p-value is exactly 1/55: a level at it holds, one just below does not.
    [(1 / 55, True), (1 / 55 * 1.0001, True), (1 / 55 * 0.9999, False)],
)
def test_a_group_event_at_exactly_its_level(alpha: float, group: bool) -> None:
    names = streams(11)
    facts = zoned(names, ["eu-west-1a"] * 2 + ["eu-west-1b"] * 9)
    found = find_group_event(names[:2], facts, {}, SETTINGS.model_copy(update={"group_alpha": alpha}))
    assert (found is not None) is group
    if found is not None:
        assert (found.dimension, found.value, found.failing) == (ZONE, "eu-west-1a", tuple(names[:2]))


@pytest.mark.parametrize(("failing", "group"), [(1, False), (2, True), (3, True)])
def test_a_group_needs_its_minimum_of_failing_tasks(failing: int, group: bool) -> None:
    # One below the minimum (2), at it, one above: a lone failing task is never a group.
    names = streams(40)
    facts = zoned(names, ["a"] * 4 + ["b"] * 36)
    assert (find_group_event(names[:failing], facts, {}, SETTINGS) is not None) is group


def test_two_unrelated_silent_tasks_in_one_of_three_zones_stay_two_suspects() -> None:
    names = streams(999)
    facts = zoned(names, ["a", "b", "c"] * 333)
    rows = [healthy(n) for n in names]
    rows[0], rows[3] = silent(names[0]), silent(names[3])  # both in zone a
    found = assess_task_reach(rows, SETTINGS, 999, facts, NOW)
    assert found.group is None
    assert {v.log_stream for v in found.suspects} == {names[0], names[3]}


def test_a_bad_revision_on_a_tenth_of_the_fleet_is_a_group_and_suspects_nobody() -> None:
    names = streams(200)
    facts = zoned(names[:20], ["a", "b"] * 10, "agent:8") + zoned(names[20:], ["a", "b"] * 90, "agent:7")
    rows = [silent(n) for n in names[:20]] + [healthy(n) for n in names[20:]]
    found = assess_task_reach(rows, SETTINGS, 200, facts, NOW)
    assert not found.fleet_wide
    assert found.group is not None
    assert (found.group.dimension, found.group.value) == (REVISION, "agent:8")
    assert not found.suspects
    assert "20 of the 20 tasks with task definition agent:8 fail" in found.reason


def test_a_regional_tts_endpoint_is_a_group_from_the_agents_lines() -> None:
    names = streams(100)
    facts = zoned(names, ["a", "b"] * 50)
    rows = [
        TaskReach(
            n, 20, 0 if i < 3 else 20, 20 if i < 3 else 0, tts_endpoint="tts/us-east-1" if i < 6 else "tts/eu"
        )
        for i, n in enumerate(names)
    ]
    found = assess_task_reach(rows, SETTINGS, 100, facts, NOW)
    assert found.group is not None
    assert (found.group.dimension, found.group.value) == (ENDPOINT, "tts/us-east-1")
    assert not found.suspects


def test_a_spreading_failure_counts_tasks_still_below_the_cordon_level() -> None:
    # One task past the cordon's level, four more only trending (2 of 20 missing): at the cordon's
    # level alone it would be a lone suspect; counted at the looser level it is a group.
    names = streams(500)
    facts = zoned(names, ["a"] * 25 + ["b"] * 475)
    rows = [healthy(n) for n in names]
    rows[0] = silent(names[0])
    for i in range(1, 5):
        rows[i] = TaskReach(names[i], 20, 18, 2)
    found = assess_task_reach(rows, SETTINGS, 500, facts, NOW)
    assert found.tested[0].p_value <= found.level
    assert found.group is not None
    assert len(found.failing) == 5
    assert not found.suspects


def test_a_new_task_with_late_first_frames_is_not_missing_them() -> None:
    names = streams(1000)
    rows = [healthy(n) for n in names]
    rows[0] = TaskReach(names[0], 5, 5, 3, late_frames=3)  # three slow first answers that then played
    facts = [TaskFacts(n, "", "", OLD) for n in names]
    assert not assess_task_reach(rows, SETTINGS, 1000, facts, NOW).suspects


@pytest.mark.parametrize(("age_minutes", "suspect"), [(4.9, False), (5.0, True)])
def test_a_task_in_warm_up_is_suspect_only_when_silent(age_minutes: float, suspect: bool) -> None:
    # Three of five answers missing, some frames played: within the allowance (5 min) it is warm-up.
    names = streams(100)
    rows = [healthy(n) for n in names]
    rows[0] = TaskReach(names[0], 5, 2, 3)
    facts = [TaskFacts(n, "", "", OLD) for n in names]
    facts[0] = TaskFacts(names[0], "", "", NOW - timedelta(minutes=age_minutes))
    found = assess_task_reach(rows, SETTINGS, 100, facts, NOW)
    assert [v.log_stream for v in found.suspects] == ([names[0]] if suspect else [])


def test_a_new_task_that_answers_nothing_is_suspect_at_once() -> None:
    names = streams(1000)
    rows = [healthy(n) for n in names]
    rows[0] = silent(names[0], responses=3)
    facts = [TaskFacts(n, "", "", OLD) for n in names]
    facts[0] = TaskFacts(names[0], "", "", NOW - timedelta(minutes=1))
    assert [v.log_stream for v in assess_task_reach(rows, SETTINGS, 1000, facts, NOW).suspects] == [names[0]]


def test_a_dimension_with_one_value_is_the_fleet_not_a_group() -> None:
    names = streams(30)
    facts = zoned(names, ["a"] * 30)
    assert find_group_event(names[:5], facts, {}, SETTINGS) is None


def test_a_start_cohort_is_its_slice_of_start_cohort_minutes() -> None:
    # Slices of 10 minutes from the hour: 07:50:00 and 07:59:59 share one, 08:00:00 starts the next.
    names = streams(40)
    starts = [NOW - timedelta(minutes=10), NOW - timedelta(seconds=1), NOW] + [OLD] * 37
    facts = [TaskFacts(n, "eu-west-1a", "agent:7", at) for n, at in zip(names, starts, strict=True)]
    found = find_group_event(names[:3], facts, {}, SETTINGS)
    assert found is not None
    assert (found.dimension, found.value, found.failing, found.members) == (
        COHORT,
        "at 07:50",
        tuple(names[:2]),
        tuple(names[:2]),
    )


def test_a_start_cohort_is_named_in_the_tasks_own_time_zone_not_the_machines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An operator's machine (the plan CLI) five and a half hours off UTC: the label is still ECS's UTC.
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        names = streams(40)
        starts = [NOW - timedelta(minutes=10), NOW - timedelta(seconds=1)] + [OLD] * 38
        facts = [TaskFacts(n, "eu-west-1a", "agent:7", at) for n, at in zip(names, starts, strict=True)]
        found = find_group_event(names[:2], facts, {}, SETTINGS)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert found is not None
    assert (found.dimension, found.value) == (COHORT, "at 07:50")


def test_a_group_events_evidence_is_its_label_and_what_it_counted() -> None:
    # Three of zone a's four tasks fail, and one task of zone b.
    names = streams(20)
    facts = zoned(names, ["eu-west-1a"] * 4 + ["eu-west-1b"] * 16)
    found = find_group_event([*names[:3], names[10]], facts, {}, SETTINGS)
    assert found is not None
    assert found.evidence() == {
        "group": "availability zone=eu-west-1a",
        "failing_in_group": 3,
        "tasks_in_group": 4,
        "failing_in_fleet": 4,
        "p_value_group": hypergeometric_tail(20, 4, 4, 3),
    }


def test_a_group_at_exactly_its_computed_level_holds_and_says_what_it_counted() -> None:
    names = streams(11)
    facts = zoned(names, ["eu-west-1a"] * 2 + ["eu-west-1b"] * 9)
    exactly = hypergeometric_tail(11, 2, 2, 2)
    found = find_group_event(names[:2], facts, {}, SETTINGS.model_copy(update={"group_alpha": exactly}))
    assert found is not None
    assert (found.tasks_in_group, found.failing_in_fleet, found.tasks, found.p_value) == (2, 2, 11, exactly)
    assert found.describe() == (
        "group event: 2 of the 2 tasks with availability zone eu-west-1a fail (2 failing of 11 tasks in "
        "the fleet; p = 0.018 that a group this size holds them by chance): notify, drain nobody"
    )


def test_of_two_groups_as_likely_the_first_dimension_is_named() -> None:
    # Zone and revision split the fleet alike: equal p-values; zone comes first.
    names = streams(11)
    facts = [
        TaskFacts(
            n,
            "a" if i < 2 else "b",
            f"arn:aws:ecs:eu-west-1:1:task-definition/agent:{7 if i < 2 else 8}",
            OLD,
        )
        for i, n in enumerate(names)
    ]
    found = find_group_event(names[:2], facts, {}, SETTINGS)
    assert found is not None
    assert (found.dimension, found.value) == (ZONE, "a")


@pytest.mark.parametrize(("first_frames", "suspect"), [(0, True), (1, False), (2, False)])
def test_a_young_task_is_warming_from_its_first_frame(first_frames: int, suspect: bool) -> None:
    names = streams(100)
    rows = [healthy(n) for n in names]
    rows[0] = TaskReach(names[0], 6, first_frames, 6 - first_frames)
    facts = [TaskFacts(n, "", "", OLD) for n in names]
    facts[0] = TaskFacts(names[0], "", "", NOW - timedelta(minutes=1))
    found = assess_task_reach(rows, SETTINGS, 100, facts, NOW)
    assert [v.log_stream for v in found.suspects] == ([names[0]] if suspect else [])


def test_without_the_time_no_task_is_taken_for_young() -> None:
    names = streams(100)
    rows = [healthy(n) for n in names]
    rows[0] = TaskReach(names[0], 5, 2, 3)
    facts = [TaskFacts(n, "", "", NOW - timedelta(minutes=1)) for n in names]
    assert [v.log_stream for v in assess_task_reach(rows, SETTINGS, 100, facts).suspects] == [names[0]]


def test_the_baseline_stays_below_one_when_every_other_response_times_out() -> None:
    rows = [silent(n) for n in streams(3)]
    (first, *_) = assess_task_reach(rows, SETTINGS, 3).tested
    assert first.baseline_rate == 1 - 1e-9
    assert first.p_value < 1.0


@pytest.mark.parametrize("young", [0, 1])
def test_the_reason_counts_the_suspects_and_the_tasks_in_warm_up(young: int) -> None:
    names = streams(100)
    rows = [healthy(n) for n in names]
    rows[50] = silent(names[50])
    facts = [TaskFacts(n, "", "", OLD) for n in names]
    facts[:young] = [TaskFacts(n, "", "", NOW - timedelta(minutes=1)) for n in names[:young]]
    found = assess_task_reach(rows, SETTINGS, 100, facts, NOW)
    warm_up = "; 1 in warm-up" if young else ""
    assert found.reason == f"1 of 100 tasks fail beyond chance (p <= {found.level:.3g}){warm_up}"


def test_a_fleet_wide_failure_in_one_zone_is_fleet_wide_not_a_group_and_suspects_nobody() -> None:
    names = streams(10)
    rows = [silent(n) for n in names[:3]] + [healthy(n) for n in names[3:]]
    facts = zoned(names, ["a"] * 3 + ["b"] * 7)
    assert find_group_event(names[:3], facts, {}, SETTINGS) is not None
    found = assess_task_reach(rows, SETTINGS, 10, facts, NOW)
    assert (found.fleet_wide, found.group) == (True, None)
    assert [v.suspect for v in found.tested] == [False, False, False]
