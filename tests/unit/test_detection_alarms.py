"""The alarms as defined once in ``fleet_remediation.detection``: the metric math they render (what
CloudWatch evaluates) agrees with their Python evaluation (what the backtest and the benchmark
replay), and the TTS alarm is quiet on lag and fast on real failures, on crafted minute series."""

from __future__ import annotations

import dataclasses
import itertools
import random
import re
from collections.abc import Mapping

import pytest
from pydantic import ValidationError

from bench.detection import legacy_tts_reach
from fleet_remediation.contract.alarm_math import (
    AlarmDefinition,
    AnyOf,
    Expression,
    MinuteCounts,
    evaluate_alarm,
)
from fleet_remediation.contract.detection import DetectionConfig, TtsReachAlarmSettings, VadAlarmSettings


def metric_math(rendered: str, values: Mapping[str, float]) -> float:
    """An independent reading of the rendered metric math: translate its syntax to Python's (whose
    operator precedence is the usual one metric math follows) and evaluate it. It agrees with
    ``Expression.evaluate`` only if the rendering put every parenthesis where it belongs."""
    python = rendered.replace("^", "**").replace(" AND ", " and ").replace(" OR ", " or ")
    python = re.sub(r"FILL\((\w+), 0\)", r"values.get('\1', 0.0)", python)
    python = re.sub(r"\bIF\(", "_if(", python)
    scope = {"values": values, "_if": lambda condition, then, otherwise: then if condition else otherwise}
    return float(eval(python, scope))


