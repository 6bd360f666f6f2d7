"""A real CPU limit on one worker's process group, the first way this machine allows: cgroup v2
``cpu.max`` where the cgroup tree is writable, else Debian's ``cpulimit``, else a stop/continue duty
cycle (SIGSTOP/SIGCONT on the process group). ``method`` names the one that runs."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import uuid
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PERIOD_MICROSECONDS = 100_000
# Long enough that a stopped VAD falls seconds behind, as the seed's did (its alarm wants 2 s).
DUTY_CYCLE_SECONDS = 4.0


def _group_pids(pgid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid:
                found.append(int(entry.name))
    return found


def _cgroup_v2_writable() -> bool:
    return (CGROUP_ROOT / "cgroup.controllers").exists() and os.access(CGROUP_ROOT, os.W_OK)


class CpuStarvation:
    """Limits process group ``pgid`` to ``share`` of one CPU until ``stop``."""

    def __init__(self, pgid: int, share: float) -> None:
        self.pgid = pgid
        self.share = share
        if _cgroup_v2_writable():
            self.method = f"cgroup v2 cpu.max ({share:.0%} of a CPU)"
        elif shutil.which("cpulimit"):
            self.method = f"cpulimit -l {round(share * 100)} (each process of the group)"
        else:
            self.method = (
                f"SIGSTOP/SIGCONT duty cycle (running {share:.0%} of each {DUTY_CYCLE_SECONDS:.0f} s)"
            )
        self._stopped = threading.Event()
        self._limiters: list[subprocess.Popen[bytes]] = []
        self._thread: threading.Thread | None = None
        self._cgroup: Path | None = None

    def start(self) -> CpuStarvation:
        if self.method.startswith("cgroup"):
            self._cgroup = CGROUP_ROOT / f"lkfr-drill-{uuid.uuid4().hex[:8]}"
            self._cgroup.mkdir()
            quota = int(PERIOD_MICROSECONDS * self.share)
            (self._cgroup / "cpu.max").write_text(f"{quota} {PERIOD_MICROSECONDS}")
            for pid in _group_pids(self.pgid):
                (self._cgroup / "cgroup.procs").write_text(str(pid))
        elif self.method.startswith("cpulimit"):
            limit = str(round(self.share * 100))
            self._limiters = [
                subprocess.Popen(["cpulimit", "-p", str(pid), "-l", limit, "-z"])
                for pid in _group_pids(self.pgid)
            ]
        else:
            self._thread = threading.Thread(target=self._duty_cycle, daemon=True)
            self._thread.start()
        return self

    def _duty_cycle(self) -> None:
        while not self._stopped.is_set():
            _signal(self.pgid, signal.SIGSTOP)
            self._stopped.wait(DUTY_CYCLE_SECONDS * (1 - self.share))
            _signal(self.pgid, signal.SIGCONT)
            self._stopped.wait(DUTY_CYCLE_SECONDS * self.share)

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()
        for limiter in self._limiters:
            limiter.terminate()
            limiter.wait()
        if self._cgroup is not None:
            parent = self._cgroup.parent / "cgroup.procs"
            for pid in (self._cgroup / "cgroup.procs").read_text().split():
                parent.write_text(pid)
            self._cgroup.rmdir()
        _signal(self.pgid, signal.SIGCONT)


def _signal(pgid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signum)
