"""The traffic simulator (``devkit.traffic``): deterministic by seed, the timing it promises, the
failures it injects, and exported lines that the signal definitions read as the simulator counted."""

from __future__ import annotations

import io
import json
import math
import re
import statistics
from collections import defaultdict

import pytest

from devkit.traffic import (
    FIRST_FRAME,
    JOB_REQUEST,
    NORMAL_TTS,
    PROCESS_EXIT,
    RESPONSE,
    SLOW_TTS,
    SLOW_VAD,
    TIMEOUT,
    Event,
    Scenario,
    TrafficSimulation,
    diurnal_factor,
    export,
    scenario,
)
from fleet_remediation.contract.signals import SignalCatalog
from livekit_fleet_remediation.offline.backtest import bucket
from livekit_fleet_remediation.offline.log_export import read_events

STREAM = re.compile(r"^agent/livekit-agent/[0-9a-f]{32}$")


def all_events(sim: TrafficSimulation) -> list[Event]:
    return [event for _, events in sim.minutes() for event in events]


def test_same_seed_same_stream_other_seed_another() -> None:
    first = all_events(TrafficSimulation(scenario("daily", 35, 240, seed=5)))
    again = all_events(TrafficSimulation(scenario("daily", 35, 240, seed=5)))
    other = all_events(TrafficSimulation(scenario("daily", 35, 240, seed=6)))
    assert first == again
    assert first != other
    assert first == sorted(first)  # each minute in time order, minutes in order


@pytest.mark.parametrize(("tts", "median"), [(NORMAL_TTS, 3.0), (SLOW_TTS, 6.0)])
def test_first_frame_lag_is_heavy_tailed_within_the_seed_bounds(tts: object, median: float) -> None:
    base = scenario("steady", 250, 150, seed=2)
    sim = TrafficSimulation(Scenario(**{**base.__dict__, "tts": tts}))
    timeout = base.first_audio_timeout_seconds
    lags = [e[4] for e in all_events(sim) if e[2] == FIRST_FRAME and e[4] < timeout]
    assert len(lags) > 20_000
    assert min(lags) >= 0.3
    assert max(lags) <= 9.0
    assert statistics.median(lags) == pytest.approx(median, abs=0.25)
    # A heavy right tail: the slowest percent is far above the median.
    assert statistics.quantiles(lags, n=100)[98] > 1.4 * median


