"""Worker drainer figures for a 50-task service (moto ECS/DynamoDB/SSM/SNS in process; agent logs
evaluated offline; a real livekit-server for the paths that list rooms).

Prints, per scenario, the handler's wall time and the calls it made: ECS, DynamoDB, Logs Insights
queries, worker /worker probes and LiveKit. In AWS each call adds its network latency (typically
10-50 ms for ECS/DynamoDB; Logs Insights queries take seconds), so the call counts carry over and
the times are the handler's own floor.

    PYTHONPATH=agent:functions:layers/shared/python:src:. .venv/bin/python -m bench.drainer_tick [--tasks 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
for _name, _value in {
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
}.items():
    os.environ.setdefault(_name, _value)

from livekit import api  # noqa: E402
from moto import mock_aws  # noqa: E402
from moto.moto_api import state_manager  # noqa: E402

from devkit.fakes.drainer_world import DrainerWorld, alarm_event, build_world, schedule_event  # noqa: E402
from devkit.livekit_local import LocalLiveKit  # noqa: E402

# The degraded task is the eighth; the others keep min_healthy_tasks and max_draining_fraction met.
MIN_TASKS = 8


class WorkerEndpoint:
    """A stand-in agents worker /worker endpoint reporting one active job."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = json.dumps({"worker_type": "JT_ROOM", "active_jobs": 1}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


async def _create_room(livekit: LocalLiveKit, name: str) -> str:
    async with api.LiveKitAPI(livekit.http_url, livekit.api_key, livekit.api_secret) as client:
        return str((await client.room.create_room(api.CreateRoomRequest(name=name))).sid)


def _run(world: DrainerWorld, event: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    deps = world.dependencies()
    started = time.perf_counter()
    report = world.invoke(event, deps)
    return time.perf_counter() - started, report


def _line(label: str, seconds: float, report: dict[str, Any]) -> str:
    calls = report["summary"].get("calls", {})
    actions = ", ".join(f"{a['action']}={a['outcome']}" for a in report["actions"]) or "none"
    return f"{label:<48} {seconds * 1000:8.1f} ms  calls {json.dumps(calls)}  actions: {actions}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=50, help=f"tasks in the service (at least {MIN_TASKS})")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.tasks < MIN_TASKS:
        parser.error(f"--tasks must be at least {MIN_TASKS}: the degraded task is the {MIN_TASKS}th")
    livekit = LocalLiveKit().start()
    endpoint = WorkerEndpoint()
    state_manager.set_transition("ecs::task", {"progression": "manual", "times": 1_000_000})
    cordon_times: list[float] = []
    try:
        for round_number in range(args.rounds):
            with mock_aws():
                world = build_world(livekit, datetime.now(UTC), tasks=args.tasks)
                world.policy = {"min_healthy_tasks": 2, "max_draining_fraction": 0.2}
                bad = world.task_ids[MIN_TASKS - 1]
                # The degraded task's one lesson: a live room its logs say it took (under the max age).
                room = f"lesson-bench-{round_number}"
                world.job_request(
                    bad, "AJ_bench", room, asyncio.run(_create_room(livekit, room)), minutes_ago=30
                )
                lines = [_line("tick, nothing marked", *_run(world, schedule_event(world.now)))]
                world.slow(bad, count=240, minutes=25)
                seconds, report = _run(world, alarm_event(at=world.now))
                cordon_times.append(seconds)
                lines.append(_line("alarm -> cordon (nothing to reap)", seconds, report))
                # ECS starts the replacement (moto has no scheduler): a stop waits for it.
                world.run_service_scheduler()
                world.now += timedelta(minutes=1)
                world.worker_urls[bad] = endpoint.url
                lines.append(
                    _line("tick, 1 draining, /worker reachable", *_run(world, schedule_event(world.now)))
                )
                world.worker_urls.clear()
                lines.append(
                    _line(
                        "tick, 1 draining, /worker unreachable (logs)",
                        *_run(world, schedule_event(world.now)),
                    )
                )
                world.now += timedelta(hours=2)
                world.slow(bad, count=30, minutes=5)  # still slow: the deadline, not recovery, ends it
                lines.append(
                    _line("tick, 1 draining, deadline passed", *_run(world, schedule_event(world.now)))
                )
                lines.append(_line("tick, after the stop", *_run(world, schedule_event(world.now))))
                if round_number == 0:
                    print(f"{args.tasks}-task service:")
                    print("\n".join(lines))
    finally:
        state_manager.unset_transition("ecs::task")
        livekit.stop()
    print(
        f"alarm event -> cordoned task, handler time over {args.rounds} rounds: "
        f"median {statistics.median(cordon_times) * 1000:.1f} ms, max {max(cordon_times) * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
