"""`make demo`, the drainer's part: the worker drainer's Lambda handler against a local ECS stand-in
(moto in-process, plus ``FakeEcsTaskProtection``: moto has no task protection) with a real
livekit-agents worker on the real livekit-server standing in for the degraded task.

The worker's ``/worker`` endpoint reports its active jobs, and its ``DrainAwareLoad`` reads the task's
tags (moto's, through ``FakeEcsTaskMetadataEndpoint``). Slow-VAD log lines are written into the
drainer's offline log source (moto has no Logs Insights statistics). LiveKit cannot backdate a room,
so the drainer's clock runs two hours ahead: the rooms created now look two hours old.

    attribute -> reap first -> cordon -> drain -> stop, one report per invocation
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from livekit import api

from devkit.fakes.agent_worker import RunningAgentWorker
from devkit.fakes.drainer_world import (
    CHAT_TOPIC,
    TABLE,
    TOPIC,
    DrainerWorld,
    alarm_event,
    build_world,
    schedule_event,
)
from devkit.fakes.ecs_fakes import FakeEcsTaskMetadataEndpoint
from devkit.livekit_local import LocalLiveKit
from devkit.moto_deployment import logged
from devkit.process_work import WorkBound
from fleet_remediation.contract.agent_services import DEFAULT_AGENT_SERVICE
from fleet_remediation.contract.naming import FunctionName, vad_alarm_name
from fleet_remediation.contract.settings import DrainerSettings
from livekit_fleet_agent import DrainAwareLoad, SlowInferenceCounter, TaskTagReader
from tools.demo_output import print_delivered, print_report
from worker_drainer.decide.task_tags import STATE_TAG

# moto needs a region; its mock supplies fake credentials.
os.environ.setdefault("AWS_DEFAULT_REGION", "eu-west-1")
ZOMBIE_AGE_MINUTES = 150
# The worker runs in this process, livekit-server as its child: a job starts on well under a second of
# their CPU, however slowly a loaded machine gives it; the wall cap is for one that never comes.
JOB_BOUND = WorkBound(cpu_seconds=10.0, wall_seconds=120.0)
DEMO_ENV = "demo"
LEDGER_TABLE = TABLE


@dataclasses.dataclass
class DemoWorld(DrainerWorld):
    """The tests' drainer world under the demo's own environment name."""

    def settings(self) -> DrainerSettings:
        return super().settings().model_copy(update={"environment_name": DEMO_ENV})


def demo_world(world: DrainerWorld) -> DemoWorld:
    demo = DemoWorld(**{f.name: getattr(world, f.name) for f in dataclasses.fields(world)})
    demo.protection.set_clock(lambda: demo.now)
    return demo


def vad_alarm(world: DrainerWorld) -> dict[str, Any]:
    """The VAD alarm's ALARM at the world's clock (the door refuses stale events)."""
    return alarm_event(name=vad_alarm_name(DEMO_ENV, DEFAULT_AGENT_SERVICE), at=world.now)


def reconcile_tick(world: DrainerWorld) -> dict[str, Any]:
    event = schedule_event(world.now)
    rule = event["resources"][0].rsplit("/", 1)[0]
    return {**event, "resources": [f"{rule}/lkfr-{DEMO_ENV}-drainer-reconcile"]}


async def _create_and_dispatch(server: LocalLiveKit, room: str, agent_name: str) -> str:
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as client:
        created = await client.room.create_room(api.CreateRoomRequest(name=room))
        await client.agent_dispatch.create_dispatch(
            api.CreateAgentDispatchRequest(room=room, agent_name=agent_name)
        )
        return str(created.sid)


async def _delete_room(server: LocalLiveKit, room: str) -> None:
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as client:
        await client.room.delete_room(api.DeleteRoomRequest(room=room))


def _step(
    number: str, title: str, world: DrainerWorld, event: dict[str, Any], output: Path
) -> dict[str, Any]:
    print(f"\n=== {number}. {title}")
    with logged(DEMO_ENV, FunctionName.WORKER_DRAINER):
        report = world.invoke(event)
    print_report(report)
    print_delivered(world.received(TOPIC), world.received(CHAT_TOPIC))
    (output / f"drainer-report-{number}.json").write_text(json.dumps(report, indent=2))
    return report


def _active_jobs(count: int) -> Callable[[dict[str, Any]], bool]:
    return lambda info: info.get("active_jobs") == count


def _wait(worker: RunningAgentWorker, predicate: Callable[[dict[str, Any]], bool], what: str) -> None:
    # An unanswered read is no answer: not "no job", only "read again".
    _until(worker, lambda: (info := _said(worker)) is not None and predicate(info), what)


def _said(worker: RunningAgentWorker) -> dict[str, Any] | None:
    """The worker's /worker answer; None when a loaded worker did not answer in time (read again)."""
    try:
        return worker.worker_info()
    except OSError:
        return None


def _until(worker: RunningAgentWorker, holds: Callable[[], bool], what: str) -> None:
    why = JOB_BOUND.wait(os.getpid(), holds, lambda: True)
    if why is not None:
        # What the worker says when the wait ended, not when it began.
        raise RuntimeError(f"the agents worker did not reach: {what}: {why} (it says {_said(worker)})")


@contextmanager
def moto_account() -> Iterator[None]:
    """The demo's AWS account: moto in-process, for the drainer's part and the audit's."""
    from moto import mock_aws
    from moto.moto_api import state_manager

    # moto moves a described task one lifecycle step per DescribeTasks by default; keep them RUNNING.
    state_manager.set_transition("ecs::task", {"progression": "manual", "times": 1_000_000})
    try:
        with mock_aws():
            yield
    finally:
        state_manager.unset_transition("ecs::task")


