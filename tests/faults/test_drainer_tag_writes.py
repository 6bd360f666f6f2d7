"""The drainer under ECS's lagging reads (``EcsAsTheProfileSays``, the drainer worlds' default:
DescribeTasks shows a task's old tags for a while after a write) decides on what it knows it wrote:
its own recent tag writes, journalled on the ledger (``adapters/tags_as_written.py``). A run that
cannot read those writes (its DynamoDB query answered a timeout, injected with a botocore hook on a
moto-backed client) starts no step and says why; the next run acts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ReadTimeoutError

from devkit.fakes.drainer_world import DrainerWorld, moto_world
from devkit.livekit_local import LocalLiveKit
from worker_drainer.decide.task_tags import STATE_TAG

pytestmark = [pytest.mark.livekit, pytest.mark.timeout(60)]


@pytest.fixture
def world(livekit_server: LocalLiveKit) -> Iterator[DrainerWorld]:
    with moto_world(livekit_server) as built:
        yield built


def drain(task_id: str) -> dict[str, Any]:
    return {"action": "drain", "task": task_id, "dry_run": False}


def actions(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(a["action"], a["outcome"]) for a in report["actions"]]


def _tag_writes_time_out(params: dict[str, Any], **_: Any) -> None:
    if params.get("ExpressionAttributeValues", {}).get(":pk", {}).get("S", "").startswith("tags#"):
        raise ReadTimeoutError(endpoint_url="https://fake-endpoint/tag-writes")


def test_a_second_drain_before_ecs_shows_the_first_cordons_nothing_twice(world: DrainerWorld) -> None:
    target, arn = world.task_ids[1], world.task_arns[1]
    desired = world.desired_count()
    assert actions(world.invoke(drain(target))) == [("cordon", "done")]
    shown = world.dependencies().ecs.describe_task(arn)
    assert shown is not None
    assert STATE_TAG not in shown.tags, "ECS's read should still lag the cordon here"

    again = world.invoke(drain(target))
    assert ("cordon", "done") not in actions(again), again
    assert world.desired_count() == desired + 1
    assert [enabled for a, enabled in world.protection.updates if a == arn] == [True, False]
    assert [e["outcome"] for e in world.audit(target) if e["action"] == "cordon"] == ["done"]


def test_a_run_that_cannot_read_its_recent_writes_starts_no_step_and_the_next_one_does(
    world: DrainerWorld,
) -> None:
    target = world.task_ids[2]
    dynamodb = boto3.client("dynamodb")
    dynamodb.meta.events.register_first("before-parameter-build.dynamodb.Query", _tag_writes_time_out)
    report = world.invoke(drain(target), world.dependencies(dynamodb_client=dynamodb))
    (step,) = report["actions"]
    assert (step["action"], step["outcome"]) == ("cordon", "skipped")
    assert step["reason"].startswith("own recent tag writes unreadable"), step
    assert report["errors"], "the unreadable ledger is reported"
    assert STATE_TAG not in world.tags(target)

    assert actions(world.invoke(drain(target))) == [("cordon", "done")]
    assert world.tags(target)[STATE_TAG] == "draining"
