"""``make drill``'s short form: real livekit-agents workers on the real livekit-server, callers
publishing audio, a tts-silence drill on one worker through the drill hook, the workers' own lines
through the replay; and the CPU limit, on a real process.

The short form runs three workers (the drill's environment lets one of three drain) with the fault
8 s into a 38 s run, with the functions acting on the live fleet (``--arm with``; ``make drill`` also
runs each fault with them off): the drilled worker's sessions fail after the fault, the drainer
cordons the drilled task and no other, the cordon takes that worker out of the call rotation on the
real fleet and starts a replacement worker, which registers and takes a call. (Sessions on the other
workers fail too when the machine is loaded: their count is not compared.)"""

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


def test_a_tts_silence_drill_on_real_workers_takes_that_worker_out_and_a_replacement_takes_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--workers", "3", "--fault", "tts-silence", "--fault-at", "8", "--seconds", "38", "--json"]
    argv += ["--arm", "with", "--output", str(tmp_path)]
    assert main(argv) == 0
    (run,) = json.loads(capsys.readouterr().out)
    timeline = {entry["what"]: entry["real_seconds"] for entry in run["timeline"]}
    assert timeline["fault: tts-silence"] == 0
    first_failed = "first failed session on the drilled task (started after the fault)"
    assert timeline[first_failed] >= 0
    assert "cordon" in run["drilled_task_steps"], run["timeline"]
    assert "cordon" not in run["other_tasks_steps"], run["timeline"]
    done = "done: cordon of the drilled task: out of the call rotation, replacement started"
    assert timeline[done] >= timeline[first_failed], run["timeline"]
    assert timeline["replacement took its first call"] > timeline[done]
    assert run["replacement_after_the_run"] is False
    assert run["replacement_first_call_real_seconds"] is not None
    on_drilled = run["sessions_failed_on_drilled_task_with_remediation"]
    assert run["sessions_failed_with_remediation"] >= on_drilled > 0
    assert run["sessions_failed_without_remediation"] is None


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