def test_frames_cross_minute_boundaries_as_real_lag_does() -> None:
    sim = TrafficSimulation(scenario("steady", 250, 60, seed=3))
    frames = [e for e in all_events(sim) if e[2] == FIRST_FRAME]
    crossing = sum(int(at // 60) != int((at - lag) // 60) for at, _, _, _, lag in frames)
    # Mean lag ~3.1 s of a 60 s minute: about one frame in twenty lands in the next minute.
    assert 0.03 < crossing / len(frames) < 0.08


def test_steady_volume_and_diurnal_curve() -> None:
    sim = TrafficSimulation(scenario("steady", 250, 240, seed=4))
    per_minute = [sum(e[2] == RESPONSE for e in events) for minute, events in sim.minutes() if minute >= 60]
    assert statistics.mean(per_minute) == pytest.approx(250, rel=0.1)
    assert diurnal_factor(17 * 3600) == pytest.approx(1.0)
    assert diurnal_factor(5 * 3600) == pytest.approx(0.03)
    assert diurnal_factor(3 * 86400 + 17 * 3600) == pytest.approx(1.0)


def test_every_lesson_warms_up_and_ends_and_the_fleet_is_replaced_by_a_rolling_deploy() -> None:
    sim = TrafficSimulation(scenario("daily", 35, 1440, seed=9))
    events = all_events(sim)
    starts, ends, warm_up = {}, {}, defaultdict(list)
    for at, task, kind, lesson, value in events:
        if kind == JOB_REQUEST:
            starts[lesson] = (at, task)
        elif kind == PROCESS_EXIT:
            ends[lesson] = at
        elif kind == SLOW_VAD and lesson in starts and at - starts[lesson][0] <= 12.5:
            warm_up[lesson].append(value)
    # Every lesson that had time to end (55 minutes at most) logged its end.
    assert {lesson for lesson, (at, _) in starts.items() if at < 1440 * 60 - 3300} <= ends.keys()
    assert all(len(delays) <= 9 and max(delays) < 2.0 for delays in warm_up.values())
    assert 0.6 < len(warm_up) / len(starts) < 0.8  # 70 % of lessons log a burst
    # One rolling deploy: every task replaced once, each old one gone after its last lesson.
    assert len(sim.tasks) == 2 * sim.scenario.workers
    replaced = [t for t in sim.tasks if t.exited is not None]
    assert len(replaced) == sim.scenario.workers
    for task in replaced:
        assert task.exited is not None
        assert all(at <= task.exited for at, index, *_ in events if index == task.index)
    fresh = [t for t in sim.tasks if t.exited is None]
    first_lessons = [
        min((at, lesson) for lesson, (at, task) in starts.items() if task == t.index) for t in fresh
    ]
    assert all(len(warm_up[lesson]) >= 3 for _, lesson in first_lessons)


def test_a_dead_worker_times_out_every_response_and_the_rest_of_the_fleet_does_not() -> None:
    sim = TrafficSimulation(scenario("tts-dead-worker", 35, 240, seed=3))
    events = all_events(sim)
    failure = sim.scenario.failure
    assert failure is not None
    start, end = failure.start_minute * 60, (failure.start_minute + failure.duration_minutes) * 60
    bad, sim_end = sim.truth.bad_task, sim.scenario.minutes * 60
    by_lesson: dict[int, list[Event]] = defaultdict(list)
    for event in events:
        by_lesson[event[3]].append(event)
    failed = healthy = 0
    for lesson_events in by_lesson.values():
        # A lesson still running when the simulation ends has logged no exit yet.
        exit_at = next((at for at, _, kind, *_ in lesson_events if kind == PROCESS_EXIT), math.inf)
        frames = {round(at - lag, 6) for at, _, kind, _, lag in lesson_events if kind == FIRST_FRAME}
        timeouts = {round(at - lag, 6) for at, _, kind, _, lag in lesson_events if kind == TIMEOUT}
        for at, task, kind, _, _ in lesson_events:
            if kind != RESPONSE or not start <= at < end:
                continue
            if task == bad:
                failed += 1
                assert round(at, 6) not in frames
                # Written 10 s later if the lesson was still on, and seen if the simulation was too.
                assert (round(at, 6) in timeouts) == (at + 10 < min(exit_at, sim_end))
            else:
                healthy += round(at, 6) in frames
    assert failed == sim.truth.failed_responses > 5
    assert healthy > 500


def test_the_zombie_holds_a_test_room_for_two_hours_with_a_growing_backlog() -> None:
    sim = TrafficSimulation(scenario("cpu-starved-zombie", 35, 290, seed=1))
    events = all_events(sim)
    requests = [e for e in events if e[2] == JOB_REQUEST and e[4] == 2.0]
    assert len(requests) == 1
    zombie = requests[0][3]
    mine = [e for e in events if e[3] == zombie]
    assert {e[1] for e in mine} == {sim.truth.bad_task}
    assert max(e[0] for e in mine) - min(e[0] for e in mine) >= 2.5 * 3600
    delays = [e[4] for e in mine if e[2] == SLOW_VAD]
    assert len(delays) > 100
    assert max(delays) > 10


def test_exported_lines_are_the_agents_json_and_the_signals_count_what_was_simulated() -> None:
    chosen = scenario("tts-dead-worker", 35, 200, seed=3)
    handle = io.StringIO()
    written = export(TrafficSimulation(chosen), handle)
    lines = handle.getvalue().splitlines()
    assert written == len(lines)
    raw = [json.loads(line) for line in lines]
    assert all(STREAM.match(item["logStreamName"]) for item in raw)
    records = [json.loads(item["message"]) for item in raw]
    assert all({"message", "level", "name", "pid", "timestamp"} <= r.keys() for r in records)
    requests = [r for r in records if r["message"] == "received job request"]
    assert requests
    assert all({"job_id", "room", "room_id"} <= r.keys() for r in requests)
    catalog = SignalCatalog.default()
    tts_lines = [r for r in records if r["name"] == "livekit_fleet_agent.signals"]
    assert all(r.get("job_id") for r in tts_lines)
    assert any(catalog.first_audio_timeout.matches(r) for r in tts_lines)

    # The metric-filter counts of the export, minute by minute, equal the simulator's own counts.
    from_lines = bucket(read_events(io.StringIO(handle.getvalue())), catalog)
    simulated: dict[int, list[float]] = {}
    for minute, events in TrafficSimulation(chosen).minutes():
        if events:
            simulated[minute] = [
                sum(e[2] == SLOW_VAD for e in events),
                sum(e[2] == RESPONSE for e in events),
                sum(e[2] == FIRST_FRAME for e in events),
                sum(e[2] == TIMEOUT for e in events),
            ]
    first_minute = min(simulated)
    read = {
        first_minute + index: [m.vad_warnings, m.responses, m.first_frames, m.first_audio_timeouts]
        for index, m in enumerate(from_lines)
        if m.vad_warnings or m.responses or m.first_frames or m.first_audio_timeouts
    }
    assert read == {minute: counts for minute, counts in simulated.items() if any(counts)}


def test_a_fleet_wide_slowdown_delays_frames_and_starves_vad_on_every_worker() -> None:
    sim = TrafficSimulation(scenario("fleet-slowdown", 250, 240, seed=2))
    events = all_events(sim)
    failure = sim.scenario.failure
    assert failure is not None
    start, end = failure.start_minute * 60, (failure.start_minute + failure.duration_minutes) * 60
    during = [e for e in events if start <= e[0] < end]
    late = [e for e in during if e[2] == FIRST_FRAME and e[4] > sim.scenario.first_audio_timeout_seconds]
    assert late  # frames still come, after the timeout
    assert sim.truth.first_failed_response is not None
    assert start <= sim.truth.first_failed_response < start + 60
    running = {t.index for t in sim.running_tasks(start)}
    backlogged = {e[1] for e in during if e[2] == SLOW_VAD and e[4] > 2.0}
    timed_out = {e[1] for e in during if e[2] == TIMEOUT}
    assert backlogged == timed_out == running