@pytest.mark.parametrize(
    "definition",
    [
        DetectionConfig().tts_reach_alarm.definition(),
        DetectionConfig().vad_alarm.definition(),
        TtsReachAlarmSettings(timeout_sigmas=0, reach_lag_allowance=2.5, min_timeouts=7).definition(),
        legacy_tts_reach(),
    ],
    ids=["tts", "vad", "tts-custom", "legacy-tts"],
)
def test_rendered_metric_math_computes_what_the_evaluator_computes(definition: AlarmDefinition) -> None:
    expression: Expression = definition.expression
    rendered = expression.render()
    rng = random.Random(7)
    for _ in range(3000):
        responses = rng.choice([0, 1, 5, 19, 20, 25, 175, 1250, 10000]) + rng.randint(0, 3)
        values = {
            "responses": float(responses),
            "frames": float(max(0, responses - rng.randint(0, max(1, responses // 4)))),
            "timeouts": float(rng.randint(0, 60)),
            "warnings": float(rng.randint(0, 8)),
            "maxdelay": rng.uniform(0, 5),
        }
        for missing in rng.sample(sorted(values), rng.randint(0, 2)):
            del values[missing]  # a metric with no datapoint this period: FILL makes it 0
        assert metric_math(rendered, values) == expression.evaluate(values), (rendered, values)


def test_vad_expression_is_unchanged() -> None:
    assert (
        VadAlarmSettings().definition().expression.render()
        == "IF(FILL(warnings, 0) >= 3 AND FILL(maxdelay, 0) >= 2, 1, 0)"
    )


def states(definition: AlarmDefinition | AnyOf, minutes: list[MinuteCounts]) -> list[bool]:
    return [in_alarm for _, in_alarm in evaluate_alarm(definition, minutes)]


def test_vad_alarm_is_n_of_m_with_missing_not_breaching() -> None:
    breach, calm = MinuteCounts(vad_warnings=5, vad_max_delay=3.0), MinuteCounts()
    minutes = [breach, calm, breach, calm, breach, calm, calm]
    # Minute 4 completes 3 of the last 5 (0, 2, 4); minute 5 sees only 2, 4; minute 6 only 2, 4.
    assert states(VadAlarmSettings().definition(), minutes) == [False] * 4 + [True, False, False]
    # Many warnings but none far behind is the seed's normal: never breaching.
    shallow = [MinuteCounts(vad_warnings=50, vad_max_delay=1.9)] * 10
    assert not any(states(VadAlarmSettings().definition(), shallow))


def healthy_minutes(responses_per_minute: int, minutes: int, spill: float) -> list[MinuteCounts]:
    """Every response reaches a first frame, but ``spill`` of each minute's frames land in the
    next minute (a 0.3-9 s lag at the minute boundary); the volume alternates +-20 % as Poisson
    noise does, so the spilled share moves every minute. The first minute receives the frames of
    the minute before it, as any minute of running traffic does."""
    series, carried = [], round(responses_per_minute * 1.2 * spill)
    for index in range(minutes):
        responses = round(responses_per_minute * (1.2 if index % 2 else 0.8))
        spilled = round(responses * spill)
        series.append(MinuteCounts(responses=responses, first_frames=responses - spilled + carried))
        carried = spilled
    return series


@pytest.mark.parametrize("volume", [35, 250, 2000])
def test_first_audio_lag_at_the_minute_boundary_does_not_breach(volume: int) -> None:
    minutes = healthy_minutes(volume, 60, spill=0.15)
    assert not any(states(TtsReachAlarmSettings().definition(), minutes))
    # The old per-minute reach alarm pages on the very same minutes: the series has the lag.
    assert any(states(legacy_tts_reach(), minutes))


@pytest.mark.parametrize("volume", [35, 250, 2000])
def test_isolated_timeouts_of_healthy_traffic_do_not_breach(volume: int) -> None:
    # 0.1 % of responses hang once: expected per 5-min window 0.175 / 1.25 / 10; these minutes carry
    # twice that, all in one window.
    minutes = healthy_minutes(volume, 30, spill=0.1)
    per_window = max(1, round(volume * 5 * 0.002))
    for index in range(10, 15):
        minutes[index].first_audio_timeouts = per_window // 5 + (index - 10 < per_window % 5)
    assert not any(states(TtsReachAlarmSettings().definition(), minutes))


@pytest.mark.parametrize(("volume", "workers"), [(5, 3), (35, 8), (250, 20), (2000, 60)])
def test_a_silent_worker_breaches_within_three_minutes(volume: int, workers: int) -> None:
    """From minute 10 one worker's share of responses times out (10 s after each response, so a
    few land in the next minute) and never reaches a first frame."""
    minutes = healthy_minutes(volume, 30, spill=0.1)
    share = 1 / workers
    for index in range(10, 30):
        failed = max(1, round(minutes[index].responses * share))
        minutes[index].first_frames -= failed
        minutes[index].first_audio_timeouts = failed
    in_alarm = states(TtsReachAlarmSettings().definition(), minutes)
    assert not any(in_alarm[:10])
    fired = in_alarm.index(True)
    assert fired - 10 + 1 <= 3, f"ALARM at the end of minute {fired}, {fired - 9} min after onset"


def test_without_timeout_lines_a_provider_outage_breaches_on_missing_frames() -> None:
    minutes = healthy_minutes(35, 30, spill=0.15)
    for minute in minutes[12:]:
        minute.first_frames = 0
    in_alarm = states(TtsReachAlarmSettings().definition(), minutes)
    assert not any(in_alarm[:12])
    assert in_alarm.index(True) <= 13


def test_a_burst_pages_once_while_it_is_inside_the_sliding_window() -> None:
    definition = TtsReachAlarmSettings().definition()
    minutes = [MinuteCounts(responses=35, first_frames=35) for _ in range(20)]
    minutes[4].first_audio_timeouts = 3
    minutes[5].first_audio_timeouts = 3  # one lesson's timeouts, across a minute boundary
    in_alarm = states(definition, minutes)
    # ALARM from the minute the window holds 5 of them until the window has passed both minutes.
    assert [i for i, state in enumerate(in_alarm) if state] == [5, 6, 7, 8]


def test_m_of_n_periods_slide_with_the_evaluation_minute_as_cloudwatch_documents() -> None:
    """AWS, "Evaluating an alarm": a period of a minute or more is evaluated every minute over the
    last Period x Evaluation Periods; with a 5-minute period, minutes 1-5 at the end of minute 5,
    minutes 2-6 at the end of minute 6. So 1 of 3 five-minute periods does not hold an ALARM for
    15 minutes: one minute later the breaching window is split between two periods, and it comes
    back whole every 5 minutes: three pages for one burst (the reason the TTS alarm keeps N = 1)."""
    one_of_three = dataclasses.replace(
        TtsReachAlarmSettings().definition(), evaluation_periods=3, datapoints_to_alarm=1
    )
    minutes = [MinuteCounts(responses=35, first_frames=35) for _ in range(30)]
    minutes[10].first_audio_timeouts = 3
    minutes[13].first_audio_timeouts = 2  # 5 in a window only while it holds minutes 10 to 13
    in_alarm = states(one_of_three, minutes)
    assert [i for i, state in enumerate(in_alarm) if state] == [13, 14, 18, 19, 23, 24]
    assert sum(1 for before, now in itertools.pairwise([False, *in_alarm]) if now and not before) == 3


def _pages(in_alarm: list[bool]) -> int:
    return sum(1 for before, now in itertools.pairwise([False, *in_alarm]) if now and not before)


def test_the_holding_window_holds_an_incident_once_it_has_two_bursts() -> None:
    """A silent worker's sessions fail in bursts minutes apart (here 5 timeouts every 9 minutes at
    35 responses a minute): the 5-minute window clears between bursts and pages again each time.
    The 30-minute window over the same rule breaches from the second burst on (its threshold is
    7.7 timeouts) and holds the incident until it is over: two pages instead of five."""
    settings = TtsReachAlarmSettings()
    minutes = [MinuteCounts(responses=35, first_frames=35) for _ in range(90)]
    for burst in range(10, 50, 9):
        minutes[burst].first_audio_timeouts = 5
    fast_alone = states(settings.definition(), minutes)
    held = states(settings.alarm(), minutes)
    assert _pages(fast_alone) == 5
    assert _pages(held) == 2
    assert [
        i for i, (before, now) in enumerate(itertools.pairwise([False, *held])) if now and not before
    ] == [
        10,
        19,
    ]
    assert all(held[19:67]), "held while the 30-minute window holds two bursts"
    assert not any(held[67:])


def test_the_holding_window_alone_never_pages_on_healthy_isolated_hangs() -> None:
    """A healthy provider's isolated hangs (0.1 % of 2,000 responses a minute, about 2 a minute)
    stay under the 30-minute threshold (2 + E + 4.5 sqrt(E), E = 60)."""
    rng = random.Random(7)
    minutes = [MinuteCounts(responses=2000, first_frames=2000) for _ in range(600)]
    for minute in minutes:
        minute.first_audio_timeouts = sum(rng.random() < 0.001 for _ in range(2000))
    assert not any(states(TtsReachAlarmSettings().alarm(), minutes))


def test_a_hold_of_zero_leaves_the_fast_window_alone() -> None:
    assert TtsReachAlarmSettings(hold_window_minutes=0).alarm().children == (
        TtsReachAlarmSettings().definition(),
    )
    with pytest.raises(ValidationError, match="hold_window_minutes"):
        TtsReachAlarmSettings(hold_window_minutes=5)


def test_reach_rule_needs_its_minimum_volume() -> None:
    quiet_night = [MinuteCounts(responses=3, first_frames=0) for _ in range(10)]  # 15 per window
    assert not any(states(TtsReachAlarmSettings().definition(), quiet_night))


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"window_minutes": 45}, "analysis_window_minutes"),
        ({"evaluation_windows": 2}, "evaluation_windows"),
        ({"min_timeouts": 0.5}, "min_timeouts"),
        ({"expected_timeout_rate": 1.0}, "expected_timeout_rate"),
        ({"reach_max_missing_fraction": -0.1}, "reach_max_missing_fraction"),
        ({"threshold": 0.97}, "threshold"),
    ],
)
def test_invalid_tts_settings_are_rejected_naming_the_field(settings: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        TtsReachAlarmSettings.model_validate(settings)


def test_the_vad_page_holds_a_starved_worker_between_its_bursts() -> None:
    """A starved worker's backlog breaches in bursts (3 minutes in every 8): 3 of 5 alone pages at
    each burst; 6 of 30 holds the incident from the second burst until it is over."""
    breach, calm = MinuteCounts(vad_warnings=5, vad_max_delay=3.0), MinuteCounts()
    pattern = ([breach] * 3 + [calm] * 5) * 5 + [calm] * 40
    settings = VadAlarmSettings()
    assert [part.label for part in settings.alarm().children] == ["3of5min", "6of30min"]
    assert _pages(states(settings.definition(), pattern)) == 5
    held = states(settings.alarm(), pattern)
    assert _pages(held) == 2
    assert not held[-1]
    assert VadAlarmSettings(hold_minutes=0).alarm().children == (settings.definition(),)
    with pytest.raises(ValidationError, match="hold_minutes"):
        VadAlarmSettings(hold_minutes=30, hold_datapoints=3)
