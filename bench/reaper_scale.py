"""The reaper at scale on a real local livekit-server, beside a naive sequential script.

    python -m bench.reaper_scale                         # 1,000 and 10,000 rooms
    python -m bench.reaper_scale --rooms 100000 --json   # one JSON object per size
    python -m bench.reaper_scale --rooms 10000 --latency # and through a 20 ms-each-way proxy

For each size N a fresh livekit-server gets N rooms: 2 x ``--repeat`` groups of 1 % each, created
one after the other with a pause at each boundary, then the rest. The reaper (enforcing, the
per-run cap raised to the backlog) and the naive script (bench._naive_child: list, filter by
creation time, delete one by one) then run in turns, each with its clock fixed at "end of the
next group + max age", so each run finds exactly one group (1 %) over age: the first reaper run
sees N rooms, each later run 1 % fewer. Medians are printed (this machine is shared; single runs
vary). LiveKit cannot backdate a room; the fixed clocks are the only simulated part. Each run is
a fresh process, so peak RSS and CPU are its own (CPU is counted around the run, not the imports).

``--latency`` repeats the comparison through devkit.fault_proxy delaying each leg by
``--delay-ms`` (default 20 ms each way, so 40 ms per round trip) on ``--latency-rooms`` rooms
(default 10,000, so 100 deletions): the reaper's concurrent deletes against the naive script's
sequential ones.

Where the rooms live (``--store``): livekit-server holds every room it creates live in memory
(about 190 KiB each in v1.13.5's dev mode: 100,000 rooms would take about 19 GB, and creating
them slows down as they accumulate), so above 20,000 rooms (``auto``) the server runs with a
throwaway Redis as its room store (devkit.redis_store) and the rooms beyond the over-age groups
are written into that store. The server still answers every ListRooms and DeleteRoom itself;
the over-age groups, the only rooms deleted, are created through its API. ``memory`` keeps all
rooms live (a size that would not fit the available memory is skipped, with the reason), and
the server is the first process the kernel may kill under memory pressure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import secrets
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from livekit import api
from livekit.protocol.models import Room

from devkit.fault_proxy import Fault, FaultProxy
from devkit.livekit_local import LocalLiveKit
from devkit.redis_store import LocalRedis
from fleet_remediation.domain.reaping import RECHECK_BATCH_SIZE

CREATE_CONCURRENCY = 16
CREATE_ATTEMPTS = 5
MAX_AGE_MINUTES = 60
OVER_AGE_FRACTION = 0.01
# Rooms must outlive setup and both runs; LiveKit closes an empty room after this.
ROOM_EMPTY_TIMEOUT_SECONDS = 4 * 3600
# Larger fleets keep the rooms beyond the over-age groups in the server's Redis room store.
API_FLEET_LIMIT = 20_000
SERVER_KIB_PER_ROOM = 190  # measured: 181-187 KiB per room at 5,000-26,000 rooms
MEMORY_MARGIN_MIB = 1536
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


def run_child(module: str, *args: str) -> dict[str, Any]:
    child = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, check=False)
    if child.returncode != 0:
        raise RuntimeError(f"{module} failed ({child.returncode}): {child.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(child.stdout.strip().splitlines()[-1])
    result["cpu_us_per_room"] = round(result["cpu_seconds"] / max(result["rooms_seen"], 1) * 1e6, 2)
    return result


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


def store_for(total: int, requested: str) -> str:
    return requested if requested != "auto" else ("memory" if total <= API_FLEET_LIMIT else "redis")


def compare(
    server_url: str, old: int, ends: list[datetime]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Reaper and naive script in turns, each turn one group older than the rest."""
    max_age = timedelta(minutes=MAX_AGE_MINUTES)
    reapers, naives = [], []
    for end_reaper, end_naive in zip(ends[::2], ends[1::2], strict=True):
        reapers.append(
            run_child("bench._reaper_child", server_url, (end_reaper + max_age).isoformat(), str(old))
        )
        naives.append(run_child("bench._naive_child", server_url, (end_naive + max_age).isoformat()))
    return reapers, naives


def median_of(runs: list[dict[str, Any]], key: str) -> Any:
    return statistics.median(run[key] for run in runs)


def measure_size(total: int, repeat: int, store: str) -> dict[str, Any]:
    need = total * SERVER_KIB_PER_ROOM / 1024 + MEMORY_MARGIN_MIB
    if store == "memory" and available_mib() < need:
        return {
            "rooms": total,
            "skipped": f"livekit-server needs about {need / 1024:.1f} GiB for {total} live rooms; "
            f"{available_mib() / 1024:.1f} GiB available (use --store redis)",
        }
    started = time.monotonic()
    with fleet_server(total, store) as (server, redis):
        log(f"  creating {total} rooms ({store} store) ...")
        try:
            old, ends = build_fleet(server, total, 2 * repeat, redis)
        except MemoryError as exc:
            return {"rooms": total, "skipped": str(exc)}
        setup = time.monotonic() - started
        log(f"  the reaper and the naive script in turns, {repeat} each ({setup:.0f} s of setup)")
        reapers, naives = compare(server.http_url, old, ends)
    first = reapers[0]
    return {
        "rooms": total,
        "store": store,
        "over_age": first["over_age"],
        "reaped": first["reaped"],
        "wall_seconds": median_of(reapers, "wall_seconds"),
        "peak_rss_mib": max(r["peak_rss_mib"] for r in reapers),
        "livekit_calls": first["livekit_calls"],
        "livekit_calls_bound": 1 + math.ceil(old / RECHECK_BATCH_SIZE) + old,
        "report_bytes": max(r["report_bytes"] for r in reapers),
        "cpu_us_per_room": median_of(reapers, "cpu_us_per_room"),
        "tokens_signed": first["tokens_signed"],
        "errors": sorted({code for r in reapers for code in r["errors"]}),
        "runs": len(reapers),
        "naive": {
            "wall_seconds": median_of(naives, "wall_seconds"),
            "cpu_us_per_room": median_of(naives, "cpu_us_per_room"),
            "livekit_calls": naives[0]["livekit_calls"],
            "rooms_seen": naives[0]["rooms_seen"],
        },
        "cpu_per_room_vs_naive": round(
            statistics.median(
                r["cpu_us_per_room"] / n["cpu_us_per_room"] for r, n in zip(reapers, naives, strict=True)
            ),
            2,
        ),
        "each_run": [{"reaper": r, "naive": n} for r, n in zip(reapers, naives, strict=True)],
        "setup_seconds": round(setup, 1),
    }