def run(server: LocalLiveKit, output: Path, first_step: int) -> None:
    """The drainer story on ``server``, inside ``moto_account``; the agents worker starts and ends here."""
    world = demo_world(build_world(server, datetime.now(UTC) + timedelta(hours=2), tasks=4))
    _story(world, server, output, first_step)


def _story(world: DrainerWorld, server: LocalLiveKit, output: Path, first_step: int) -> None:
    bad = world.task_ids[0]
    agent_name = f"demo-{uuid.uuid4().hex[:6]}"
    # Live lessons may last ten hours; everything else is over age after an hour.
    world.reaper_policy = {
        "max_age_minutes": 60,
        "rules": [{"name_pattern": "lesson-live-.*", "max_age_minutes": 600}],
    }
    metadata = FakeEcsTaskMetadataEndpoint(world.task_arns[0], lambda: world.tags(bad)).start()
    with _sdk_log_to(output / "agent-worker.log"):
        worker = RunningAgentWorker(
            server.http_url,
            server.ws_url,
            server.api_key,
            server.api_secret,
            agent_name,
            load_fnc=DrainAwareLoad(
                max_jobs=4,
                tag_reader=TaskTagReader(metadata.url, cache_seconds=0.2),
                slow_inference=SlowInferenceCounter(),
            ),
        ).start()
        world.worker_urls[bad] = worker.http_url
        try:
            lesson = _two_jobs(world, server, worker, agent_name)
            _ladder(world, server, worker, lesson, output, first_step)
        finally:
            worker.stop()
            metadata.stop()


@contextmanager
def _sdk_log_to(path: Path) -> Iterator[None]:
    """livekit-agents' own log lines (on a loaded machine: "event loop blocked", a slow room
    connection) go to ``path``: the demo prints only what a person reads, and stderr stays empty."""
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    sdk = logging.getLogger("livekit")
    sdk.addHandler(handler)
    sdk.propagate = False
    try:
        yield
    finally:
        sdk.removeHandler(handler)
        sdk.propagate = True
        handler.close()


def _two_jobs(world: DrainerWorld, server: LocalLiveKit, worker: RunningAgentWorker, agent_name: str) -> str:
    """The degraded task's worker takes an abandoned lesson and a live one; returns the live one."""
    bad = world.task_ids[0]
    zombie, lesson = f"lesson-zombie-{agent_name}", f"lesson-live-{agent_name}"
    for jobs, room in enumerate((zombie, lesson), start=1):
        _until(worker, worker.told_available, "told livekit-server it takes jobs")
        sid = asyncio.run(_create_and_dispatch(server, room, agent_name))
        world.job_request(bad, f"AJ_{room}", room, sid, minutes_ago=ZOMBIE_AGE_MINUTES)
        _wait(worker, _active_jobs(jobs), f"{jobs} active job(s)")
    world.slow(bad, count=240, minutes=25)
    print(
        f"\nECS service tasks {', '.join(world.task_ids)} (moto); task {bad} is a real agents "
        f"worker with 2 jobs ({zombie}: abandoned; {lesson}: a live lesson), and 240 slow-VAD "
        "warnings over 25 min."
    )
    return lesson


def _ladder(
    world: DrainerWorld,
    server: LocalLiveKit,
    worker: RunningAgentWorker,
    lesson: str,
    output: Path,
    n: int,
) -> None:
    bad = world.task_ids[0]
    title = "VAD alarm: attribute the slowness to one task, reap its over-age room first"
    _step(f"{n}", title, world, vad_alarm(world), output)
    _wait(worker, _active_jobs(1), "1 active job after the reap")
    print(f"  the worker now runs {int(worker.worker_info().get('active_jobs', 0))} job (the live lesson)")

    world.now += timedelta(minutes=5)
    world.slow(bad, count=30, minutes=4)
    _step(f"{n + 1}", "Reconcile tick, 5 min later, still slow: cordon", world, reconcile_tick(world), output)
    _wait(worker, lambda info: info.get("worker_load") == 1.0, "load 1.0 (it read its draining tag)")
    print(
        f"  task tag {STATE_TAG}={world.tags(bad)[STATE_TAG]}; the worker reports load "
        f"{worker.worker_info().get('worker_load')}: LiveKit sends it no new job; its lesson goes on"
    )
    started = world.run_service_scheduler()
    print(f"  ECS starts the replacement task {started[0]} (moto has no scheduler: the world does it)")

    world.now += timedelta(minutes=1)
    title = "Reconcile tick: draining, /worker still reports the lesson"
    _step(f"{n + 2}", title, world, reconcile_tick(world), output)

    asyncio.run(_delete_room(server, lesson))
    _wait(worker, lambda info: not info.get("active_jobs"), "no active job")
    world.now += timedelta(minutes=1)
    print("\n  the lesson ends (its room is closed)")
    _step(f"{n + 3}", "Reconcile tick: no active jobs, stop the task", world, reconcile_tick(world), output)
    stopped = world.task(bad)
    print(f"  ECS task {bad}: {stopped['lastStatus']} ({stopped['stoppedReason']})")
    trail = [entry["action"] for entry in sorted(world.audit(bad), key=lambda entry: entry["sk"])]
    print(f"  audit trail: {' -> '.join(trail)}")
