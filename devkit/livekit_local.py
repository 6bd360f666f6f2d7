"""Start and stop a real livekit-server in dev mode on loopback (tests, demo and benchmarks)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
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

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    api_key = DEV_API_KEY
    api_secret = DEV_API_SECRET

    def start(self, timeout: float = 20.0) -> LocalLiveKit:
        if not self.port:
            self.port = free_port()
        rtc_tcp = free_port()
        udp_start = 40000 + (self.port % 200) * 100
        config = (
            f"port: {self.port}\n"
            f"rtc:\n  tcp_port: {rtc_tcp}\n  port_range_start: {udp_start}\n"
            f"  port_range_end: {udp_start + 99}\n  use_external_ip: false\n"
            "room:\n  empty_timeout: 86400\n  departure_timeout: 20\n" + self.extra_config
        )
        log = open(self.log_path, "wb") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
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
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"livekit-server exited with {self.process.returncode} (log: {self.log_path})"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"livekit-server did not listen on {self.port} within {timeout}s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> LocalLiveKit:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
