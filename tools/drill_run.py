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
    leave one worker without a call for a minute, and the drilled worker must see its share."""

    def __init__(self, server: LocalLiveKit, size: int, env: dict[str, str]) -> None:
        self.server = server
        prefix = f"drill-{uuid.uuid4().hex[:6]}"
        self.env = env
        self.workers = [self._worker(f"{prefix}-{slot}") for slot in range(size)]
        self.retired: list[DrillWorker] = []
        self.callers = Callers(server)
        self._calling = threading.Event()
        self._turn = 0

    def _worker(self, agent_name: str) -> DrillWorker:
        return DrillWorker(self.server, agent_name, "ppi-livekit-prod", self.env).start()

    def ready(self, timeout: float = 120.0) -> bool:
        return wait_until(lambda: all(worker.registered() for worker in self.workers), timeout)

    def _call_loop(self, prefix: str) -> None:
        while self._calling.is_set():
            names = sorted(worker.agent_name for worker in self.workers)
            self._turn += 1
            agent = names[self._turn % len(names)]
            self.callers.call(f"lesson-{prefix}-{uuid.uuid4().hex[:6]}", CALL_SECONDS, agent)
            time.sleep(CALL_EVERY_SECONDS)

    def run(self, name: str, steps: list[Step], seconds: float) -> RunRecord:
        drilled = self.workers[0]
        record = RunRecord(name, drilled.task_id, time.time(), 0.0)
        placed = len(self.callers.placed)
        self._calling.set()
        caller = threading.Thread(target=self._call_loop, args=(name,), daemon=True)
        caller.start()
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
        self._calling.clear()
        caller.join()
        if starvation is not None:
            starvation.stop()
        drilled.tags.clear()
        record.ended = time.time()
        record.calls = len(self.callers.placed) - placed
        record.rooms = drilled.rooms()
        return record

    def replace_drilled(self) -> tuple[float, float | None]:
        """Stops the drilled worker and starts its replacement; returns the real seconds until the
        replacement registered and until it took its first call (None: none within a minute)."""
        drilled = self.workers.pop(0)
        drilled.stop()
        self.retired.append(drilled)
        began = time.time()
        replacement = self._worker(drilled.agent_name)
        self.workers.append(replacement)
        wait_until(replacement.registered, 60)
        registered = time.time() - began
        self._calling.set()
        caller = threading.Thread(target=self._call_loop, args=("replacement",), daemon=True)
        caller.start()
        took = wait_until(lambda: replacement.jobs() > 0, 60)
        self._calling.clear()
        caller.join()
        return registered, (time.time() - began) if took else None

    def export(self, record: RunRecord, path: Path) -> None:
        """The run's lines from every worker, as ``filter-log-events`` exports them, on the drill's clock."""
        with path.open("w", encoding="utf-8") as out:
            for worker in [*self.retired, *self.workers]:
                for at, line in list(worker.lines):
                    if record.started <= at <= record.ended + 1 and line.startswith("{"):
                        stamp = int(record.simulated(at).timestamp() * 1000)
                        event = {
                            "logStreamName": f"{STREAM_PREFIX}/{worker.task_id}",
                            "timestamp": stamp,
                            "message": line,
                        }
                        out.write(json.dumps(event) + "\n")

    def stop(self) -> None:
        for worker in self.workers:  # all drain at once, then each is waited for
            worker.terminate()
        for worker in self.workers:
            worker.stop()
        self.callers.close()
