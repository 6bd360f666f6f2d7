"""Start and stop a real livekit-server in dev mode on loopback (tests, demo and benchmarks)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

REPO_ROOT = Path(__file__).resolve().parent.parent
LIVEKIT_SERVER_BIN = REPO_ROOT / ".tools" / "bin" / "livekit-server"
DEV_API_KEY = "devkey"
DEV_API_SECRET = "secret"


def find_binary() -> Path:
    override = os.environ.get("LIVEKIT_SERVER_BIN")
    if override:
        return Path(override)
    if LIVEKIT_SERVER_BIN.exists():
        return LIVEKIT_SERVER_BIN
    found = shutil.which("livekit-server")
    if found:
        return Path(found)
    raise FileNotFoundError(
        f"livekit-server not found at {LIVEKIT_SERVER_BIN}; run `make setup` (it runs `go install "
        "github.com/livekit/livekit-server/cmd/server@v1.13.5`)"
    )


# Starts of the server when a free port it was given was taken before it bound it.
BIND_ATTEMPTS = 3


def _tail(path: Path, size: int = 600) -> str:
    """The last characters the server wrote (the reason it stopped, if it did)."""
    try:
        return path.read_bytes()[-size:].decode("utf-8", "replace").strip()
    except OSError:
        return ""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LocalLiveKit:
    """A dev-mode livekit-server bound to 127.0.0.1 on the given (or a free) port."""

    port: int = 0
    log_path: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    # Appended to the generated config, e.g. "redis:\n  address: 127.0.0.1:6379\n".
    extra_config: str = ""
    # Seconds a room stays open after its last caller left (agents do not hold it): the server's 20.
    departure_timeout_seconds: int = 20
    # Where the server writes when the caller named no log: removed when it stops.
    _own_log: Path | None = field(default=None, repr=False)

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    api_key = DEV_API_KEY
    api_secret = DEV_API_SECRET

    def start(self, timeout: float = 20.0) -> LocalLiveKit:
        """Start the server and wait until it listens. A port chosen free and taken by another process
        before the server bound it is a race of the shared machine, not a fault: the server is started
        again on fresh ports (at most ``BIND_ATTEMPTS`` times; never for a port the caller chose)."""
        chosen = self.port
        attempt = 1
        while True:
            self.port = chosen or free_port()
            output = self._launch()
            if self._listening(timeout):
                return self
            said = _tail(output)
            if self.process is not None and self.process.poll() is not None:
                if not chosen and attempt < BIND_ATTEMPTS and "address already in use" in said:
                    attempt += 1
                    continue
                raise RuntimeError(
                    f"livekit-server exited with {self.process.returncode} (log: {self.log_path}): {said}"
                )
            self.stop()
            raise TimeoutError(f"livekit-server did not listen on {self.port} within {timeout}s: {said}")

    def _launch(self) -> Path:
        """Start the process on ``self.port`` and fresh RTC ports; returns the file it writes to."""
        rtc_tcp = free_port()
        udp_start = 40000 + (self.port % 200) * 100
        config = (
            f"port: {self.port}\n"
            f"rtc:\n  tcp_port: {rtc_tcp}\n  port_range_start: {udp_start}\n"
            f"  port_range_end: {udp_start + 99}\n  use_external_ip: false\n"
            f"room:\n  empty_timeout: 86400\n  departure_timeout: {self.departure_timeout_seconds}\n"
            + self.extra_config
        )
        if self.log_path is None and self._own_log is None:
            handle, name = tempfile.mkstemp(prefix="livekit-server-", suffix=".log")
            os.close(handle)
            self._own_log = Path(name)
        output = self.log_path or self._own_log
        assert output is not None
        with output.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    str(find_binary()),
                    "--dev",
                    "--bind",
                    "127.0.0.1",
                    "--node-ip",
                    "127.0.0.1",
                    "--config-body",
                    config,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return output

    def _listening(self, timeout: float) -> bool:
        """True once the server answers on its port (its health check's "OK": a socket that only
        accepts may be another process's); False if it exits or the time passes."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"{self.http_url}/", timeout=0.5) as answer:
                    if answer.status == 200:
                        return self.process.poll() is None
            except OSError:
                time.sleep(0.1)
        return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._own_log is not None:
            self._own_log.unlink(missing_ok=True)
            self._own_log = None

    def __enter__(self) -> LocalLiveKit:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
