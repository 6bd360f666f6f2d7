"""``make drill``'s runs on the real fleet: calls arriving at a stated rate while one worker is drilled,
the workers' lines written out as CloudWatch Logs exports them, on the drill's faster clock.

A run is a warm-up, the fault steps (each at its own second) and a tail. The drilled worker is the
fleet's first; after the run it is replaced by a new worker process (the ECS service scheduler's
part), whose first call is timed.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from devkit.cpu_starvation import CpuStarvation
from devkit.drill_fleet import Callers, DrillWorker, wait_until
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.contract.drills import DRILL_TAG, DrillFault, DrillMarker

# Simulated seconds per real second: 5 real seconds are one minute of the replay, so the product's
# minute-sized windows (the per-task TTS test's 3 minutes, the VAD attribution's 10-minute span) hold
# several of the agents' turns, and a warning rate per replayed minute is 12 times the real one.
SCALE = 12
# A 24 s call is a 5-minute lesson; one every 3 s keeps about eight in progress, one per worker.
CALL_SECONDS = 24.0
# Two cores run the whole fleet, and each call starts a job process: that bounds the call rate.
CALL_EVERY_SECONDS = 3.0
STREAM_PREFIX = "agent/ppi-livekit-agent"
# The starved worker's share of a CPU while the fault lasts.
STARVED_SHARE = 0.25


class Remediation(Protocol):
    """What acts on the fleet while a run lasts (``tools.drill_live.LiveRemediation``)."""

    def start(self, fleet: Fleet, record: RunRecord) -> None: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class Step:
    at: float  # real seconds after the run's start
    fault: str  # a DrillFault value


@dataclass
class RunRecord:
    name: str
    task_id: str
    started: float
    ended: float
    faults: dict[str, float] = field(default_factory=dict)  # fault -> real second it began
    starvation: str = ""
    calls: int = 0
    rooms: set[str] = field(default_factory=set)  # the drilled worker's rooms

    def simulated(self, real: float) -> datetime:
        return datetime.fromtimestamp(self.started + (real - self.started) * SCALE, tz=UTC)


class Fleet:
    """The real fleet: ``size`` workers on ``server``, and the callers.

    Each worker registers under its own agent name and the calls go to the names in turn, as the
    seed's job-count load spread calls evenly: livekit-server's own choice among equal loads can
    leave one worker without a call for a minute, and the drilled worker must see its share. A task
    taken out of rotation (the drainer's cordon) gets no more calls, as the agent package's
    ``DrainAwareLoad`` makes LiveKit send it none."""

    def __init__(self, server: LocalLiveKit, size: int, env: dict[str, str]) -> None:
        self.server = server
        self.prefix = f"drill-{uuid.uuid4().hex[:6]}"
        self.env = env
        self._slots = size
        self.workers = [self._worker(f"{self.prefix}-{slot}") for slot in range(size)]
        self.retired: list[DrillWorker] = []
        self.out_of_rotation: set[str] = set()
        self.callers = Callers(server)
        self._calling = threading.Event()
        self._turn = 0
        self._lock = threading.Lock()

    def _worker(self, agent_name: str) -> DrillWorker:
        return DrillWorker(self.server, agent_name, "ppi-livekit-prod", self.env).start()

    def ready(self, timeout: float = 120.0) -> bool:
        return wait_until(lambda: all(worker.registered() for worker in self.workers), timeout)

    def _call_loop(self, prefix: str) -> None:
        while self._calling.is_set():
            with self._lock:
                names = sorted(w.agent_name for w in self.workers if w.task_id not in self.out_of_rotation)
            self._turn += 1
            agent = names[self._turn % len(names)]
            self.callers.call(f"lesson-{prefix}-{uuid.uuid4().hex[:6]}", CALL_SECONDS, agent)
            time.sleep(CALL_EVERY_SECONDS)

    def run(
        self, name: str, steps: list[Step], seconds: float, remediation: Remediation | None = None
    ) -> RunRecord:
        """One run; ``remediation``, when given, acts on the fleet while the run lasts."""
        drilled = self.workers[0]
        record = RunRecord(name, drilled.task_id, time.time(), 0.0)
        placed = len(self.callers.placed)
        self._calling.set()
        caller = threading.Thread(target=self._call_loop, args=(name,), daemon=True)
        caller.start()
        if remediation is not None:
            remediation.start(self, record)
        starvation: CpuStarvation | None = None
        for step in sorted(steps, key=lambda s: s.at):
            time.sleep(max(0.0, record.started + step.at - time.time()))
            record.faults[step.fault] = time.time()
            if step.fault == DrillFault.CPU_STARVED.value:
                starvation = CpuStarvation(drilled.pgid, STARVED_SHARE).start()
                record.starvation = starvation.method
            else:
                until = int(record.started + seconds) + 5
                drilled.tags[DRILL_TAG] = DrillMarker(DrillFault(step.fault), until, name).value()
        time.sleep(max(0.0, record.started + seconds - time.time()))
        record.ended = time.time()
        if remediation is not None:
            remediation.stop()  # calls go on while a replacement the cordon started takes its first
        self._calling.clear()
        caller.join()
        if starvation is not None:
            starvation.stop()
        drilled.tags.clear()
        record.calls = len(self.callers.placed) - placed
        record.rooms = drilled.rooms()
        return record

    def worker_of(self, task_id: str) -> DrillWorker | None:
        with self._lock:
            return next((worker for worker in self.workers if worker.task_id == task_id), None)

    def rooms_of(self, task_id: str) -> set[str]:
        with self._lock:
            workers = [*self.retired, *self.workers]
        return next((w.rooms() for w in workers if w.task_id == task_id), set())

    def take_out(self, task_id: str) -> DrillWorker | None:
        """The drainer's cordon on the fleet: the task gets no more calls and the service starts a
        replacement (a new worker process under a new agent name); returns the replacement, or None
        when the task is not one of the fleet's or is already out."""
        with self._lock:
            if task_id in self.out_of_rotation or not any(w.task_id == task_id for w in self.workers):
                return None
            self.out_of_rotation.add(task_id)
        return self._replacement()

    def _replacement(self) -> DrillWorker:
        """A new worker process under the next agent name, the service's new task, in the fleet."""
        with self._lock:
            self._slots += 1
            replacement = self._worker(f"{self.prefix}-{self._slots}")
            self.workers.append(replacement)
        return replacement

    def give_back(self, task_id: str) -> None:
        """The drainer's undo: the task takes calls again."""
        with self._lock:
            self.out_of_rotation.discard(task_id)

    def stop_task(self, task_id: str) -> bool:
        """StopTask on the fleet: the worker drains and exits. False: no such running task."""
        worker = self.worker_of(task_id)
        if worker is None:
            return False
        with self._lock:
            self.workers.remove(worker)
            self.retired.append(worker)
        worker.stop()
        return True

    def replace_drilled(self, task_id: str) -> tuple[float, float | None] | None:
        """After a run, the ECS scheduler's part: stops the drilled worker if it still runs and, unless
        the remediation's cordon started one already, starts its replacement; returns the real seconds
        until the replacement registered and until it took its first call (None: none within a
        minute), or None when the remediation had replaced it."""
        if self.worker_of(task_id) is None:
            return None
        replaced = task_id in self.out_of_rotation
        self.stop_task(task_id)
        self.out_of_rotation.discard(task_id)
        if replaced:
            return None
        began = time.time()
        replacement = self._replacement()
        wait_until(replacement.registered, 60)
        registered = time.time() - began
        self._calling.set()
        caller = threading.Thread(target=self._call_loop, args=("replacement",), daemon=True)
        caller.start()
        took = wait_until(lambda: replacement.jobs() > 0, 60)
        self._calling.clear()
        caller.join()
        return registered, (time.time() - began) if took else None

    def export(self, record: RunRecord, path: Path, until: float | None = None) -> None:
        """The run's lines from every worker (up to ``until``, else the run's end), as
        ``filter-log-events`` exports them, on the drill's clock."""
        last = record.ended + 1 if until is None else until
        with self._lock:
            workers = [*self.retired, *self.workers]
        with path.open("w", encoding="utf-8") as out:
            for worker in workers:
                for at, line in list(worker.lines):
                    if record.started <= at <= last and line.startswith("{"):
                        stamp = int(record.simulated(at).timestamp() * 1000)
                        event = {
                            "logStreamName": f"{STREAM_PREFIX}/{worker.task_id}",
                            "timestamp": stamp,
                            "message": line,
                        }
                        out.write(json.dumps(event) + "\n")

    def delete_room(self, room: str) -> str:
        return self.callers.delete_room(room)

    def stop(self) -> None:
        for worker in self.workers:  # all drain at once, then each is waited for
            worker.terminate()
        for worker in self.workers:
            worker.stop()
        self.callers.close()
