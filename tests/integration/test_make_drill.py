"""``make drill``'s short form: real livekit-agents workers on the real livekit-server, callers
publishing audio, a tts-silence drill on one worker through the drill hook, the workers' own lines
through the replay; and the CPU limit, on a real process.

The short form runs three workers for 20 seconds: too few for the drainer's guardrails to take one
out (at most 20% of the fleet draining), and too few sessions for the TTS alarms' minimums, so it
asserts what such a fleet must show: the drilled worker's own lines, through the replay, show its
sessions failing after the fault and more of them than the other workers', and a replacement worker
registers and takes a call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devkit.cpu_starvation import DUTY_CYCLE_SECONDS, CpuStarvation
from tools.drill import main

pytestmark = [pytest.mark.livekit, pytest.mark.timeout(240)]


def test_a_tts_silence_drill_on_real_workers_fails_that_workers_sessions_and_a_replacement_takes_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--workers", "3", "--fault", "tts-silence", "--seconds", "20", "--json"]
    argv += ["--output", str(tmp_path)]
    assert main(argv) == 0
    (run,) = json.loads(capsys.readouterr().out)
    timeline = {entry["what"]: entry["at"] for entry in run["timeline_minutes"]}
    assert timeline["fault: tts-silence"] == 0
    first_failed = "first failed session on the drilled task (started after the fault)"
    assert timeline[first_failed] >= 0
    assert run["sessions_failed_without_remediation"] >= 1
    assert run["sessions_failed_on_drilled_task"] > run["sessions_failed_elsewhere"]
    assert run["replacement_first_call_real_seconds"] is not None


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _cpu_seconds(pid: int) -> float:
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_the_cpu_limit_holds_a_real_process_group_and_lets_it_go() -> None:
    busy = subprocess.Popen(
        [sys.executable, "-c", "while True: pass"], start_new_session=True, stdout=subprocess.DEVNULL
    )
    try:
        starvation = CpuStarvation(busy.pid, share=0.25).start()
        before, seen = _cpu_seconds(busy.pid), set()
        try:
            deadline = time.monotonic() + DUTY_CYCLE_SECONDS
            while time.monotonic() < deadline:
                seen.add(_stat(busy.pid)[0])
                time.sleep(0.05)
        finally:
            starvation.stop()
        used = _cpu_seconds(busy.pid) - before
        assert used < 0.25 * DUTY_CYCLE_SECONDS * 1.6, f"{starvation.method}: {used:.2f} s of CPU"
        if starvation.method.startswith("SIGSTOP"):
            assert "T" in seen, "the duty cycle stops the group"
        assert _stat(busy.pid)[0] != "T", "ending the limit lets the group run"
    finally:
        busy.kill()
        busy.wait()
