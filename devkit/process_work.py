"""Waits and bounds measured by the work done, not by the wall clock.

On a loaded machine a real worker starts as slowly as the cores let it: a wall-clock deadline then
measures the queue for a core, not the worker. What a test bounds is the work: the CPU time the
process and its children spend before the awaited state holds. A wall cap stays as the backstop for
a process that waits on something without working at all. ``own_time`` does the same for work on
the calling thread: its wall time less the time it waited for a core.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


# Captured at import: tests patch ``time.monotonic`` with clocks that ride this module's own clock.
_monotonic = time.monotonic


def _thread_waited_seconds() -> float:
    """Seconds this thread has spent runnable but waiting for a core (the scheduler's run delay,
    ``/proc/thread-self/schedstat``'s second field, in nanoseconds)."""
    with open("/proc/thread-self/schedstat", encoding="ascii") as stat:
        return int(stat.read().split()[1]) / 1e9


@dataclass
class OwnTime:
    """Wall seconds of a piece of work on this thread, less the time it waited for a core.

    A bound on a function's invocation is a claim about its deadlines and its own work: on a loaded
    machine the wall clock also counts the queue for a core, which the function does not cause and
    Lambda does not share. Time blocked on a peer (a socket read, a sleep) is kept: that is what the
    deadlines bound."""

    wall: float = 0.0
    waited_for_a_core: float = 0.0

    @property
    def seconds(self) -> float:
        return self.wall - self.waited_for_a_core

    def __str__(self) -> str:
        queued = f"{self.waited_for_a_core:.1f} s queued for a core"
        return f"{self.seconds:.1f} s of its own ({self.wall:.1f} s wall, {queued})"


@contextmanager
def own_time() -> Iterator[OwnTime]:
    """Measures the block on the calling thread: ``OwnTime`` is filled in as the block ends."""
    measured = OwnTime()
    wall, waited = _monotonic(), _thread_waited_seconds()
    try:
        yield measured
    finally:
        measured.wall = _monotonic() - wall
        measured.waited_for_a_core = _thread_waited_seconds() - waited


def own_monotonic() -> float:
    """The calling thread's monotonic clock, standing still while the thread waits for a core: a
    handler's deadline on it counts the handler's own work and its peers' answers, not the load of
    the machine its test runs on. Only for work that stays on one thread."""
    return _monotonic() - _thread_waited_seconds()
