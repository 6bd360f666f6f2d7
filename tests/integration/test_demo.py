"""``make demo`` tells today's story: run as a person runs it (a subprocess), it deletes the zombie
room on the real livekit-server after its grace, prints notifications as they arrive (no Python
reprs, no ``\\n`` escapes), uses the demo's own names, writes nothing to stderr, and ends with
``lkfr audit`` showing what the reaper and the drainer did, read back from their log groups and the
drainer's ledger."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from devkit.checkout import checkout_pythonpath

pytestmark = pytest.mark.livekit
REPO = Path(__file__).resolve().parents[2]


def test_the_demo_deletes_the_zombie_room_and_prints_only_what_a_person_reads(tmp_path: Path) -> None:
    environment = {
        **os.environ,
        "PYTHONPATH": checkout_pythonpath(),
    }
    done = subprocess.run(
        [sys.executable, "-m", "tools.demo"],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    out = done.stdout
    step5 = out[out.index("=== 5.") : out.index("=== 6.")]
    assert "-> delete-room test-aria-newpp01_up_wjv1: done" in step5
    assert "participant child-0 in test-aria-newpp01_up_wjv1: disconnected by LiveKit" in step5
    (rooms,) = re.findall(r"rooms on livekit-server now: (.*)", step5)
    assert "test-aria-newpp01_up_wjv1" not in rooms.split(", ")
    assert "lesson-sonbeom-51" in rooms.split(", ")  # the live lessons stay
    assert "chat (Amazon Q in Slack)" in out
    assert "e-mail (SNS in AWS)" in out
    for python_repr in ("{'", "['", "\\n", " None", "=False", "=True"):
        assert python_repr not in out, python_repr
    assert "[it]" not in out
    assert re.search(r"\bit-drainer", out) is None
    assert "worker_drainer [demo]" in out
    audit = out[out.index("=== 11.") :]
    assert "lkfr audit --env demo --hours 3" in audit
    assert "zombie_reaper   acted     delete-room test-aria-newpp01_up_wjv1" in audit
    assert "zombie_reaper   would-act warn test-aria-newpp01_up_wjv1" in audit
    drainer = re.findall(r"worker_drainer  acted     (reap|cordon|stop) (\S+)", audit)
    assert [step for step, _ in drainer] == ["stop", "cordon", "reap"]  # newest first
    assert len({task for _, task in drainer}) == 1
    assert audit.count("from report+ledger") == 3
    assert "lkfr audit --env NAME --hours 24 --config environments.json" in audit
