"""``make drill``'s fleet: real livekit-agents worker processes (``devkit/drill_agent.py``), each with
the task metadata endpoint of its ECS task (``FakeEcsTaskMetadataEndpoint``: the task's tags, where
the drill marker goes), and callers that are real LiveKit participants publishing audio.

Every stdout line of a worker is kept with the second it was read, as the awslogs driver stamps what
it ships to CloudWatch Logs; ``export`` writes them as ``filter-log-events`` exports them.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

from livekit import api, rtc

from devkit.drill_agent import AGENT_NAME_ENV
from devkit.fakes.ecs_fakes import FakeEcsTaskMetadataEndpoint
from devkit.livekit_clients import BackgroundLoop
from devkit.livekit_local import LocalLiveKit

REPO_ROOT = Path(__file__).resolve().parent.parent
AGENT_MODULE = REPO_ROOT / "devkit" / "drill_agent.py"
# The drill's own LiveKit calls (a dev tool's, not the product's budgets): a lost reply is re-read.
DELETE_ROOM_SECONDS = 10.0
LIST_ROOMS_SECONDS = 5.0
SAMPLE_RATE = 16_000
FRAME_SECONDS = 0.02


class DrillWorker:
    """One ECS task of the agent service: a worker process in its own process group (so a fault can
    stop or limit the worker and its job processes together) and its metadata endpoint."""

    def __init__(self, server: LocalLiveKit, agent_name: str, cluster: str, env: dict[str, str]) -> None:
        self.server = server
        self.agent_name = agent_name
        self.task_id = uuid.uuid4().hex
        self.task_arn = f"arn:aws:ecs:eu-west-1:000000000000:task/{cluster}/{self.task_id}"
        self.tags: dict[str, str] = {}
        self.lines: list[tuple[float, str]] = []
        self.extra_env = env
        self.endpoint = FakeEcsTaskMetadataEndpoint(self.task_arn, lambda: dict(self.tags))
        self.process: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()

    def start(self) -> DrillWorker:
        self.endpoint.start()
        env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join(map(str, (REPO_ROOT, REPO_ROOT / "agent"))),
            ECS_CONTAINER_METADATA_URI_V4=self.endpoint.url,
            **{AGENT_NAME_ENV: self.agent_name},
            **self.extra_env,
        )
        command = [sys.executable, "-m", "livekit.agents", "start", str(AGENT_MODULE), "--url"]
        self.process = subprocess.Popen(
            [*command, self.server.ws_url, "--api-key", self.server.api_key, "--api-secret", "secret"],
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        threading.Thread(target=self._read, daemon=True).start()
        return self

    def _read(self) -> None:
        assert self.process is not None
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._lock:
                self.lines.append((time.time(), line.rstrip("\n")))

    def records(self) -> list[dict[str, Any]]:
        with self._lock:
            return [json.loads(line) for _, line in self.lines if line.startswith("{")]

    def registered(self) -> bool:
        return any(record.get("message") == "registered worker" for record in self.records())

    def rooms(self) -> set[str]:
        """The rooms of the jobs this worker took."""
        return {str(r.get("room")) for r in self.records() if r.get("message") == "received job request"}

    def jobs(self) -> int:
        return sum(record.get("message") == "received job request" for record in self.records())

    @property
    def pgid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def terminate(self) -> None:
        """Asks the worker to drain and exit (``stop`` waits for it)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.pgid, signal.SIGCONT)
            os.killpg(self.pgid, signal.SIGTERM)

    def stop(self) -> None:
        self.terminate()
        if self.process is not None:
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.pgid, signal.SIGKILL)
                self.process.wait()
        self.endpoint.stop()


