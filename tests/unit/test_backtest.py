"""The backtest on the shipped incident fixture: when each alarm fires, and the responder's verdict."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bench.detection import legacy_tts_reach
from fleet_remediation.contract.alarm_math import evaluate_alarm
from fleet_remediation.contract.detection import DetectionConfig
from livekit_fleet_remediation.cli.backtest import load_detection, render
from livekit_fleet_remediation.offline.backtest import bucket, run_backtest
from livekit_fleet_remediation.offline.log_export import LogEvent, read_events
from tools import make_incident_fixture
from tts_reach_alarm.analysis import Verdict

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "incident-2026-09-15.jsonl"


@pytest.fixture(scope="module")
def events():  # type: ignore[no-untyped-def]
    with FIXTURE.open() as handle:
        return read_events(handle)


def test_fixture_is_small_and_regenerates_identically() -> None:
    assert FIXTURE.stat().st_size < 1_000_000
    regenerated = [json.dumps(e, separators=(",", ":")) for e in make_incident_fixture.build()]
    assert regenerated == FIXTURE.read_text().splitlines()


def test_alarms_fire_at_the_expected_minutes(events) -> None:  # type: ignore[no-untyped-def]
    result = run_backtest(events, DetectionConfig())
    failing = result.failing_lessons
    assert len(failing) == 24
    assert {lesson.stream.rsplit("/", 1)[-1] for lesson in failing} == {make_incident_fixture.BAD_TASK}
    assert failing[0].started == datetime(2026, 9, 15, 17, 32, 53, tzinfo=UTC)
    # The resident job's slow VAD fires the VAD alarm before any lesson is hurt.
    # Its holding part (6 breaching minutes of 30) sees the intermittent backlog first, at 17:03; the
    # 3-of-5 part alone would fire at 17:14.
    assert result.first_alarm(result.vad_alarm) == datetime(2026, 9, 15, 17, 3, tzinfo=UTC)
    assert result.failed_before(result.first_alarm(result.vad_alarm)) == 0
    # The fixture has no timeout lines (the seed company's agents wrote none): the reach rule sees
    # the starved worker's responses without a first frame in a 5-minute window.
    fired = result.first_alarm(result.tts_alarm)
    assert fired == datetime(2026, 9, 15, 17, 37, tzinfo=UTC)
    assert result.failed_before(fired) == 3
    # The responder is judged at every ALARM, by its own investigation over the same events.
    tts_alarms = [t.at for t in result.transitions() if t.alarm == "tts_reach" and t.state == "ALARM"]
    assert [at for at, _ in result.verdicts] == tts_alarms
    assert tts_alarms[0] == fired
    verdict = result.verdicts[0][1]
    assert verdict.concentrated
    assert verdict.top is not None
    assert verdict.top.log_stream.endswith(make_incident_fixture.BAD_TASK)
    # At about 16 responses a minute the victims' missing frames hover at the reach rule's
    # threshold: the 5-minute window clears between victim lessons, the 30-minute window holds
    # them, so the incident pages once (its OK comes after the log ends).
    assert [(t.alarm, t.state, f"{t.at:%H:%M}") for t in result.transitions()] == [
        ("vad", "ALARM", "17:03"),
        ("vad", "OK", "17:08"),
        ("vad", "ALARM", "17:11"),
        ("tts_reach", "ALARM", "17:37"),
    ]
    fast_alone = run_backtest(
        events, DetectionConfig.model_validate({"tts_reach_alarm": {"hold_window_minutes": 0}})
    )
    assert [
        f"{t.at:%H:%M}" for t in fast_alone.transitions() if t.alarm == "tts_reach" and t.state == "ALARM"
    ] == [
        "17:37",
        "17:50",
        "17:58",
        "18:04",
        "18:11",
    ]


def test_one_failed_lesson_pages_but_the_verdict_is_inconclusive() -> None:
    """One job that never reaches first audio drags reach down enough to fire the alarm; with a
    single failed job the responder can blame neither a worker nor the fleet."""
    start = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)
    events = []
    for minute in range(6):
        for index in range(10):
            at = start + timedelta(minutes=minute, seconds=index * 5)
            events.append(
                LogEvent("agent/c/bad", at, {"message": "agent_response_started", "job_id": "AJ_silent"})
            )
        for index in range(12):
            at = start + timedelta(minutes=minute, seconds=1 + index * 4)
            job, stream = f"AJ_{minute}_{index}", f"agent/c/{index % 3}"
            events.append(LogEvent(stream, at, {"message": "agent_response_started", "job_id": job}))
            frame = {"message": "tts_node_first_audio_frame", "job_id": job}
            events.append(LogEvent(stream, at + timedelta(seconds=1), frame))
    result = run_backtest(sorted(events, key=lambda e: e.at), DetectionConfig())
    assert result.verdicts, "the alarm must fire for this test to mean anything"
    verdict = result.verdicts[0][1]
    assert verdict.verdict is Verdict.INCONCLUSIVE
    assert verdict.reason.startswith("inconclusive: 1 of 1 failed jobs")


def test_the_benchmark_baseline_replays_the_old_alarm_as_it_fired(events) -> None:  # type: ignore[no-untyped-def]
    """The old per-minute reach alarm that bench.detection compares against fired at 17:41 on this
    fixture (the backtest's figure before the redesign), four minutes after the new alarm."""
    minutes = bucket(events, DetectionConfig().catalog())
    states = [in_alarm for _, in_alarm in evaluate_alarm(legacy_tts_reach(), minutes)]
    first = minutes[states.index(True)].start
    assert first == datetime(2026, 9, 15, 17, 40, tzinfo=UTC)  # the minute that closes at 17:41


def test_both_export_shapes_are_read() -> None:
    event = {
        "logStreamName": "agent/c/t",
        "timestamp": 1_789_488_041_000,
        "message": json.dumps({"message": "agent_response_started", "job_id": "AJ_1"}),
        "eventId": "1",
        "ingestionTime": 1_789_488_042_000,
    }
    document = json.dumps({"events": [event, {**event, "message": "plain text line"}]})
    assert len(read_events(io.StringIO(document))) == 1
    lines = "\n".join(json.dumps(event) for _ in range(2))
    assert len(read_events(io.StringIO(lines))) == 2


def test_render_reports_latency(events, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cdk_json = tmp_path / "cdk.json"
    cdk_json.write_text(json.dumps({"context": {"environments": {"prod": {"detection": {}}}}}))
    config = load_detection(cdk_json, "prod")
    out = io.StringIO()
    render(run_backtest(events, config), config, out)
    text = out.getvalue()
    assert "TTS reach alarm fires 17:37: +4.1 min from the first failing session" in text
    assert "3 of 24 failing sessions had started by then" in text
