"""The agent package's drill hook in a real livekit-agents worker on the real livekit-server: while
the worker's own task carries a tts-silence marker, the agent's TTS node (wired as the docs' drill
page shows) lets no audio frame reach the room, so the emitter writes its first-audio timeout; once
the marker is gone, the next job's first frame plays. The ECS task metadata endpoint is
``FakeEcsTaskMetadataEndpoint`` (there is no ECS here); the worker, its job processes, the session and
the room are real. The CPU burner runs real busy processes and is checked for starting and stopping
with the marker."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from devkit.fakes.ecs_fakes import FakeEcsTaskMetadataEndpoint
from devkit.livekit_local import LocalLiveKit
from devkit.signal_worker import SignalAgentWorker
from fleet_remediation.contract.drills import DRILL_TAG, DrillFault, DrillMarker
from livekit_fleet_agent import FIRST_AUDIO_FRAME_TEXT, FIRST_AUDIO_TIMEOUT_TEXT, SUMMARY_TEXT, TaskTagReader
from livekit_fleet_agent.drill import CpuBurner, DrillHook

# A worker start is bounded by its CPU (devkit.signal_worker.REGISTRATION), under a wall cap of 150 s.
pytestmark = [pytest.mark.livekit, pytest.mark.timeout(300)]


@pytest.fixture
def task_tags() -> dict[str, str]:
    return {}


@pytest.fixture
def metadata(task_tags: dict[str, str]) -> Iterator[FakeEcsTaskMetadataEndpoint]:
    endpoint = FakeEcsTaskMetadataEndpoint("arn:aws:ecs:eu-west-1:1:task/c/drilled", lambda: dict(task_tags))
    yield endpoint.start()
    endpoint.stop()


def marker(fault: DrillFault, seconds: int = 600) -> str:
    return DrillMarker(fault, int(time.time()) + seconds, "drill-test").value()


def _records(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines]


def _messages(records: list[dict[str, Any]]) -> list[str]:
    return [record.get("message", "") for record in records]


def _played(records: list[dict[str, Any]]) -> int:
    """First frames that played, as the job's summaries count them (and per-response lines, if any)."""
    summed = sum(int(r.get("first_frames", 0)) for r in records if r.get("message") == SUMMARY_TEXT)
    return summed + _messages(records).count(FIRST_AUDIO_FRAME_TEXT)


def test_a_tts_silence_drill_withholds_the_first_audio_of_that_worker_until_the_marker_goes(
    livekit_server: LocalLiveKit,
    metadata: FakeEcsTaskMetadataEndpoint,
    task_tags: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ECS_CONTAINER_METADATA_URI_V4", metadata.url)
    task_tags[DRILL_TAG] = marker(DrillFault.TTS_SILENCE)
    worker = SignalAgentWorker(livekit_server).start()
    try:
        script: dict[str, Any] = {
            "tts": "streaming",
            "say": ["Hello there."],
            "first_audio_timeout_seconds": 1.5,
        }
        drilled = _records(worker.run_script(f"drill-{uuid.uuid4().hex[:8]}", script))
        assert _messages(drilled).count(FIRST_AUDIO_TIMEOUT_TEXT) == 1
        assert _played(drilled) == 0
        task_tags.clear()
        after = _records(worker.run_script(f"after-{uuid.uuid4().hex[:8]}", script))
        assert _played(after) == 1
        assert FIRST_AUDIO_TIMEOUT_TEXT not in _messages(after)
    finally:
        worker.stop()
    assert metadata.requests >= 2


def test_the_cpu_burner_runs_busy_processes_only_while_its_marker_lasts(
    metadata: FakeEcsTaskMetadataEndpoint, task_tags: dict[str, str]
) -> None:
    drills = DrillHook(TaskTagReader(metadata.url, cache_seconds=0.0))
    burner = CpuBurner(drills, processes=1)
    try:
        burner.check()
        assert not burner.burning
        task_tags[DRILL_TAG] = marker(DrillFault.TTS_SILENCE)
        burner.check()
        assert not burner.burning, "another fault's marker burns nothing"
        task_tags[DRILL_TAG] = marker(DrillFault.CPU_STARVED)
        burner.check()
        assert burner.burning
        task_tags.clear()
        burner.check()
        assert not burner.burning
    finally:
        burner.check()


def test_an_abandoned_session_drill_keeps_sessions_in_their_rooms(
    metadata: FakeEcsTaskMetadataEndpoint, task_tags: dict[str, str]
) -> None:
    drills = DrillHook(TaskTagReader(metadata.url, cache_seconds=0.0))
    assert drills.close_on_disconnect() is True
    task_tags[DRILL_TAG] = marker(DrillFault.ABANDONED_SESSION)
    assert drills.close_on_disconnect() is False
    task_tags[DRILL_TAG] = DrillMarker(
        DrillFault.ABANDONED_SESSION, int(time.time()) - 1, "drill-test"
    ).value()
    assert drills.close_on_disconnect() is True, "an expired marker is no drill"
