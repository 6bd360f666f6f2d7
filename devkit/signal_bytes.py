"""Bytes per response that the agent package's detection lines add, measured on a real livekit-agents
worker (the SDK's CLI, JSON logs on stdout, the real livekit-server) in both line formats::

    PYTHONPATH=agent:functions:layers/shared/python:src:. python -m devkit.signal_bytes

One job speaks ``RESPONSES`` short answers in each format; a third job's stalled answer gives the
first-audio timeout line (written per event in both formats). Bytes are the stdout lines as written,
each with its newline (what CloudWatch Logs ingests from awslogs, give or take its own framing).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass
from typing import Any

from devkit.livekit_local import LocalLiveKit
from devkit.signal_worker import SignalAgentWorker
from livekit_fleet_agent.detection_signals import LOGGER_NAME

RESPONSES = 6
ENDPOINT = "demo-tts/eu-west-1"


@dataclass(frozen=True)
class FormatBytes:
    line_format: str
    responses: int
    signal_lines: int
    signal_bytes: int
    job_bytes: int

    @property
    def signal_bytes_per_response(self) -> float:
        return self.signal_bytes / self.responses


def _bytes(lines: list[str]) -> int:
    return sum(len(line.encode()) + 1 for line in lines)


def _signal_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if json.loads(line).get("name") == LOGGER_NAME]


def measure_format(worker: SignalAgentWorker, line_format: str) -> FormatBytes:
    """One job of ``RESPONSES`` answers that all play, in ``line_format``."""
    script: dict[str, Any] = {
        "tts": "streaming",
        "say": [f"Answer number {i}." for i in range(RESPONSES)],
        "seconds_per_sentence": 0.3,
        "hold_seconds": 20.0,
        "line_format": line_format,
        "tts_endpoint": ENDPOINT,
    }
    lines = worker.run_script(f"bytes-{line_format}-{uuid.uuid4().hex[:6]}", script)
    signals = _signal_lines(lines)
    return FormatBytes(line_format, RESPONSES, len(signals), _bytes(signals), _bytes(lines))


def timeout_line_bytes(worker: SignalAgentWorker) -> int:
    """The first-audio timeout line of one stalled answer."""
    script = {
        "tts": "stalling",
        "say": ["Hello there."],
        "first_audio_timeout_seconds": 1.0,
        "hold_seconds": 2.5,
        "tts_endpoint": ENDPOINT,
    }
    lines = worker.run_script(f"bytes-timeout-{uuid.uuid4().hex[:6]}", script)
    timeouts = [
        line for line in _signal_lines(lines) if json.loads(line)["message"] == "tts_first_audio_timeout"
    ]
    return _bytes(timeouts[:1])


def measure(worker: SignalAgentWorker) -> dict[str, Any]:
    before, after = measure_format(worker, "per_response"), measure_format(worker, "summary")
    return {
        "responses_per_job": RESPONSES,
        "before_per_response_lines": {
            **asdict(before),
            "signal_bytes_per_response": round(before.signal_bytes_per_response, 1),
        },
        "after_summary": {
            **asdict(after),
            "signal_bytes_per_response": round(after.signal_bytes_per_response, 1),
        },
        "all_job_bytes_per_response": {
            "before": round(before.job_bytes / before.responses, 1),
            "after": round(after.job_bytes / after.responses, 1),
        },
        "summary_line_bytes": after.signal_bytes // max(after.signal_lines, 1),
        "timeout_line_bytes": timeout_line_bytes(worker),
    }


def main() -> None:
    with LocalLiveKit() as server:
        worker = SignalAgentWorker(server).start()
        try:
            print(json.dumps(measure(worker), indent=2))
        finally:
            worker.stop()


if __name__ == "__main__":
    main()
