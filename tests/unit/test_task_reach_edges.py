"""Every threshold of the per-task rule (``worker_drainer.decide.task_reach``) at its edge and one step
either side, on the unit that owns it: the minimum timeout count (a task that timed out on every
response, exactly at the minimum, is named), the minimum failing share, the significance level
(``p <= level``), and the rule's own fleet-wide branch (tested here, not through the drainer's
later check): its share of the fleet and its "at least two tasks"."""

from __future__ import annotations

import math

import pytest

from fleet_remediation.contract.signals import SignalCatalog
from fleet_remediation.contract.task_reach import TaskReachSettings
from worker_drainer.decide.task_reach import TaskReach, assess_task_reach, binomial_tail
from worker_drainer.read.task_reach_query import task_reach_query

HEALTHY = TaskReach("agent/agent/healthy", responses=40, first_frames=40, timeouts=0)


def _stream(i: int) -> str:
    return f"agent/agent/{i:032x}"


def _fleet(failing: list[TaskReach], size: int) -> list[TaskReach]:
    healthy = [TaskReach(_stream(1000 + i), 40, 40, 0) for i in range(size - len(failing))]
    return [*failing, *healthy]


@pytest.mark.parametrize(
    ("timeouts", "named"), [(3, False), (4, True), (5, True)], ids=["one-under", "at", "one-over"]
)
def test_a_task_that_timed_out_on_every_response_is_named_from_exactly_the_minimum_count(
    timeouts: int, named: bool
) -> None:
    settings = TaskReachSettings(min_timeouts=4)
    silent = TaskReach(_stream(1), responses=timeouts, first_frames=0, timeouts=timeouts)
    found = assess_task_reach(_fleet([silent], 10), settings, 10)
    # Under the minimum the task is not even tested, however unlikely its timeouts.
    assert binomial_tail(3, 3, settings.expected_timeout_rate) <= found.level
    assert [v.log_stream for v in found.suspects] == ([silent.log_stream] if named else [])
    assert [v.log_stream for v in found.tested] == ([silent.log_stream] if named else [])
    assert not found.fleet_wide


@pytest.mark.parametrize(
    ("responses", "named"),
    [(51, False), (50, True), (49, True)],
    ids=["share-under", "share-at", "share-over"],
)
def test_a_task_is_named_from_exactly_the_minimum_failing_share(responses: int, named: bool) -> None:
    settings = TaskReachSettings(min_failing_share=0.1)
    # 5 of 50 responses: exactly 10 %; significant in each case (the share alone decides).
    task = TaskReach(_stream(1), responses=responses, first_frames=responses - 5, timeouts=5)
    found = assess_task_reach(_fleet([task], 10), settings, 10)
    (verdict,) = found.tested
    assert verdict.p_value <= found.level
    assert verdict.suspect is named


def _settings_whose_level_is(p: float, tasks: int = 1) -> TaskReachSettings:
    """Settings for a fleet of ``tasks`` whose per-tick level is exactly ``p`` (as a float)."""
    base = TaskReachSettings(tick_minutes=60)
    per_day = p * (1440 / base.tick_minutes) * tasks
    for _ in range(64):
        settings = base.model_copy(update={"false_cordons_per_day": per_day})
        if settings.level(tasks) == p:
            return settings
        per_day = math.nextafter(per_day, math.inf if settings.level(tasks) < p else -math.inf)
    raise AssertionError("no setting gives this level exactly")


@pytest.mark.parametrize("step", [-1, 0, 1], ids=["level-below-p", "level-at-p", "level-above-p"])
def test_a_task_is_named_at_a_p_value_equal_to_the_level(step: int) -> None:
    task = TaskReach(_stream(1), responses=3, first_frames=0, timeouts=3)
    p = binomial_tail(3, 3, TaskReachSettings().expected_timeout_rate)
    at = _settings_whose_level_is(p)
    per_day = at.false_cordons_per_day
    if step:
        # One representable step of the setting, enough to move the level off p.
        while at.model_copy(update={"false_cordons_per_day": per_day}).level(1) == p:
            per_day = math.nextafter(per_day, math.inf * step)
    settings = at.model_copy(update={"false_cordons_per_day": per_day})
    found = assess_task_reach([task], settings, 1)
    assert (found.level > p, found.level == p, found.level < p)[1 - step]
    (verdict,) = found.tested
    assert verdict.p_value == p
    assert verdict.suspect is (step >= 0)


def _silent(i: int) -> TaskReach:
    return TaskReach(_stream(i), responses=10, first_frames=0, timeouts=10)


@pytest.mark.parametrize(
    ("failing", "fleet_wide"),
    [(3, False), (4, True), (5, True)],
    ids=["share-under", "share-at", "share-over"],
)
def test_the_rule_itself_calls_a_failure_fleet_wide_from_exactly_its_share_of_the_fleet(
    failing: int, fleet_wide: bool
) -> None:
    settings = TaskReachSettings(fleet_wide_fraction=0.2)
    found = assess_task_reach(_fleet([_silent(i) for i in range(failing)], 20), settings, 20)
    assert found.fleet_wide is fleet_wide
    if fleet_wide:
        assert found.suspects == (), "a fleet-wide failure names nobody"
        assert found.reason == f"{failing} of 20 tasks fail (>= 20%): fleet-wide"
    else:
        assert found.suspects, "under the share, the failing tasks stay suspects"
        assert "fleet-wide" not in found.reason


