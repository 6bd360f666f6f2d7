"""The drill hook: fakes one of the seed incident's failures inside this worker only, while
``lkfr drill`` marks this worker's own ECS task, so a team can watch the remediation work in its own
account before it enforces.

The marker is the task tag ``livekit-fleet-drill`` (``<fault>:<until>:<drill id>``), read through the
task metadata endpoint like the drainer's ``draining`` tag (``TaskTagReader``; the task role needs
``ecs:ListTagsForResource`` on its own task, as for ``DrainAwareLoad``). A drill ends when the tag is
removed or at its ``until`` second, whichever comes first, and never lasts more than an hour. Three
faults, each wired with one line:

- ``tts-silence``: in the agent's ``tts_node``, ``withhold_first_audio(frames, drills)`` plays no
  frame and stalls until the drill ends, so the first audio frame never arrives (the emitter writes
  its timeout line);
- ``cpu-starved``: ``drills.start_cpu_burner()`` in the worker's main process runs one busy process
  per CPU while the drill lasts, so VAD inference falls behind real time;
- ``abandoned-session``: ``RoomOptions(close_on_disconnect=drills.close_on_disconnect())`` keeps a
  session in its room after its caller leaves, so it outlives the reaper's max age.

This module runs inside the agent image: it imports only the standard library and this package
(``drill_contract`` mirrors ``fleet_remediation.contract.drills``).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import TypeVar

from livekit_fleet_agent.drill_contract import DRILL_TAG, DrillFault, DrillMarker
from livekit_fleet_agent.load import TaskTagReader

FrameT = TypeVar("FrameT")
# How often the CPU burner's watcher re-reads the marker (the tag reader caches 15 s by default).
BURNER_POLL_SECONDS = 5.0


class DrillHook:
    """Whether a drill marks this worker's task now, and which fault it fakes."""

    def __init__(
        self, tag_reader: TaskTagReader | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.tag_reader = tag_reader or TaskTagReader()
        self._clock = clock

    def active(self, fault: DrillFault | None = None) -> DrillMarker | None:
        """The current marker (of ``fault``, when given), or None."""
        value = self.tag_reader.tags().get(DRILL_TAG)
        marker = DrillMarker.parse(value, self._clock()) if value else None
        if marker is None or (fault is not None and marker.fault is not fault):
            return None
        return marker

    def close_on_disconnect(self) -> bool:
        """For ``RoomOptions``: False while an abandoned-session drill marks the task."""
        return self.active(DrillFault.ABANDONED_SESSION) is None

    def start_cpu_burner(self, processes: int | None = None) -> CpuBurner:
        """Starts the watcher that burns CPU while a cpu-starved drill marks the task."""
        return CpuBurner(self, processes).start()


async def withhold_first_audio(frames: AsyncIterable[FrameT], drills: DrillHook) -> AsyncIterator[FrameT]:
    """The TTS node's frames, unless a tts-silence drill marks the task: then the synthesis runs but
    nothing plays, and the node stalls until the drill ends, as a provider whose first frame never
    comes (a node that simply ended would read as a reply with nothing to say)."""
    marker = drills.active(DrillFault.TTS_SILENCE)
    if marker is None:
        async for frame in frames:
            yield frame
        return
    async for _ in frames:
        pass
    await asyncio.sleep(max(0.0, marker.until - time.time()))


def _burn(until: float) -> None:
    while time.time() < until:
        pass


class CpuBurner:
    """One busy process per CPU while a cpu-starved drill lasts: started when the marker appears,
    stopped when it goes or its ``until`` passes (each process also ends by itself then)."""

    def __init__(self, drills: DrillHook, processes: int | None = None) -> None:
        self.drills = drills
        self.processes = processes or os.cpu_count() or 1
        self._burning: list[multiprocessing.process.BaseProcess] = []
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="lkfr-drill-cpu", daemon=True)

    @property
    def burning(self) -> bool:
        return any(process.is_alive() for process in self._burning)

    def start(self) -> CpuBurner:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()
        self._end()

    def check(self) -> None:
        """One look at the marker: start or stop the busy processes to match it."""
        marker = self.drills.active(DrillFault.CPU_STARVED)
        if marker is None:
            self._end()
        elif not self.burning:
            context = multiprocessing.get_context("spawn")
            self._burning = [
                context.Process(target=_burn, args=(float(marker.until),), daemon=True)
                for _ in range(self.processes)
            ]
            for process in self._burning:
                process.start()

    def _watch(self) -> None:
        while not self._stopped.is_set():
            self.check()
            self._stopped.wait(BURNER_POLL_SECONDS)

    def _end(self) -> None:
        for process in self._burning:
            process.terminate()
        for process in self._burning:
            process.join()
        self._burning = []
