"""``make drill``'s functions acting on the live fleet while a run lasts.

Every ``LOOK_SECONDS`` (one minute of the drill's clock) the run's lines so far go through the
replay: the alarms as the stack defines them under the AWS delay profile, the functions' own service
entry points as the stack's rules route them. Each step the functions took on a task or a room up to
that moment is then done to the real fleet, once: a cordon takes the task out of the call rotation
and starts a replacement worker (the service's new task), a stop ends the worker's process, an undo
gives the task its calls back, a deleted room is deleted on livekit-server.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from devkit.drill_fleet import DrillWorker, wait_until
from fleet_remediation.contract.drainer_steps import Step
from livekit_fleet_remediation.cli.replay import replay
from livekit_fleet_remediation.offline.replay_model import DELETE_ROOM, ActionRecord
from tools.drill_run import SCALE, Fleet, RunRecord

# One minute of the drill's clock: the drainer's tick and the reaper's schedule see each minute.
LOOK_SECONDS = 60 / SCALE
TAKE_OUT = (Step.CORDON.value, Step.COMPLETE_CORDON.value)
# Real seconds a replacement worker has to register and take its first call.
REPLACEMENT_WAIT_SECONDS = 60.0


@dataclass
class LiveRemediation:
    """The functions on the live fleet (``Fleet.run``'s ``remediation``); ``events`` are what was
    done, at real seconds."""

    env_name: str
    config: Path
    work: Path
    events: list[tuple[float, str]] = field(default_factory=list)
    replacement: tuple[float, float | None] | None = None  # real seconds to register, to a first call
    looks: int = 0
    _done: set[tuple[str, str]] = field(default_factory=set)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self, fleet: Fleet, record: RunRecord) -> None:
        self._stopping.clear()
        self._fleet, self._record = fleet, record
        self._spawn(self._loop)

    def stop(self) -> None:
        self._stopping.set()
        for thread in self._threads:
            thread.join()

    def _spawn(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _loop(self) -> None:
        while not self._stopping.wait(LOOK_SECONDS):
            self._look()

    def _look(self) -> None:
        now = time.time()
        lines = self.work / f"{self._record.name}-live.jsonl"
        self._fleet.export(self._record, lines, until=now)
        if not lines.stat().st_size:
            return
        result = replay(lines, self.env_name, self.config, profile="aws")
        self.looks += 1
        horizon = self._record.simulated(now)
        # Only what the functions did by now: the replay's last invocations run past the lines.
        for action in (a for a in result.actions if a.at <= horizon):
            if (action.action, action.target) not in self._done:
                self._done.add((action.action, action.target))
                self._act(action)

    def _act(self, action: ActionRecord) -> None:
        task_id = action.target.rsplit("/", 1)[-1]
        drilled = "the drilled task" if task_id == self._record.task_id else "another task"
        if action.action in TAKE_OUT:
            replacement = self._fleet.take_out(task_id)
            if replacement is not None:
                self._note(
                    f"done: {action.action} of {drilled}: out of the call rotation, replacement started"
                )
                self._spawn(self._watch, replacement, time.time())
        elif action.action == Step.STOP.value:
            if self._fleet.stop_task(task_id):
                self._note(f"done: stop of {drilled}: its worker process ended")
        elif action.action == Step.UNDO.value:
            self._fleet.give_back(task_id)
            self._note(f"done: undo of {drilled}: back in the call rotation")
        elif action.action == DELETE_ROOM:
            whose = (
                "the drilled task's"
                if action.target in self._fleet.rooms_of(self._record.task_id)
                else "another task's"
            )
            self._note(f"done: delete-room of {whose} room: {self._fleet.delete_room(action.target)}")

    def _watch(self, replacement: DrillWorker, began: float) -> None:
        """The replacement's registration and first call, timed."""
        wait_until(replacement.registered, REPLACEMENT_WAIT_SECONDS)
        registered = time.time() - began
        self._note("replacement registered with livekit-server")
        took = wait_until(lambda: replacement.jobs() > 0, REPLACEMENT_WAIT_SECONDS)
        if took:
            self._note("replacement took its first call")
        if self.replacement is None:
            self.replacement = (registered, time.time() - began if took else None)

    def _note(self, what: str) -> None:
        self.events.append((time.time(), what))
