"""The detection-signal emitter in a real livekit-agents worker on the real livekit-server, installed
as a team installs it: the agent wheel from `make dist` in a fresh venv with only livekit-agents beside
it (the fake engines come from the checkout's devkit; the emitter does not).

The worker is the SDK's own CLI (``python -m livekit.agents start``) in a child process: jobs run in
their own processes, their log records cross the SDK's IPC to the main process, and the SDK's
``JsonFormatter`` writes them to stdout — the lines asserted here are those stdout lines. A real
participant listens in each room (the SDK plays audio only to a subscriber). The only fakes are the
TTS engines (``devkit/fakes/tts.py``, written against the SDK's ``tts.TTS`` interface).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from devkit.installed import InstalledEnvironment
from devkit.livekit_local import LocalLiveKit
from devkit.signal_bytes import measure_format
from devkit.signal_worker import SESSION_CLOSED, SignalAgentWorker
from fleet_remediation.contract.signals import SignalCatalog
from livekit_fleet_agent import (
    FIRST_AUDIO_FRAME_TEXT,
    FIRST_AUDIO_TIMEOUT_TEXT,
    RESPONSE_STARTED_TEXT,
    SUMMARY_TEXT,
)
from livekit_fleet_agent.detection_signals import LOGGER_NAME
from tests.metric_filter_pattern import insights_filter_matches, pattern_matches

# A worker start is bounded by its CPU (devkit.signal_worker.REGISTRATION), under a wall cap of 150 s.
pytestmark = [pytest.mark.livekit, pytest.mark.timeout(300)]
TIMEOUT_SECONDS = 1.5
# Scheduling on a shared 2-core machine: how late a timer or a line may be, at most.
SLACK_SECONDS = 0.5
HELLO = "Hello there."
PER_RESPONSE = {"line_format": "per_response"}
ENDPOINT = "test-tts/eu-west-1"


@pytest.fixture(scope="module")
def worker(
    livekit_server: LocalLiveKit, agent_installed: InstalledEnvironment
) -> Iterator[SignalAgentWorker]:
    running = SignalAgentWorker(livekit_server, python=agent_installed.python).start()
    yield running
    running.stop()


def _room() -> str:
    return f"lesson-{uuid.uuid4().hex[:8]}"


def _signals(lines: list[str]) -> list[dict[str, Any]]:
    return [record for record in map(json.loads, lines) if record["name"] == LOGGER_NAME]


def _at(record: dict[str, Any]) -> float:
    return datetime.fromisoformat(record["timestamp"]).timestamp()


def _job_of(worker: SignalAgentWorker, room: str) -> dict[str, Any]:
    return next(r for r in worker.records() if r["message"] == "received job request" and r["room"] == room)


def _assert_carries_the_job(signal: dict[str, Any], job: dict[str, Any]) -> None:
    assert signal["job_id"] == job["job_id"]
    assert signal["room"] == job["room"]
    assert signal["room_id"] == job["room_id"]
    assert signal["worker_id"].startswith("AW_")
    assert signal["speech_id"].startswith("speech_")


def _assert_closed_without_leaks(lines: list[str]) -> None:
    closed = next(r for r in map(json.loads, lines) if r["message"] == SESSION_CLOSED)
    assert closed["emitter_attached"] is False
    assert closed["emitter_tasks_left"] == 0


def _assert_catalog_agrees(lines: list[str]) -> None:
    """On every line the job wrote (the SDK's own too), the forms of each signal definition agree
    (its own line: filter pattern, Insights filter, offline match; the summary line: its filter
    pattern and metric value against the offline count); and each emitter line is exactly the
    signal it stands for."""
    catalog = SignalCatalog.default()
    meant = {
        RESPONSE_STARTED_TEXT: catalog.response_started,
        FIRST_AUDIO_FRAME_TEXT: catalog.first_audio_frame,
        FIRST_AUDIO_TIMEOUT_TEXT: catalog.first_audio_timeout,
    }
    for line in lines:
        record = json.loads(line)
        for signal in catalog:
            offline = signal.matches(record)
            assert pattern_matches(signal.metric_filter_pattern(), line) == offline, (signal.name, line)
            assert insights_filter_matches(signal.insights_filter(), record) == offline, (signal.name, line)
            expected = record["name"] == LOGGER_NAME and meant.get(record["message"]) == signal
            assert offline == expected, (signal.name, line)
            summary = signal.summary_filter_pattern()
            if summary is not None and not offline:
                published = pattern_matches(summary, line)
                field = str(signal.summary_field)
                assert signal.count(record) == (record[field] if published else 0), (signal.name, line)


def test_per_response_lines_yield_a_start_then_a_first_frame_per_response(
    worker: SignalAgentWorker,
) -> None:
    room = _room()
    # Two responses queued at once, 2 s of audio each: the second waits longer than the first-audio
    # timeout behind the first, which must not count as waiting for its audio.
    lines = worker.run_script(
        room,
        {
            "tts": "streaming",
            "say": ["The first answer.", "The second answer."],
            "first_audio_timeout_seconds": TIMEOUT_SECONDS,
            "seconds_per_sentence": 2.0,
            "hold_seconds": 10.0,
            **PER_RESPONSE,
        },
    )
    signals = _signals(lines)
    assert [s["message"] for s in signals] == [
        RESPONSE_STARTED_TEXT,
        FIRST_AUDIO_FRAME_TEXT,
        RESPONSE_STARTED_TEXT,
        FIRST_AUDIO_FRAME_TEXT,
    ]
    first_started, first_frame, second_started, second_frame = signals
    assert first_started["speech_id"] == first_frame["speech_id"] != second_started["speech_id"]
    assert second_started["speech_id"] == second_frame["speech_id"]
    for frame in (first_frame, second_frame):
        assert 0 < frame["first_audio_seconds"] < TIMEOUT_SECONDS
    # The second response started when the first had played, not when it was queued.
    assert _at(second_started) - _at(first_frame) >= 1.5
    job = _job_of(worker, room)
    for signal in signals:
        _assert_carries_the_job(signal, job)
        assert signal["level"] == "INFO"
    _assert_closed_without_leaks(lines)
    _assert_catalog_agrees(lines)


def test_a_summary_counts_the_responses_and_frames_of_the_job_in_one_line(worker: SignalAgentWorker) -> None:
    room = _room()
    lines = worker.run_script(
        room,
        {
            "tts": "streaming",
            "say": ["The first answer.", "The second answer.", "The third answer."],
            "first_audio_timeout_seconds": TIMEOUT_SECONDS,
            "seconds_per_sentence": 0.5,
            "hold_seconds": 10.0,
            "tts_endpoint": ENDPOINT,
        },
    )
    signals = _signals(lines)
    assert [s["message"] for s in signals] == [SUMMARY_TEXT]
    summary = signals[0]
    assert (summary["responses"], summary["first_frames"]) == (3, 3)
    assert "late_frames" not in summary  # written only when there were late frames
    assert summary["tts_endpoint"] == ENDPOINT
    job = _job_of(worker, room)
    assert (summary["job_id"], summary["room"]) == (job["job_id"], job["room"])
    _assert_closed_without_leaks(lines)
    _assert_catalog_agrees(lines)


def test_a_summary_is_written_each_interval_while_the_job_runs(worker: SignalAgentWorker) -> None:
    room = _room()
    lines = worker.run_script(
        room,
        {
            "tts": "streaming",
            "say": ["One.", "Two."],
            "seconds_per_sentence": 1.5,
            "summary_interval_seconds": 1.0,
            "hold_seconds": 6.0,
        },
    )
    summaries = [s for s in _signals(lines) if s["message"] == SUMMARY_TEXT]
    # The first answer's start and frame land in an early interval, the second's in a later one.
    assert len(summaries) >= 2
    assert sum(s["responses"] for s in summaries) == 2
    assert sum(s["first_frames"] for s in summaries) == 2
    _assert_catalog_agrees(lines)


@pytest.mark.parametrize(
    ("engine", "frames", "timeouts"), [("streaming", 1, []), ("stalling", 0, [FIRST_AUDIO_TIMEOUT_TEXT])]
)
def test_an_llm_reply_is_a_response_too(
    worker: SignalAgentWorker, engine: str, frames: int, timeouts: list[str]
) -> None:
    # The incident's shape: the LLM's text arrives, and the TTS voices it or never does.
    room = _room()
    lines = worker.run_script(
        room,
        {
            "tts": engine,
            "llm_reply": "Sure, let us read the next page together.",
            "first_audio_timeout_seconds": TIMEOUT_SECONDS,
            "hold_seconds": 4.0,
        },
    )
    signals = _signals(lines)
    assert [s["message"] for s in signals] == [*timeouts, SUMMARY_TEXT]
    assert (signals[-1]["responses"], signals[-1]["first_frames"]) == (1, frames)
    for timeout in signals[:-1]:
        _assert_carries_the_job(timeout, _job_of(worker, room))
    _assert_closed_without_leaks(lines)
    _assert_catalog_agrees(lines)


def test_the_summary_carries_a_fraction_of_the_per_response_bytes(worker: SignalAgentWorker) -> None:
    # The smoke run of `python -m devkit.signal_bytes`: six answers, one job, each format.
    before, after = measure_format(worker, "per_response"), measure_format(worker, "summary")
    assert (before.signal_lines, after.signal_lines) == (2 * before.responses, 1)
    assert after.signal_bytes * 5 < before.signal_bytes


def test_a_stalled_tts_yields_a_timeout_after_the_deadline_and_no_frame(worker: SignalAgentWorker) -> None:
    room = _room()
    lines = worker.run_script(
        room,
        {
            "tts": "stalling",
            "say": [HELLO],
            "first_audio_timeout_seconds": TIMEOUT_SECONDS,
            "hold_seconds": 3.0,
            **PER_RESPONSE,
        },
    )
    signals = _signals(lines)
    assert [s["message"] for s in signals] == [RESPONSE_STARTED_TEXT, FIRST_AUDIO_TIMEOUT_TEXT]
    started, timeout = signals
    assert started["speech_id"] == timeout["speech_id"]
    assert timeout["level"] == "WARNING"
    assert timeout["reason"] == "deadline"
    assert timeout["timeout_seconds"] == TIMEOUT_SECONDS
    assert TIMEOUT_SECONDS <= timeout["waited_seconds"] < TIMEOUT_SECONDS + SLACK_SECONDS
    assert TIMEOUT_SECONDS - 0.01 <= _at(timeout) - _at(started) < TIMEOUT_SECONDS + SLACK_SECONDS
    job = _job_of(worker, room)
    for signal in signals:
        _assert_carries_the_job(signal, job)
    _assert_closed_without_leaks(lines)
    _assert_catalog_agrees(lines)


def test_a_failing_tts_yields_a_timeout_without_waiting_for_the_deadline(worker: SignalAgentWorker) -> None:
    room = _room()
    lines = worker.run_script(
        room,
        {
            "tts": "failing",
            "say": [HELLO],
            "first_audio_timeout_seconds": TIMEOUT_SECONDS,
            "hold_seconds": 3.0,
        },
    )
    signals = _signals(lines)
    assert [s["message"] for s in signals] == [FIRST_AUDIO_TIMEOUT_TEXT, SUMMARY_TEXT]
    timeout, summary = signals
    assert timeout["reason"] == "tts_error"
    assert timeout["waited_seconds"] < TIMEOUT_SECONDS
    assert (summary["responses"], summary["first_frames"]) == (1, 0)
    _assert_carries_the_job(timeout, _job_of(worker, room))
    _assert_closed_without_leaks(lines)
    _assert_catalog_agrees(lines)


def test_a_session_closed_before_the_deadline_cancels_the_timer(worker: SignalAgentWorker) -> None:
    room = _room()
    # A 30 s timer that would still be waiting when the session closes after 1 s.
    lines = worker.run_script(
        room, {"tts": "stalling", "say": [HELLO], "first_audio_timeout_seconds": 30.0, "hold_seconds": 1.0}
    )
    assert [s["message"] for s in _signals(lines)] == [SUMMARY_TEXT]
    _assert_closed_without_leaks(lines)


def test_a_detached_emitter_writes_nothing_more(worker: SignalAgentWorker) -> None:
    room = _room()
    # Detached 0.5 s into a stalled response whose timeout (1.5 s) falls inside the open session.
    lines = worker.run_script(
        room,
        {
            "tts": "stalling",
            "say": [HELLO],
            "first_audio_timeout_seconds": TIMEOUT_SECONDS,
            "detach_after_seconds": 0.5,
            "hold_seconds": 2.0,
        },
    )
    # Detaching writes what the summary held (the response had started), then nothing more.
    signals = _signals(lines)
    assert [s["message"] for s in signals] == [SUMMARY_TEXT]
    assert signals[0]["responses"] == 1
    _assert_closed_without_leaks(lines)


def test_the_emitter_runs_from_the_installed_wheel(
    worker: SignalAgentWorker, agent_installed: InstalledEnvironment
) -> None:
    room = _room()
    lines = worker.run_script(room, {"tts": "streaming", "say": [HELLO], "hold_seconds": 3.0})
    closed = next(r for r in map(json.loads, lines) if r["message"] == SESSION_CLOSED)
    package = Path(closed["emitter_package"]).resolve()
    assert package.is_relative_to(agent_installed.root.resolve()), package
    assert [r["message"] for r in _signals(lines)] == [SUMMARY_TEXT]
