"""The baseline beside the reaper: what one would write by hand, in a fresh process.

    python -m bench._naive_child URL CLOCK_ISO

List every room, keep those created at least the max age before CLOCK, delete them one after
the other with livekit-api's own client. No re-check, no report, no caps, no deadline. Prints one
JSON line in the same terms as bench._reaper_child.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
from datetime import datetime, timedelta

from livekit import api

from devkit.livekit_local import DEV_API_KEY, DEV_API_SECRET

MAX_AGE = timedelta(minutes=60)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def reap(url: str, clock: datetime) -> tuple[int, int, int]:
    cutoff_ms = (clock - MAX_AGE).timestamp() * 1000
    async with api.LiveKitAPI(url, DEV_API_KEY, DEV_API_SECRET, failover=False) as lk:
        rooms = (await lk.room.list_rooms(api.ListRoomsRequest())).rooms
        old = [room.name for room in rooms if 0 < room.creation_time_ms <= cutoff_ms]
        for name in old:
            await lk.room.delete_room(api.DeleteRoomRequest(room=name))
    return len(rooms), len(old), 1 + len(old)


def main(url: str, clock_iso: str) -> None:
    clock = datetime.fromisoformat(clock_iso)
    cpu_before = cpu_seconds()
    started = time.perf_counter()
    seen, reaped, calls = asyncio.run(reap(url, clock))
    wall = time.perf_counter() - started
    cpu = cpu_seconds() - cpu_before
    print(
        json.dumps(
            {
                "rooms_seen": seen,
                "over_age": reaped,
                "reaped": reaped,
                "wall_seconds": round(wall, 3),
                "cpu_seconds": round(cpu, 3),
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "livekit_calls": calls,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
