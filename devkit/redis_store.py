"""A throwaway redis-server on loopback as livekit-server's room store, and a bulk writer for it.

livekit-server keeps every room it creates live in memory (about 190 KiB each in v1.13.5), and
creating one scans its internal RPC subscriptions, so 100,000 rooms created through the API need
about 19 GB and grow slower as they go. With ``redis: {address: ...}`` in its config the server
keeps its room list in Redis (as multi-node deployments do): ListRooms reads the ``rooms`` hash
(room name -> ``livekit.Room`` protobuf), DeleteRoom checks it, brings the room up on a node and
deletes it. ``write_rooms`` puts room records straight into that hash, so a benchmark can give the
real server a fleet of any size without hosting each room; rooms that must really exist (those a
test deletes) are still created through the API.

    with LocalRedis() as redis, LocalLiveKit(extra_config=redis.livekit_config()) as server:
        redis.write_rooms([Room(name=..., sid=..., creation_time=..., creation_time_ms=...)])
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType

from livekit.protocol.models import Room

from devkit.livekit_local import free_port

ROOMS_HASH = b"rooms"  # livekit-server's RedisStore.RoomsKey
WRITE_BATCH = 1000


def _command(*parts: bytes) -> bytes:
    """One command in Redis's wire protocol (RESP)."""
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


@dataclass
class LocalRedis:
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def livekit_config(self) -> str:
        return f"redis:\n  address: {self.address}\n"

    def start(self, timeout: float = 10.0) -> LocalRedis:
        binary = shutil.which("redis-server")
        if binary is None:
            raise FileNotFoundError(
                "redis-server not found: `apt-get install redis-server` (make bench does)"
            )
        self.port = self.port or free_port()
        self.process = subprocess.Popen(
            [binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise TimeoutError(f"redis-server did not listen on {self.port} within {timeout}s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def write_rooms(self, rooms: Iterable[Room]) -> int:
        """HSET each room into livekit-server's room hash, in batches; returns how many were written."""
        written = 0
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as sock:
            reader = sock.makefile("rb")
            batch: list[bytes] = []

            def flush() -> None:
                sock.sendall(_command(b"HSET", ROOMS_HASH, *batch))
                reply = reader.readline()
                if not reply.startswith(b":"):
                    raise RuntimeError(f"redis HSET failed: {reply!r}")
                batch.clear()

            for room in rooms:
                batch += [room.name.encode(), room.SerializeToString()]
                written += 1
                if len(batch) == 2 * WRITE_BATCH:
                    flush()
            if batch:
                flush()
        return written

    def __enter__(self) -> LocalRedis:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
