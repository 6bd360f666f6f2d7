"""The fleet-scale detection benchmark's harness on short seeded runs (no timing asserted): what it
reports for each option is what the option's decision did on the simulated counts."""

from __future__ import annotations

from collections import Counter

from bench._task_detection import run_family
from bench._task_detection_report import option_figures
from devkit.fleet_counts import Fleet, FleetCounts, fleet
from devkit.traffic import (
    FIRST_FRAME,
    MEAN_LESSON_MINUTES,
    RESPONSE,
    RESPONSE_GAP_SECONDS,
    SLOW_VAD,
    TIMEOUT,
    TrafficSimulation,
    scenario,
)


def test_the_count_simulator_keeps_the_asked_volume_and_an_exact_onset() -> None:
    spec = fleet("tts-dead-worker", 200, 5000, 240, seed=2)
    sim = FleetCounts(spec)
    responses = sum(int(minute.responses.sum()) for minute in sim.minutes())
    assert abs(responses / spec.minutes - 5000) < 500
    assert spec.failure_start_minute is not None
    assert sim.truth.onset_seconds is not None
    assert spec.failure_start_minute * 60 <= sim.truth.onset_seconds < spec.failure_start_minute * 60 + 60
    assert sim.truth.bad_timeouts[0] == sim.truth.onset_seconds + spec.timeout_seconds


def test_a_silent_task_among_500_is_cordoned_alone_within_three_minutes_by_the_tick() -> None:
    figures = option_figures(run_family("tts-dead-worker", 500, 20000, 240, seeds=1), "a_tick")
    assert figures["right_task_cordoned"] == "1 of 1"
    assert figures["cordons_on_healthy"] == 0
    assert 0 < figures["worst_latency_minutes"] <= 3


def test_in_a_provider_outage_only_the_self_judging_workers_cordon_themselves() -> None:
    runs = run_family("provider-outage", 60, 2000, 240, seeds=1)
    assert option_figures(runs, "a_tick")["cordons_in_fleet_wide_event"] == 0
    assert option_figures(runs, "c_self")["cordons_in_fleet_wide_event"] == 60


def test_a_healthy_day_of_1000_tasks_cordons_nobody() -> None:
    runs = run_family("steady", 1000, 20000, 1440, seeds=1)
    for option in ("a_tick", "b_contributors", "c_self"):
        assert option_figures(runs, option)["cordons_on_healthy"] == 0


def test_the_counts_match_the_line_by_line_simulator_on_the_same_fleet() -> None:
    """The count simulator draws what ``devkit.traffic`` writes line by line: the same fleet (60
    tasks, 2,000 responses a minute, its call-length mean and cadence) gives the same rates."""
    lines = TrafficSimulation(scenario("steady", 2000, 120, seed=3))
    kinds = Counter(event[2] for _, events in lines.minutes(ordered=False) for event in events)
    spec = Fleet("steady", 60, 2000, 120, 3, MEAN_LESSON_MINUTES, sum(RESPONSE_GAP_SECONDS) / 2)
    counts = {"responses": 0, "frames": 0, "timeouts": 0, "vad": 0}
    for minute in FleetCounts(spec).minutes():
        counts["responses"] += int(minute.responses.sum())
        counts["frames"] += int(minute.frames.sum())
        counts["timeouts"] += int(minute.timeouts.sum())
        counts["vad"] += int(minute.vad_warnings.sum())
    # The line simulator starts empty; its first hour fills the fleet, so compare shares and the rate
    # of its second hour's worth only loosely.
    assert abs(counts["frames"] / counts["responses"] - kinds[FIRST_FRAME] / kinds[RESPONSE]) < 0.01
    assert abs(counts["timeouts"] / counts["responses"] - kinds[TIMEOUT] / kinds[RESPONSE]) < 0.001
    assert 0.5 < (counts["vad"] / counts["responses"]) / (kinds[SLOW_VAD] / kinds[RESPONSE]) < 2.0