def wait_until(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


class Callers:
    """Callers on one event loop thread: each opens its room, has the named agent dispatched to it,
    joins and publishes a tone for the call's length, then leaves."""

    def __init__(self, server: LocalLiveKit, api_url: str | None = None) -> None:
        self.server = server
        # Where the drill's DeleteRoom goes: the server, or a fault proxy in front of it.
        self.api_url = api_url or server.http_url
        self.loop = BackgroundLoop()
        self.placed: list[str] = []
        self.failed: list[str] = []

    def call(self, room: str, seconds: float, agent_name: str) -> None:
        self.placed.append(room)
        future = asyncio.run_coroutine_threadsafe(self._call(room, seconds, agent_name), self.loop.loop)
        future.add_done_callback(lambda done: self._ended(room, done))

    def _ended(self, room: str, done: Any) -> None:
        if not done.cancelled() and done.exception() is not None:
            self.failed.append(f"{room}: {done.exception()!r}")

    async def _call(self, room: str, seconds: float, agent_name: str) -> None:
        async with api.LiveKitAPI(self.server.http_url, self.server.api_key, self.server.api_secret) as lk:
            await lk.room.create_room(api.CreateRoomRequest(name=room))
            await lk.agent_dispatch.create_dispatch(
                api.CreateAgentDispatchRequest(room=room, agent_name=agent_name)
            )
        token = (
            api.AccessToken(self.server.api_key, self.server.api_secret)
            .with_identity(f"caller-{room}")
            .with_grants(api.VideoGrants(room_join=True, room=room))
            .to_jwt()
        )
        caller = rtc.Room()
        await caller.connect(self.server.ws_url, token)
        source = rtc.AudioSource(SAMPLE_RATE, 1)
        track = rtc.LocalAudioTrack.create_audio_track("microphone", source)
        await caller.local_participant.publish_track(
            track, rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE)
        )
        await _speak(source, seconds)
        await caller.disconnect()

    def delete_room(self, room: str) -> str:
        """DeleteRoom on the server, as the functions' LiveKit client sends it (the room's jobs end),
        once: what became of the room. A reply that did not come in time is not a failure: the room
        list is read again to say whether it went, and the delete is not sent twice."""
        return self.loop.run(self._delete(room), timeout=DELETE_ROOM_SECONDS + LIST_ROOMS_SECONDS + 5)

    async def _delete(self, room: str) -> str:
        async with api.LiveKitAPI(self.api_url, self.server.api_key, self.server.api_secret) as lk:
            try:
                await asyncio.wait_for(
                    lk.room.delete_room(api.DeleteRoomRequest(room=room)), DELETE_ROOM_SECONDS
                )
            except api.TwirpError as exc:
                if exc.code == api.TwirpErrorCode.NOT_FOUND:
                    return "already gone"
                lost = f"no clear answer ({exc.code})"
            except (TimeoutError, OSError) as exc:
                lost = f"no answer ({type(exc).__name__})"
            else:
                return "deleted on livekit-server"
        async with api.LiveKitAPI(self.server.http_url, self.server.api_key, self.server.api_secret) as lk:
            listed = await asyncio.wait_for(
                lk.room.list_rooms(api.ListRoomsRequest(names=[room])), LIST_ROOMS_SECONDS
            )
        there = any(r.name == room for r in listed.rooms)
        return f"{lost}; read again: {'still there, not sent again' if there else 'gone'}"

    def close(self) -> None:
        self.loop.close()


async def _speak(source: rtc.AudioSource, seconds: float) -> None:
    """A 220 Hz tone, frame by frame at real time (``capture_frame`` paces on the source's queue)."""
    samples = int(SAMPLE_RATE * FRAME_SECONDS)
    tone = array("h", (int(8000 * math.sin(2 * math.pi * 220 * n / SAMPLE_RATE)) for n in range(samples)))
    frame = rtc.AudioFrame(tone.tobytes(), SAMPLE_RATE, 1, samples)
    started = time.monotonic()
    sent = 0
    while time.monotonic() - started < seconds:
        await source.capture_frame(frame)
        sent += 1
        await asyncio.sleep(max(0.0, started + sent * FRAME_SECONDS - time.monotonic()))
