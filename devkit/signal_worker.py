"""Runs ``devkit/signal_agent.py`` as production runs an agent — the SDK's own CLI in a child
process, JSON logs on stdout — and hands its dispatches scripts, for tests and demos.

Every stdout line is kept as written, so a test can feed the exact text to a metric-filter
evaluator and the parsed object to the offline one.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from livekit import api

from devkit.livekit_clients import BackgroundLoop, Participant
from devkit.livekit_local import LocalLiveKit
from devkit.process_work import WorkBound
from devkit.signal_agent import AGENT_NAME_ENV

REPO_ROOT = Path(__file__).resolve().parent.parent
AGENT_MODULE = REPO_ROOT / "devkit" / "signal_agent.py"
AGENT_PACKAGE_ROOT = REPO_ROOT / "agent"
SESSION_CLOSED = "signal_agent_session_closed"
# A worker registers on about 3 s of CPU (its main process and the one kept warm); ten times that
# is a fault, whatever the machine's load. The wall cap is for a worker that waits without working.
REGISTRATION = WorkBound(cpu_seconds=30.0, wall_seconds=150.0)
# A scripted job (dispatch, a few replies, the session's close) costs its processes well under 2 s of
# CPU; a script's own waits (a stalled reply, a hold) are seconds of wall, far inside the cap.
JOB = WorkBound(cpu_seconds=20.0, wall_seconds=150.0)


class SignalAgentWorker:
    """``python``: the interpreter the worker runs on. By default the checkout's, with the agent
    package from ``agent/``; an installed environment's brings ``livekit_fleet_agent`` from its own
    site-packages (only devkit, for the fake engines, comes from the checkout)."""

    def __init__(
        self, server: LocalLiveKit, agent_name: str | None = None, python: Path | None = None
    ) -> None:
        self.server = server
        self.python = python
        self.agent_name = agent_name or f"signals-{uuid.uuid4().hex[:6]}"
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._stderr: IO[str] | None = None
        self._loop: BackgroundLoop | None = None

    def start(self, bound: WorkBound = REGISTRATION) -> SignalAgentWorker:
        """Start the worker and wait until livekit-server has registered it, bounded by the CPU its
        processes spend (a loaded machine only slows it down); a failure quotes its stderr."""
        paths = [REPO_ROOT] if self.python else [REPO_ROOT, AGENT_PACKAGE_ROOT]
        env = dict(
            os.environ, PYTHONPATH=os.pathsep.join(map(str, paths)), **{AGENT_NAME_ENV: self.agent_name}
        )
        self._stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed by stop)
        self._process = subprocess.Popen(
            [
                str(self.python or sys.executable),
                "-m",
                "livekit.agents",
                "start",
                str(AGENT_MODULE),
                "--url",
                self.server.ws_url,
                "--api-key",
                self.server.api_key,
                "--api-secret",
                self.server.api_secret,
            ],
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True, name=f"stdout-{self.agent_name}").start()
        self._loop = BackgroundLoop()
        process = self._process
        why = bound.wait(
            process.pid,
            lambda: any(r.get("message") == "registered worker" for r in self.records()),
            lambda: process.poll() is None,
        )
        if why is not None:
            stderr = self._stderr_tail()
            self.stop()
            raise TimeoutError(f"the agents worker did not register: {why}; its stderr:\n{stderr}")
        return self

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read()[-3000:]

    def _read(self) -> None:
        assert self._process is not None
        assert self._process.stdout is not None
        for line in self._process.stdout:
            with self._lock:
                self.lines.append(line.rstrip("\n"))

    def raw_json_lines(self) -> list[str]:
        """The stdout lines that are JSON objects, exactly as written."""
        with self._lock:
            return [line for line in self.lines if line.startswith("{")]

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.raw_json_lines()]

    def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.1)
        return predicate()

    def run_script(self, room: str, script: dict[str, Any], bound: WorkBound = JOB) -> list[str]:
        """Open ``room`` with a listening participant (the agent's audio plays only once someone
        subscribes to it), dispatch the agent with ``script``, wait until its session has closed
        (bounded by the CPU the worker's processes spend, as the registration is) and return the
        JSON lines of that job."""
        assert self._loop is not None
        asyncio.run(self._create_room(room))
        listener = Participant(self.server, self._loop, room, f"listener-{room}").connect()
        try:
            asyncio.run(self._dispatch(room, script))
            assert self._process is not None
            process = self._process
            why = bound.wait(
                process.pid,
                lambda: any(
                    r.get("message") == SESSION_CLOSED and r.get("room") == room for r in self.records()
                ),
                lambda: process.poll() is None,
            )
        finally:
            listener.close()
        if why is not None:
            raise TimeoutError(f"the job in {room} did not close its session: {why}")
        return [line for line in self.raw_json_lines() if json.loads(line).get("room") == room]

    async def _create_room(self, room: str) -> None:
        async with api.LiveKitAPI(
            self.server.http_url, self.server.api_key, self.server.api_secret
        ) as client:
            await client.room.create_room(api.CreateRoomRequest(name=room))

    async def _dispatch(self, room: str, script: dict[str, Any]) -> None:
        async with api.LiveKitAPI(
            self.server.http_url, self.server.api_key, self.server.api_secret
        ) as client:
            await client.agent_dispatch.create_dispatch(
                api.CreateAgentDispatchRequest(
                    room=room, agent_name=self.agent_name, metadata=json.dumps(script)
                )
            )

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._loop is not None:
            self._loop.close()
        if self._stderr is not None:
            self._stderr.close()


DEMO_SCRIPTS: dict[str, dict[str, Any]] = {
    "streaming": {"tts": "streaming", "say": ["The first answer.", "The second answer."], "hold_seconds": 10},
    "stalling": {
        "tts": "stalling",
        "llm_reply": "Sure, let us read the next page together.",
        "first_audio_timeout_seconds": 1.5,
        "hold_seconds": 3,
    },
    "failing": {
        "tts": "failing",
        "say": ["Hello there."],
        "first_audio_timeout_seconds": 1.5,
        "hold_seconds": 3,
    },
}


def main() -> None:
    """Print the emitter's lines, as the worker wrote them, for one job per fake TTS, and what each
    line adds to which detection signal (``SignalCatalog.default()``)."""
    from fleet_remediation.contract.signals import SignalCatalog
    from livekit_fleet_agent.detection_signals import LOGGER_NAME

    catalog = SignalCatalog.default()
    with LocalLiveKit() as server:
        worker = SignalAgentWorker(server).start()
        try:
            for name, script in DEMO_SCRIPTS.items():
                print(f"--- {name} TTS: {json.dumps(script)}")
                for line in worker.run_script(f"demo-{name}-{uuid.uuid4().hex[:6]}", script):
                    record = json.loads(line)
                    if record["name"] == LOGGER_NAME:
                        signals = [
                            f"{signal.metric_name} +{count}"
                            for signal in catalog
                            if (count := signal.count(record))
                        ]
                        print(line)
                        print(f"    -> counts as: {', '.join(signals) or 'nothing'}")
        finally:
            worker.stop()


if __name__ == "__main__":
    main()
