"""The replay's world under a delay profile (``offline.replay_timing``): a query finds only the
lines searchable by its start and takes its run time on the simulated clock; a stopped task's later
lines are not written; the queue runs work in time order (follow-ups first); ECS deploys where the
log shows tasks replaced (so the drainer's hold applies) and a replacement is RUNNING only after the
profile's task start. Small logs, a simulated clock: milliseconds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from fleet_remediation.contract.signals import SignalCatalog
from livekit_fleet_remediation.cli.common import load_config
from livekit_fleet_remediation.offline.delay_profiles import profile_named
from livekit_fleet_remediation.offline.delays import DelayProfile, Spread
from livekit_fleet_remediation.offline.log_export import LogEvent, load_events
from livekit_fleet_remediation.offline.replay import Replay
from livekit_fleet_remediation.offline.replay_ecs import PENDING, SimulatedEcsService
from livekit_fleet_remediation.offline.replay_timing import (
    FOLLOW_UP,
    DelayedWorkerLogs,
    Deployments,
    ReplayTiming,
    rolling_deployments,
)
from livekit_fleet_remediation.offline.replay_world import SimulatedClock
from worker_drainer.adapters.ecs_tasks import RUNNING

T0 = datetime(2026, 9, 15, 15, 0, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "incident-2026-09-15.jsonl"
CONFIG = REPO / "examples" / "standalone" / "environments.json"
PREFIX = "agent/ppi-livekit-agent/"
DEPLOY_STARTS = datetime(2026, 9, 15, 17, 30, tzinfo=UTC)
DEPLOY_ENDS = datetime(2026, 9, 15, 17, 38, tzinfo=UTC)
OLD, NEW, OTHER = "agent/agent-svc/taskold", "agent/agent-svc/tasknew", "agent/agent-svc/taskother"
SLOW = DelayProfile(
    name="slow",
    version="t",
    source="test",
    log_visible=Spread(20.0, 20.0),
    insights_run=Spread(4.0, 4.0),
    task_start=Spread(45.0, 45.0),
)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def slow_vad(stream: str, minutes: float) -> LogEvent:
    record = {"message": "inference is slower than realtime", "delay": 3.0, "job_id": "j1"}
    return LogEvent(stream, at(minutes), record)


def line(stream: str, minutes: float) -> LogEvent:
    return LogEvent(stream, at(minutes), {"message": "tick"})


def test_a_query_finds_only_searchable_lines_and_takes_its_run_time() -> None:
    events = [slow_vad(OLD, m) for m in (1.0, 2.0, 2.9)]
    clock = SimulatedClock(at(3))
    timing = ReplayTiming(SLOW, 1, events, clock)
    catalog = SignalCatalog.default()
    logs = DelayedWorkerLogs(events, catalog.slow_vad, catalog, timing)
    (stats,) = logs.worker_stats(at(0), at(3), deadline=0.0)
    assert stats.warnings == 2  # the line of 2.9 min is searchable only 20 s later
    assert clock.now == at(3) + timedelta(seconds=4)  # the query's run time passed


def test_a_stopped_tasks_later_lines_are_not_written() -> None:
    events = [slow_vad(OLD, m) for m in (1.0, 2.0, 4.0)]
    clock = SimulatedClock(at(10))
    timing = ReplayTiming(SLOW, 1, events, clock)
    timing.cuts[OLD] = at(3)
    assert [timing.written(e) for e in events] == [True, True, False]
    catalog = SignalCatalog.default()
    (stats,) = DelayedWorkerLogs(events, catalog.slow_vad, catalog, timing).worker_stats(at(0), at(10), 0.0)
    assert stats.warnings == 2


def test_the_queue_runs_work_in_time_order_follow_ups_first() -> None:
    clock = SimulatedClock(at(0))
    timing = ReplayTiming(SLOW, 1, [], clock)
    ran: list[tuple[str, datetime]] = []
    timing.push(at(2), lambda: ran.append(("tick", clock.now)))
    timing.push(at(1), lambda: ran.append(("alarm", clock.now)))
    timing.push(at(2), lambda: ran.append(("event", clock.now)), FOLLOW_UP)
    timing.push(at(5), lambda: ran.append(("later", clock.now)))
    timing.run_until(at(2))
    assert ran == [("alarm", at(1)), ("event", at(2)), ("tick", at(2))]
    timing.run_until(None)
    assert ran[-1] == ("later", at(5))


def test_a_rolling_deployment_is_where_new_tasks_start_and_old_ones_stop() -> None:
    # OLD logs 0-40 min and stops; NEW starts at 30 min (replacing it); OTHER logs throughout.
    events = sorted(
        [line(OLD, m) for m in range(0, 41)]
        + [line(OTHER, m) for m in range(0, 61)]
        + [line(NEW, m) for m in range(30, 61)],
        key=lambda e: e.at,
    )
    found = rolling_deployments(events, timedelta(minutes=15))
    assert found.spans == [(at(30), at(40))]
    assert found.retired == {OLD: at(40)}
    # A task that starts while none stops is a scale-out, not a deployment.
    scale_out = sorted(
        [line(OTHER, m) for m in range(0, 61)] + [line(NEW, m) for m in range(30, 61)], key=lambda e: e.at
    )
    assert rolling_deployments(scale_out, timedelta(minutes=15)) == Deployments([], {})


def test_ecs_deploys_where_the_log_says_and_a_replacement_starts_pending() -> None:
    events = [line(OLD, 0), line(OTHER, 0), line(NEW, 30)]
    clock = SimulatedClock(at(1))
    ecs = SimulatedEcsService(
        events,
        clock,
        cluster="c",
        service="agent-svc",
        region="r",
        account="1",
        deployments=Deployments([(at(30), at(40))], {OLD: at(40)}),
        start_delay=lambda: timedelta(seconds=45),
    )
    assert ecs.deployment_in_progress() is None
    clock.now = at(35)
    assert "rolling deployment" in (ecs.deployment_in_progress() or "")
    assert {t.task_id for t in ecs.running_tasks()} == {"taskold", "taskother", "tasknew"}
    clock.now = at(40)
    assert ecs.deployment_in_progress() is None
    # The deployment replaced the old task: stopped at its last line, the desired count as before.
    assert {t.task_id for t in ecs.running_tasks()} == {"taskother", "tasknew"}
    assert ecs.capacity().desired_count == 2
    ecs.set_desired_count(3)
    assert ecs.capacity().running_count == 2  # the replacement is PENDING
    replacement = next(t for t in ecs._tasks.values() if t.stream is None)
    view = ecs.describe_task(replacement.arn)
    assert view is not None
    assert view.last_status == PENDING
    clock.now = at(40) + timedelta(seconds=45)
    assert ecs.capacity().running_count == 3
    view = ecs.describe_task(replacement.arn)
    assert view is not None
    assert view.last_status == RUNNING


def test_the_replay_holds_the_cordon_while_the_log_shows_a_rolling_deployment() -> None:
    """The shipped incident with a rolling deployment written into it: a healthy task stops logging
    at 17:38 and its lines from then on come from a new task that starts at 17:30. The drainer's
    tick would cordon the bad worker at 17:36; during the deployment it is held, and cordons once
    the deployment is over."""
    events = load_events(FIXTURE)
    config = load_config(CONFIG, "prod")
    replaced, new = f"{PREFIX}9cfcdae75e9feb6bb6232899ebd10ab7", f"{PREFIX}0123456789abcdef0123456789abcdef"
    deployed = sorted(
        [LogEvent(new, e.at, e.record) if e.stream == replaced and e.at >= DEPLOY_ENDS else e for e in events]
        + [LogEvent(new, DEPLOY_STARTS, {"message": "process started"})],
        key=lambda e: e.at,
    )
    result = Replay(deployed, "prod", config, profile=profile_named("none")).run()
    (cordon,) = [a for a in result.actions if a.action == "cordon"]
    assert cordon.at >= DEPLOY_ENDS
    held = [
        c
        for i in result.invocations
        if i.function == "worker_drainer" and DEPLOY_STARTS <= i.at < DEPLOY_ENDS
        for c in i.report["candidates"]
        if c["decision"] == "held" and c["reason"].startswith("cordon")
    ]
    assert held, "no drainer run held the cordon during the deployment"
