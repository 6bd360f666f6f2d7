"""Reaper at scale on a real local livekit-server: wall time, peak memory and LiveKit API calls.

    make bench            # or: python -m bench.reaper_scale --rooms 1000 10000

For each size it creates N rooms (about 1 % of them "old": created before a split instant), then
runs the reaper handler in a fresh child process — enforcing, with a clock fixed at split + max age,
so exactly the old rooms are over age — and reports what the child measured. The per-run cap is
raised to the number of old rooms so the whole backlog is deleted in one run (the default cap of 20
would leave the rest to later runs). LiveKit cannot backdate a room; the fixed clock is the only
simulated part.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

from livekit import api

from devkit.livekit_local import LocalLiveKit

CREATE_CONCURRENCY = 64
MAX_AGE_MINUTES = 60


async def create_rooms(server: LocalLiveKit, prefix: str, count: int) -> None:
    gate = asyncio.Semaphore(CREATE_CONCURRENCY)
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as lk:

        async def one(index: int) -> None:
            async with gate:
                await lk.room.create_room(
                    api.CreateRoomRequest(name=f"{prefix}-{index:05d}", empty_timeout=7200)
                )

        await asyncio.gather(*(one(i) for i in range(count)))


async def delete_all(server: LocalLiveKit) -> None:
    gate = asyncio.Semaphore(CREATE_CONCURRENCY)
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as lk:
        rooms = (await lk.room.list_rooms(api.ListRoomsRequest())).rooms

        async def one(name: str) -> None:
            async with gate:
                await lk.room.delete_room(api.DeleteRoomRequest(room=name))

        await asyncio.gather(*(one(r.name) for r in rooms))


def run_size(server: LocalLiveKit, total: int) -> dict[str, object]:
    old = max(1, total // 100)
    started = time.monotonic()
    asyncio.run(create_rooms(server, "lesson-old", old))
    time.sleep(1.0)  # creation times have millisecond precision; leave a clear gap around the split
    split = datetime.now(UTC)
    time.sleep(1.0)
    asyncio.run(create_rooms(server, "lesson-new", total - old))
    setup_seconds = time.monotonic() - started
    clock = split + timedelta(minutes=MAX_AGE_MINUTES)
    child = subprocess.run(
        [sys.executable, "-m", "bench._reaper_child", server.http_url, clock.isoformat(), str(old)],
        capture_output=True,
        text=True,
        check=True,
    )
    measured: dict[str, object] = json.loads(child.stdout.strip().splitlines()[-1])
    asyncio.run(delete_all(server))
    return {"rooms": total, "over_age": old, "setup_seconds": round(setup_seconds, 1), **measured}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rooms", type=int, nargs="+", default=[1000, 10000])
    args = parser.parse_args()
    print("reaper benchmark on a local livekit-server (dev mode, loopback)")
    print(
        f"{'rooms':>7} {'over age':>9} {'reaped':>7} {'wall s':>7} {'LiveKit calls':>14} "
        f"{'peak RSS MiB':>13} {'RSS growth MiB':>15}"
    )
    with LocalLiveKit() as server:
        for total in args.rooms:
            print(f"  creating {total} rooms ...", file=sys.stderr, flush=True)
            row = run_size(server, total)
            print(
                f"{row['rooms']:>7} {row['over_age']:>9} {row['reaped']:>7} {row['wall_seconds']:>7} "
                f"{row['livekit_calls']:>14} {row['peak_rss_mib']:>13} {row['rss_growth_mib']:>15}",
                flush=True,
            )


if __name__ == "__main__":
    main()
