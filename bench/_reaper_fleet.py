"""The fleets bench.reaper_scale measures on: a fresh livekit-server (its rooms live in memory, or
beyond the over-age groups in a throwaway Redis room store) and the rooms, created in groups a
second apart so each group's creation times are clearly older than the next's."""

from __future__ import annotations

import asyncio
import math
import secrets
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from livekit import api
from livekit.protocol.models import Room

from devkit.livekit_local import LocalLiveKit
from devkit.redis_store import LocalRedis

CREATE_CONCURRENCY = 16
CREATE_ATTEMPTS = 5
OVER_AGE_FRACTION = 0.01
# Rooms must outlive setup and both runs; LiveKit closes an empty room after this.
ROOM_EMPTY_TIMEOUT_SECONDS = 4 * 3600
# While creating, the machine's free memory is watched; below the floor the size is abandoned.
MEMORY_FLOOR_MIB = 1536
MEMORY_CHECK_EVERY = 500
GROUP_GAP_SECONDS = 1.0  # creation times have millisecond precision: a clear gap at each boundary


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def available_mib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return math.inf


def first_to_kill(server: LocalLiveKit) -> None:
    """Under memory pressure the kernel's OOM killer takes the benchmark's server, not a neighbour."""
    if server.process is not None:
        Path(f"/proc/{server.process.pid}/oom_score_adj").write_text("1000")


async def create_rooms(server: LocalLiveKit, prefix: str, count: int) -> None:
    gate = asyncio.Semaphore(CREATE_CONCURRENCY)
    done = 0
    step = max(count // 10, 1)
    started = time.monotonic()
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret, failover=False) as lk:

        async def one(index: int) -> None:
            nonlocal done
            request = api.CreateRoomRequest(
                name=f"{prefix}-{index:06d}", empty_timeout=ROOM_EMPTY_TIMEOUT_SECONDS
            )
            async with gate:
                for attempt in range(CREATE_ATTEMPTS):
                    try:
                        await lk.room.create_room(request)
                        break
                    except api.ServerError as exc:
                        # A loaded server answers 503 "no response from servers" (its internal RPC
                        # timed out); creating the same room again is harmless.
                        if exc.status < 500 or attempt + 1 == CREATE_ATTEMPTS:
                            raise
                        await asyncio.sleep(0.5 * (attempt + 1))
            done += 1
            if done % MEMORY_CHECK_EVERY == 0 and available_mib() < MEMORY_FLOOR_MIB:
                raise MemoryError(f"only {available_mib():.0f} MiB left after {done} rooms: stopped")
            if done % step == 0 or done == count:
                log(f"    {prefix}: {done}/{count} rooms ({time.monotonic() - started:.0f} s)")

        await asyncio.gather(*(one(i) for i in range(count)))


def build_fleet(
    server: LocalLiveKit, total: int, groups: int, store: LocalRedis | None
) -> tuple[int, list[datetime]]:
    """``groups`` groups of 1 % each, then the rest; returns the group size and each group's end.
    The groups are always created through the API; the rest too, unless ``store`` is given, then
    they are written into the server's Redis room store."""
    old = max(1, round(total * OVER_AGE_FRACTION))
    ends = []
    for group in range(groups):
        asyncio.run(create_rooms(server, f"lesson-g{group}", old))
        time.sleep(GROUP_GAP_SECONDS)
        ends.append(datetime.now(UTC))
        time.sleep(GROUP_GAP_SECONDS)
    rest = total - groups * old
    if store is None:
        asyncio.run(create_rooms(server, "lesson-new", rest))
    else:
        now = time.time()
        written = store.write_rooms(
            Room(
                name=f"lesson-new-{index:06d}",
                sid=f"RM_{secrets.token_hex(6)}",
                creation_time=int(now),
                creation_time_ms=int(now * 1000),
                empty_timeout=ROOM_EMPTY_TIMEOUT_SECONDS,
                departure_timeout=20,
            )
            for index in range(rest)
        )
        log(f"    lesson-new: {written} rooms written to the server's Redis room store")
    return old, ends


@contextmanager
def fleet_server(total: int, store: str) -> Iterator[tuple[LocalLiveKit, LocalRedis | None]]:
    if store == "redis":
        with LocalRedis() as redis, LocalLiveKit(extra_config=redis.livekit_config()) as server:
            first_to_kill(server)
            yield server, redis
    else:
        with LocalLiveKit() as server:
            first_to_kill(server)
            yield server, None
