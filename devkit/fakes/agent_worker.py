"""A real livekit-agents worker (``AgentServer``) run in a background thread for integration tests.

Jobs run in threads (``JobExecutorType.THREAD``) to keep start-up fast; everything else — the
registration with livekit-server, availability answers driven by ``load_fnc``, the ``/worker``
HTTP endpoint — is the library's own code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from livekit import api
from livekit.agents import AgentServer, JobContext, JobExecutorType
from livekit.protocol import agent

from devkit.process_work import WorkBound

# A worker in a thread registers on a second or two of CPU; the wall cap is for one that never does.
REGISTRATION = WorkBound(cpu_seconds=20.0, wall_seconds=150.0)


class RunningAgentWorker:
    def __init__(
        self,
        http_url: str,
        ws_url: str,
        api_key: str,
        api_secret: str,
        agent_name: str,
        load_fnc: Callable[[Any], float] | None = None,
        load_threshold: float = 0.99,
    ) -> None:
        self.agent_name = agent_name
        self._http_url, self._api_key, self._api_secret = http_url, api_key, api_secret
        self.rooms_joined: list[str] = []
        self.server = AgentServer(
            ws_url=ws_url,
            api_key=api_key,
            api_secret=api_secret,
            load_fnc=load_fnc,
            load_threshold=load_threshold,
            job_executor_type=JobExecutorType.THREAD,
            num_idle_processes=0,
            host="127.0.0.1",
            port=0,
            max_retry=1,
            shutdown_process_timeout=1.0,
        )
        self._registered = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"agent-worker-{agent_name}")

        @self.server.rtc_session(agent_name=agent_name)
        async def entrypoint(ctx: JobContext) -> None:
            # The job holds its slot for as long as its room exists, like a lesson does; it does not
            # join the room over WebRTC (not needed for dispatch, load and /worker, and slow here).
            room = ctx.job.room.name
            self.rooms_joined.append(room)
            async with api.LiveKitAPI(http_url, api_key, api_secret) as client:
                while True:
                    listed = await client.room.list_rooms(api.ListRoomsRequest(names=[room]))
                    if not any(r.name == room for r in listed.rooms):
                        break
                    await asyncio.sleep(0.2)
            ctx.shutdown("room closed")

        self.server.on("worker_registered", lambda *_: self._registered.set())

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        # The worker's own log has any error's details; the tests assert on behaviour.
        with contextlib.suppress(Exception):
            self._loop.run_until_complete(self.server.run(devmode=True))

    def start(self) -> RunningAgentWorker:
        """Start the worker's thread and wait until livekit-server has registered it, bounded by the
        CPU this process and its children spend (a loaded machine only slows it down)."""
        self._thread.start()
        why = REGISTRATION.wait(os.getpid(), self._registered.is_set, self._thread.is_alive)
        if why is not None:
            raise TimeoutError(f"the agents worker did not register with livekit-server: {why}")
        return self

    def told_available(self) -> bool:
        """Whether the worker's last status update told livekit-server it takes jobs. A job it just
        accepted counts as a whole slot until the job runs, and the server hears the change only
        with the next update: an offer in between finds no worker and is dropped."""
        return bool(self.server._previous_status == agent.WorkerStatus.WS_AVAILABLE)

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.server.worker_info.http_port}"

    def worker_info(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.http_url}/worker", timeout=2) as response:
            return dict(json.loads(response.read()))

    def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.1)
        return predicate()

    def end_jobs(self) -> None:
        """Delete the rooms of every job this worker took, so its jobs end as lessons do."""

        async def delete() -> None:
            async with api.LiveKitAPI(self._http_url, self._api_key, self._api_secret) as client:
                listed = await client.room.list_rooms(api.ListRoomsRequest(names=self.rooms_joined))
                for room in listed.rooms:
                    await client.room.delete_room(api.DeleteRoomRequest(room=room.name))

        asyncio.run(delete())
        self.wait_for(lambda: not self.worker_info().get("active_jobs"), 10)

    def stop(self) -> None:
        self.end_jobs()
        if self._loop is not None and self._thread.is_alive():
            future = asyncio.run_coroutine_threadsafe(self.server.aclose(), self._loop)
            with contextlib.suppress(Exception):
                future.result(timeout=15)
        self._thread.join(timeout=15)