def measure_latency(total: int, delay_ms: float, repeat: int, store: str) -> dict[str, Any]:
    with fleet_server(total, store) as (server, redis), FaultProxy("127.0.0.1", server.port) as proxy:
        log(f"  creating {total} rooms for the latency run ({store} store) ...")
        old, ends = build_fleet(server, total, 2 * repeat, redis)
        proxy.inject(Fault.DELAY, delay_ms=delay_ms)
        log(f"  both through the proxy ({delay_ms:g} ms each way), {repeat} each")
        reapers, naives = compare(proxy.url, old, ends)
    return {
        "latency": {
            "delay_ms_each_way": delay_ms,
            "rooms": total,
            "store": store,
            "deletions": {"reaper": reapers[0]["reaped"], "naive": naives[0]["reaped"]},
            "reaper_wall_seconds": median_of(reapers, "wall_seconds"),
            "naive_wall_seconds": median_of(naives, "wall_seconds"),
            "naive_over_reaper": round(
                median_of(naives, "wall_seconds") / median_of(reapers, "wall_seconds"), 2
            ),
            "reaper_livekit_calls": reapers[0]["livekit_calls"],
            "naive_livekit_calls": naives[0]["livekit_calls"],
            "runs": len(reapers),
        }
    }


def print_size(row: dict[str, Any]) -> None:
    if "skipped" in row:
        print(f"{row['rooms']:>7}  skipped: {row['skipped']}", flush=True)
        return
    naive = row["naive"]
    print(
        f"{row['rooms']:>7} {row['store']:>6} {row['over_age']:>6} {row['reaped']:>6} "
        f"{row['wall_seconds']:>7.2f} "
        f"{row['peak_rss_mib']:>8.1f} {row['livekit_calls']:>5}/{row['livekit_calls_bound']:<5} "
        f"{row['report_bytes'] / 1024:>8.1f} {row['cpu_us_per_room']:>8.2f} | "
        f"{naive['wall_seconds']:>7.2f} {naive['cpu_us_per_room']:>8.2f} {naive['livekit_calls']:>6} | "
        f"{row['cpu_per_room_vs_naive']:>5.2f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--rooms", type=int, action="append", help="fleet size (repeatable; default 1000, 10000)"
    )
    parser.add_argument(
        "--json", action="store_true", help="one JSON object per size, nothing else on stdout"
    )
    parser.add_argument("--latency", action="store_true", help="also compare both through a delaying proxy")
    parser.add_argument("--latency-rooms", type=int, default=10_000)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each contender per size (medians)")
    parser.add_argument(
        "--store",
        choices=["auto", "memory", "redis"],
        default="auto",
        help=f"where the rooms beyond the over-age groups live (auto: memory up to {API_FLEET_LIMIT} rooms)",
    )
    args = parser.parse_args()
    sizes = args.rooms or [1000, 10_000]
    if not args.json:
        print("reaper vs a naive list-then-delete script, real livekit-server (dev mode, loopback)")
        print(
            "  rooms  store   over reaped  wall s  RSS MiB calls/bound  report KB  CPU us/room | "
            "naive: wall s  CPU us/room  calls | CPU/room reaper:naive"
        )
    for total in sizes:
        log(f"{total} rooms:")
        row = measure_size(total, args.repeat, store_for(total, args.store))
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            print_size(row)
    if args.latency:
        log(f"latency: {args.latency_rooms} rooms, {args.delay_ms:g} ms each way")
        result = measure_latency(
            args.latency_rooms, args.delay_ms, args.repeat, store_for(args.latency_rooms, args.store)
        )
        if args.json:
            print(json.dumps(result), flush=True)
        else:
            lat = result["latency"]
            print(
                f"through a proxy delaying {lat['delay_ms_each_way']:g} ms each way, {lat['rooms']} rooms, "
                f"{lat['deletions']['reaper']} deletions: reaper {lat['reaper_wall_seconds']:.2f} s "
                f"({lat['reaper_livekit_calls']} calls), naive {lat['naive_wall_seconds']:.2f} s "
                f"({lat['naive_livekit_calls']} calls): naive/reaper = {lat['naive_over_reaper']:.2f}"
            )


if __name__ == "__main__":
    main()
