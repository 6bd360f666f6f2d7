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
import json
import math
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta
from typing import Any

from bench._reaper_fleet import available_mib, build_fleet, fleet_server, log
from devkit.fault_proxy import Fault, FaultProxy
from fleet_remediation.domain.reaping import RECHECK_BATCH_SIZE

MAX_AGE_MINUTES = 60
# Larger fleets keep the rooms beyond the over-age groups in the server's Redis room store.
API_FLEET_LIMIT = 20_000
SERVER_KIB_PER_ROOM = 190  # measured: 181-187 KiB per room at 5,000-26,000 rooms
MEMORY_MARGIN_MIB = 1536


def run_child(module: str, *args: str) -> dict[str, Any]:
    child = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, check=False)
    if child.returncode != 0:
        raise RuntimeError(f"{module} failed ({child.returncode}): {child.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(child.stdout.strip().splitlines()[-1])
    result["cpu_us_per_room"] = round(result["cpu_seconds"] / max(result["rooms_seen"], 1) * 1e6, 2)
    return result


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
        "report_truncated": first["truncated"],
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
