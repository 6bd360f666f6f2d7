"""Waits on a child process bounded by the work it does, not by the wall clock.

On a loaded machine a real worker starts as slowly as the cores let it: a wall-clock deadline then
measures the queue for a core, not the worker. What a test bounds is the work: the CPU time the
process and its children spend before the awaited state holds. A wall cap stays as the backstop for
a process that waits on something without working at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil


def tree_cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of the process and its children, live or reaped (0 once it is gone)."""
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    spent = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        spent += times.user + times.system + times.children_user + times.children_system
    return spent


@dataclass(frozen=True)
class WorkBound:
    """``cpu_seconds``: the CPU the process tree may spend before the wait fails; ``wall_seconds``:
    the backstop."""

    cpu_seconds: float
    wall_seconds: float

    def wait(self, pid: int, holds: Callable[[], bool], alive: Callable[[], bool]) -> str | None:
        """None once ``holds()``; else why the wait ended: the process exited, spent its CPU bound,
        or the wall cap passed."""
        started = tree_cpu_seconds(pid)
        deadline = time.monotonic() + self.wall_seconds
        while True:
            if holds():
                return None
            if not alive():
                return "the process exited"
            spent = tree_cpu_seconds(pid) - started
            if spent > self.cpu_seconds:
                return f"its processes spent {spent:.1f} s of CPU (bound {self.cpu_seconds:g} s)"
            if time.monotonic() > deadline:
                return f"{self.wall_seconds:g} s passed (its processes spent {spent:.1f} s of CPU)"
            time.sleep(0.1)
