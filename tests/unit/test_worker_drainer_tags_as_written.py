"""The drainer reads tasks with its own recent tag writes laid over ECS's eventually consistent
tags (``adapters/tags_as_written.py``). ECS here is ``LaggingEcs``, a small explicit fake: its
DescribeTasks shows a task's tags as they were before the last write until the test says it has
caught up, as real ECS may for a while. The ledger is the replay's in-memory one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from fleet_remediation.core.errors import AwsApiError
from livekit_fleet_remediation.offline.replay_stores import SimulatedLedger
from livekit_fleet_remediation.offline.service_profile import AWS_PROFILE
from worker_drainer.adapters.ecs_model import EcsTask
from worker_drainer.adapters.journal_model import AuditKey, TagWrite
from worker_drainer.adapters.tags_as_written import OWN_WRITES_TRUSTED_SECONDS, TagsAsWritten
from worker_drainer.decide.task_tags import CORDON_TAG, STATE_TAG, STATE_TAGS, State, TaskMarks

ARN = "arn:aws:ecs:eu-west-1:123456789012:task/agents/t1"
T0 = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


class LaggingEcs:
    """ECS whose reads show the tags from before the writes until ``catch_up``."""

    def __init__(self) -> None:
        self.calls = 0
        self.tags: dict[str, str] = {}
        self.shown: dict[str, str] = {}

    def catch_up(self) -> None:
        self.shown = dict(self.tags)

    def running_tasks(self) -> list[EcsTask]:
        return [EcsTask(ARN, "RUNNING", "RUNNING", "service:agents", dict(self.shown))]

    def describe_task(self, task: str) -> EcsTask | None:
        return self.running_tasks()[0]

    def tag_task(self, task_arn: str, tags: Mapping[str, str]) -> None:
        self.tags |= tags

    def untag_task(self, task_arn: str, keys: Sequence[str]) -> None:
        self.tags = {k: v for k, v in self.tags.items() if k not in keys}


class UnreadableLedger(SimulatedLedger):
    def tag_writes_since(self, moment: datetime) -> list[TagWrite]:
        raise AwsApiError("DynamoDB ledger call failed: timed out", resource="agents", aws_code="ReadTimeout")


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def _state(view: TagsAsWritten) -> State:
    task = view.describe_task(ARN)
    assert task is not None
    return TaskMarks.read(task.tags).state


def test_a_run_sees_its_own_cordon_while_ecs_still_shows_the_task_healthy() -> None:
    ecs, clock = LaggingEcs(), Clock()
    view = TagsAsWritten(ecs, SimulatedLedger(), clock)  # type: ignore[arg-type]
    view.tag_task(ARN, {STATE_TAG: "draining", CORDON_TAG: "started"})
    assert TaskMarks.read(ecs.running_tasks()[0].tags).state is State.HEALTHY
    assert _state(view) is State.DRAINING
    assert TaskMarks.read(view.running_tasks()[0].tags).state is State.DRAINING


def test_the_next_run_sees_the_writes_a_step_recorded_and_ecs_decides_after_the_window() -> None:
    ecs, clock, ledger = LaggingEcs(), Clock(), SimulatedLedger()
    first = TagsAsWritten(ecs, ledger, clock)  # type: ignore[arg-type]
    first.tag_task(ARN, {STATE_TAG: "draining"})
    first.untag_task(ARN, list(STATE_TAGS))
    first.tag_task(ARN, {STATE_TAG: "reaped"})
    first.record(AuditKey("run-1", T0, 0))

    clock.now = T0 + timedelta(seconds=OWN_WRITES_TRUSTED_SECONDS - 1)
    assert _state(TagsAsWritten(ecs, ledger, clock)) is State.REAPED  # type: ignore[arg-type]

    # Past the window ECS's reads decide (here someone has since removed the marks by hand).
    ecs.tags, clock.now = {}, T0 + timedelta(seconds=OWN_WRITES_TRUSTED_SECONDS + 1)
    ecs.catch_up()
    assert _state(TagsAsWritten(ecs, ledger, clock)) is State.HEALTHY  # type: ignore[arg-type]


def test_an_unrecorded_write_stays_this_runs_own_and_a_refresh_reads_the_ledger_again() -> None:
    ecs, clock, ledger = LaggingEcs(), Clock(), SimulatedLedger()
    mine = TagsAsWritten(ecs, ledger, clock)  # type: ignore[arg-type]
    theirs = TagsAsWritten(ecs, ledger, clock)  # type: ignore[arg-type]
    assert _state(theirs) is State.HEALTHY  # its earlier writes read: none yet
    mine.tag_task(ARN, {STATE_TAG: "draining"})
    assert _state(theirs) is State.HEALTHY
    mine.record(AuditKey("run-1", T0, 0))
    theirs.refresh()  # as the executor does under the service's lease
    assert _state(theirs) is State.DRAINING


def test_an_unreadable_ledger_is_said_and_only_ecs_and_the_runs_own_writes_show() -> None:
    ecs, clock = LaggingEcs(), Clock()
    view = TagsAsWritten(ecs, UnreadableLedger(), clock)  # type: ignore[arg-type]
    assert _state(view) is State.HEALTHY
    assert view.unread is not None
    assert "timed out" in view.unread.message
    view.tag_task(ARN, {STATE_TAG: "draining"})
    assert _state(view) is State.DRAINING


def test_writes_of_one_step_compose_in_order() -> None:
    cordon = TagWrite("t1", T0, {STATE_TAG: "draining", CORDON_TAG: "started"})
    undo = TagWrite("t1", T0 + timedelta(seconds=1), removed=tuple(STATE_TAGS))
    again = TagWrite("t1", T0 + timedelta(seconds=2), {STATE_TAG: "reaped"})
    both = cordon.then(undo).then(again)
    assert both.applied_to({"other": "x", CORDON_TAG: "complete"}) == {"other": "x", STATE_TAG: "reaped"}
    assert both.at == again.at


def test_the_trust_window_outlasts_the_service_profiles_ecs_lag() -> None:
    assert 3 * AWS_PROFILE.ecs_consistency_seconds.at(0.999) <= OWN_WRITES_TRUSTED_SECONDS
