"""Nothing lost between a step and its word: a drainer run killed right after a step took effect
(after the cordon's tag, after protection off, after capacity up, after the cordon's last tag, after
StopTask) leaves an open intent in the ledger; the next run re-reads the task, records the outcome
(``done`` when the task shows it) and tells it once — the "cordoned" / "stopped" line in its message
and its action event — and the run after that tells nothing more. Of two runs that settle the same
intent, one tells it.

Kills are ``InvocationKilled`` (a ``BaseException``, as a Lambda timeout or an out-of-memory ends
the process) raised from botocore's after-call hook on moto-backed clients (``devkit.fakes.aws_faults``),
so the service has acted and the run never sees the reply."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from devkit.fakes.aws_faults import InvocationKilled, KillAfter
from devkit.fakes.drainer_world import DrainerWorld, moto_world, schedule_event
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.contract.action_events import ActionEvent
from fleet_remediation.core.announce import Announced
from fleet_remediation.core.report import ReportBuilder
from tests.faults.test_drainer_saga_faults import (
    AFTER_THE_LEASE,
    actions,
    drain,
    faulty,
    invoke,
    journal,
)
from worker_drainer.act.interrupted_steps import settle_interrupted
from worker_drainer.decide.task_tags import STATE_TAG

pytestmark = [pytest.mark.livekit, pytest.mark.timeout(90)]


class RecordedEvents:
    """An ``ActionEventSink`` that keeps what it was given (the EventBridge put is tested elsewhere)."""

    def __init__(self) -> None:
        self.events: list[ActionEvent] = []

    def put(self, events: list[ActionEvent]) -> Announced:
        self.events.extend(events)
        return Announced(sent=len(events))


@pytest.fixture
def world(livekit_server: LocalLiveKit) -> Iterator[DrainerWorld]:
    with moto_world(livekit_server) as built:
        yield built


def _told(world: DrainerWorld, sink: RecordedEvents, action: str, task_id: str) -> tuple[int, int]:
    """How many messages name the step, and how many action events announce it done."""
    verb = {"cordon": "cordoned", "stop": "stopped"}[action]
    messages = sum(f"{verb} task {task_id[:8]}" in subject for subject, _ in world.notifications())
    events = sum(1 for e in sink.events if (e.resource, e.action, e.outcome) == (task_id, action, "done"))
    return messages, events


def _tick(world: DrainerWorld, sink: RecordedEvents) -> dict[str, Any]:
    world.now += AFTER_THE_LEASE
    deps = world.dependencies()
    deps.action_events = sink
    return invoke(world, schedule_event(world.now), deps)


@pytest.mark.parametrize(
    ("operation", "skip"),
    [
        ("ecs.TagResource", 0),  # after the tag: the agent stops taking jobs
        ("ecs.UpdateTaskProtection", 0),  # after scale-in protection off
        ("ecs.UpdateService", 0),  # after the replacement capacity went up
        ("ecs.TagResource", 1),  # after the last tag (cordon: complete)
    ],
    ids=["after-tag", "after-protection-off", "after-capacity-up", "after-cordon-complete"],
)
def test_a_cordon_killed_after_a_step_is_recorded_and_told_once_by_the_next_run(
    world: DrainerWorld, operation: str, skip: int
) -> None:
    target = world.task_ids[0]
    ecs, _, deps = faulty(world)
    KillAfter(ecs, operation, skip=skip)
    with pytest.raises(InvocationKilled):
        invoke(world, drain(target), deps)
    assert world.tags(target)[STATE_TAG] == "draining"
    assert journal(world, target) == [("cordon", "intended")]
    assert world.notifications() == []

    sink = RecordedEvents()
    report = _tick(world, sink)
    assert ("cordon", "done") in actions(report)
    assert "begun by run" in next(a["reason"] for a in report["actions"] if a["action"] == "cordon")
    assert journal(world, target)[0] == ("cordon", "done")
    assert _told(world, sink, "cordon", target) == (1, 1)

    again = RecordedEvents()
    assert ("cordon", "done") not in actions(_tick(world, again))
    assert _told(world, again, "cordon", target) == (0, 0)


def test_a_stop_killed_after_stop_task_is_recorded_and_told_once_by_the_next_run(world: DrainerWorld) -> None:
    target = world.task_ids[0]
    assert actions(invoke(world, drain(target))) == [("cordon", "done")]
    world.run_service_scheduler()  # the replacement runs
    ecs, _, deps = faulty(world)
    KillAfter(ecs, "ecs.StopTask")
    world.now += AFTER_THE_LEASE
    # The drain deadline passes with the task idle: the tick stops it, and is killed right after.
    world.now += timedelta(hours=1)
    with pytest.raises(InvocationKilled):
        invoke(world, schedule_event(world.now), deps)
    assert target not in world.running_task_ids()
    assert journal(world, target)[-1] == ("stop", "intended")
    world.notifications()  # what the cordon's run said

    sink = RecordedEvents()
    report = _tick(world, sink)
    assert ("stop", "done") in actions(report)
    assert ("stop", "done") in journal(world, target)
    assert ("stop", "intended") not in journal(world, target)
    assert _told(world, sink, "stop", target) == (1, 1)
    again = RecordedEvents()
    _tick(world, again)
    assert _told(world, again, "stop", target) == (0, 0)


def test_two_runs_settling_the_same_interrupted_step_tell_it_once(world: DrainerWorld) -> None:
    target = world.task_ids[0]
    ecs, _, deps = faulty(world)
    KillAfter(ecs, "ecs.TagResource")
    with pytest.raises(InvocationKilled):
        invoke(world, drain(target), deps)
    one, other = world.dependencies(), world.dependencies()
    seen_by_both = one.ledger.open_intents()
    assert [i.action for i in seen_by_both] == ["cordon"]
    first, second = ReportBuilder("worker_drainer", "a"), ReportBuilder("worker_drainer", "b")
    settle_interrupted(seen_by_both, one.ecs, one.ledger, first)
    settle_interrupted(seen_by_both, other.ecs, other.ledger, second)
    assert [(a.action, a.outcome.value) for a in first.actions] == [("cordon", "done")]
    assert second.actions == []
    assert one.ledger.open_intents() == []
