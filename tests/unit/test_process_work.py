"""``devkit.process_work``: a wait on a real child process ends on what the process does — the state
awaited, its exit, the CPU its processes spend — and on the wall cap only when it does nothing; a
block's own time is its wall time less its queue for a core."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import psutil
import pytest

from devkit.process_work import WorkBound, own_time, tree_cpu_seconds

BUSY = "while True: pass"
# A parent that starts a busy child and waits: the child's CPU is the tree's.
BUSY_CHILD = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {BUSY!r}])"


@pytest.fixture
def spawn() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        for child in _children(process.pid):
            child.kill()
        process.kill()
        process.wait()


def _children(pid: int) -> list[psutil.Process]:
    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []


def _python(spawn: list[subprocess.Popen[bytes]], code: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen([sys.executable, "-c", code])
    spawn.append(process)
    return process


def test_the_wait_ends_as_soon_as_the_state_holds(spawn: list[subprocess.Popen[bytes]]) -> None:
    process = _python(spawn, "import time; time.sleep(30)")
    assert WorkBound(1.0, 30.0).wait(process.pid, lambda: True, lambda: process.poll() is None) is None


def test_a_process_that_exits_ends_the_wait_at_once(spawn: list[subprocess.Popen[bytes]]) -> None:
    process = _python(spawn, "raise SystemExit(3)")
    why = WorkBound(30.0, 30.0).wait(process.pid, lambda: False, lambda: process.poll() is None)
    assert why == "the process exited"


def test_a_busy_child_spends_the_trees_cpu_bound(spawn: list[subprocess.Popen[bytes]]) -> None:
    process = _python(spawn, BUSY_CHILD)
    why = WorkBound(0.3, 60.0).wait(process.pid, lambda: False, lambda: process.poll() is None)
    assert why is not None
    assert "of CPU (bound 0.3 s)" in why
    assert tree_cpu_seconds(process.pid) > 0.3


def test_an_idle_process_ends_only_at_the_wall_cap(spawn: list[subprocess.Popen[bytes]]) -> None:
    process = _python(spawn, "import time; time.sleep(30)")
    why = WorkBound(30.0, 0.5).wait(process.pid, lambda: False, lambda: process.poll() is None)
    assert why is not None
    assert why.startswith("0.5 s passed")


def test_a_gone_process_has_spent_nothing() -> None:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    assert tree_cpu_seconds(process.pid) == 0.0


def test_a_blocked_wait_is_the_blocks_own_time() -> None:
    with own_time() as took:
        time.sleep(0.3)
    assert took.seconds >= 0.299  # asleep is not queued: the whole sleep is the block's own


def test_work_queued_behind_busy_processes_leaves_out_the_queue(spawn: list[subprocess.Popen[bytes]]) -> None:
    for _ in range(2 * (os.cpu_count() or 1)):
        _python(spawn, BUSY)
    time.sleep(0.5)  # the busy processes are running before the work begins
    with own_time() as took:
        ends = time.thread_time() + 0.5
        while time.thread_time() < ends:
            pass
    assert took.waited_for_a_core > 0.1
    assert took.seconds == pytest.approx(took.wall - took.waited_for_a_core)
    assert took.seconds < took.wall
    assert "queued for a core" in str(took)