@pytest.mark.parametrize(("failing", "fleet_wide"), [(1, False), (2, True)], ids=["one-task", "two-tasks"])
def test_one_failing_task_is_never_fleet_wide_even_when_it_is_the_share(
    failing: int, fleet_wide: bool
) -> None:
    # A fleet of 5 at 20 %: one task is the share, yet one task alone is that task's failure.
    settings = TaskReachSettings(fleet_wide_fraction=0.2)
    found = assess_task_reach(_fleet([_silent(i) for i in range(failing)], 5), settings, 5)
    assert found.fleet_wide is fleet_wide
    assert bool(found.suspects) is not fleet_wide


def test_the_fleet_is_the_larger_of_the_running_tasks_and_the_streams_seen() -> None:
    settings = TaskReachSettings(fleet_wide_fraction=0.2)
    rows = _fleet([_silent(i) for i in range(4)], 20)
    # 20 streams but 10 running tasks (some replaced): the fleet is 20, 4 is its share exactly.
    assert assess_task_reach(rows, settings, 10).tasks == 20
    assert assess_task_reach(rows, settings, 10).fleet_wide
    # 20 streams, 30 running: 4 is under 20 % of 30.
    assert not assess_task_reach(rows, settings, 30).fleet_wide


@pytest.mark.parametrize("step", [-1, 0], ids=["trend-level-below-p", "trend-level-at-p"])
def test_a_task_failing_at_exactly_the_looser_level_counts_towards_a_fleet_wide_failure(step: int) -> None:
    """ "Is anyone else failing?" asks at the looser of ``trend_p`` and the cordon's level (a spreading
    failure's tasks count while they cross it): a task at exactly that level counts, one step above
    it does not."""
    rows = [TaskReach(_stream(i), responses=3, first_frames=0, timeouts=3) for i in range(2)]
    p = binomial_tail(3, 3, TaskReachSettings().expected_timeout_rate)
    trend = p if step == 0 else math.nextafter(p, -math.inf)
    # The cordon's level far below p: only trend_p decides whether the two tasks count as failing.
    settings = TaskReachSettings(trend_p=trend, false_cordons_per_day=1e-9, fleet_wide_fraction=0.2)
    assert settings.level(2) < trend
    found = assess_task_reach(rows, settings, 2)
    assert found.fleet_wide is (step == 0)


def test_the_per_task_query_is_exactly_the_signals_summed_per_stream() -> None:
    # Pinned as Logs Insights reads it: a wrong separator or field is a query error or a wrong count.
    # Both line formats count: per-response lines (strcontains) and the agent package's summaries.
    assert task_reach_query(SignalCatalog.default()) == (
        'filter message = "agent_response_started" or message = "tts_node_first_audio_frame" or '
        'message = "tts_first_audio_timeout" or message = "tts_late_first_audio_frame" or '
        'message = "agent_tts_summary"\n'
        '| stats sum(strcontains(message, "agent_response_started")) as responses, '
        "sum(responses) as responses_summed, "
        'sum(strcontains(message, "tts_node_first_audio_frame")) as first_frames, '
        "sum(first_frames) as first_frames_summed, "
        'sum(strcontains(message, "tts_first_audio_timeout")) as timeouts, '
        'sum(strcontains(message, "tts_late_first_audio_frame")) as late_frames, '
        "sum(late_frames) as late_frames_summed, latest(tts_endpoint) as tts_endpoint by @logStream\n"
        "| limit 10000"
    )


@pytest.mark.parametrize(
    ("k", "n", "p", "tail"),
    [
        (0, 5, 0.1, 1.0),
        (6, 5, 0.1, 0.0),
        (1, 10, 0.1, 1.0),  # at the mean: never significant
        (3, 5, 0.5, 16 / 32),
        (5, 5, 0.5, 1 / 32),
    ],
    ids=["none", "more-than-n", "at-the-mean", "above-the-mean", "all"],
)
def test_the_binomial_tail_at_its_edges(k: int, n: int, p: float, tail: float) -> None:
    assert binomial_tail(k, n, p) == pytest.approx(tail, rel=1e-12)


def test_a_rest_of_the_fleet_failing_more_raises_the_baseline_the_task_is_tested_against() -> None:
    # The task: 5 of 50 (10 %); the rest: 1 of 1 response timed out (rate 1: the whole rest fails).
    task = TaskReach(_stream(1), responses=50, first_frames=45, timeouts=5)
    rest = TaskReach(_stream(2), responses=1, first_frames=0, timeouts=1)
    found = assess_task_reach([task, rest], TaskReachSettings(), 10)
    (verdict,) = found.tested
    assert (verdict.responses, verdict.timeouts) == (50, 5)
    assert verdict.baseline_rate == pytest.approx(1 - 1e-9)
    assert not verdict.suspect
    # The same task beside a rest failing at 5 %: tested against 5 %, not against the healthy rate.
    rest = TaskReach(_stream(2), responses=100, first_frames=95, timeouts=5)
    found = assess_task_reach([task, rest], TaskReachSettings(min_timeouts=3), 10)
    (verdict, *_) = found.tested
    assert verdict.baseline_rate == pytest.approx(0.05)
    assert verdict.p_value == pytest.approx(binomial_tail(5, 50, 0.05))
    assert not verdict.suspect


def test_the_rule_described_names_every_setting_it_reads() -> None:
    settings = TaskReachSettings(
        window_minutes=4,
        min_timeouts=6,
        min_failing_share=0.35,
        false_cordons_per_day=0.25,
        expected_timeout_rate=0.0125,
        fleet_wide_fraction=0.45,
        group_min_tasks=3,
        group_alpha=0.02,
        warmup_minutes=7.5,
    )
    described = settings.describe()
    for shown in ("last 4 min", ">= 6 and", ">= 35%", "p <= 0.25/day", "max(1.25%", "at 45% of tasks"):
        assert shown in described, shown
    for shown in (">= 3 failing tasks", "(p <= 0.02)", "younger than 7.5 min only when silent"):
        assert shown in described, shown
