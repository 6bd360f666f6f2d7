"""The fleet-scale detection benchmark's harness on short seeded runs (no timing asserted): what it
reports for each option is what the option's decision did on the simulated counts."""

from __future__ import annotations

from bench.task_detection import run_family
from bench.task_detection_report import option_figures
from devkit.fleet_counts import FleetCounts, fleet


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
