"""The drainer's check, before it acts, that its IAM scope can be met: with the default
``drainer.task_action_scope = service`` the policy allows task changes only on tasks tagged
``aws:ecs:serviceName``, which ECS sets only for a service with managed tags on. Against moto ECS
(plus ``EcsManagedTagsSetting``: moto drops ``enableECSManagedTags``) and the real livekit-server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from devkit.fakes.drainer_world import CLUSTER, SERVICE, DrainerWorld, moto_world
from devkit.livekit_local import LocalLiveKit
from worker_drainer.decide.task_tags import STATE_TAG

pytestmark = pytest.mark.livekit


@pytest.fixture
def world(livekit_server: LocalLiveKit) -> Iterator[DrainerWorld]:
    with moto_world(livekit_server) as built:
        yield built


def _managed_tags_off(world: DrainerWorld) -> None:
    """The world's service was created with managed tags on; turn them off as an operator would."""
    world.ecs_client.update_service(cluster=CLUSTER, service=SERVICE, enableECSManagedTags=False)


def _drain(world: DrainerWorld, task_id: str) -> dict[str, Any]:
    return world.invoke({"action": "drain", "task": task_id, "dry_run": False})


def test_a_service_without_managed_tags_refuses_the_cordon_with_a_typed_error(world: DrainerWorld) -> None:
    target = world.task_ids[3]
    _managed_tags_off(world)
    desired = world.desired_count()
    report = _drain(world, target)
    (error,) = report["errors"]
    assert error["code"] == "EcsManagedTagsOff"
    assert "--enable-ecs-managed-tags" in error["message"]
    assert "task_action_scope" in error["message"]
    (action,) = report["actions"]
    assert (action["action"], action["outcome"]) == ("cordon", "skipped")
    assert action["error"]["code"] == "EcsManagedTagsOff"
    # Nothing was changed: no mark, protection as it was, the desired count as it was.
    assert STATE_TAG not in world.tags(target)
    assert world.protection.protected[world.task_arns[3]] is True
    assert world.desired_count() == desired
    (_, message), *_ = world.notifications()
    assert "EcsManagedTagsOff" in message


def test_the_cluster_scope_needs_no_managed_tags(world: DrainerWorld) -> None:
    target = world.task_ids[3]
    _managed_tags_off(world)
    world.drainer_section = {"task_action_scope": "cluster"}
    report = _drain(world, target)
    assert report["errors"] == []
    assert [(a["action"], a["outcome"]) for a in report["actions"]] == [("cordon", "done")]
    assert STATE_TAG in world.tags(target)


def test_a_service_created_with_managed_tags_is_cordoned_under_the_service_scope(
    world: DrainerWorld,
) -> None:
    target = world.task_ids[3]
    report = _drain(world, target)
    assert report["errors"] == []
    assert [(a["action"], a["outcome"]) for a in report["actions"]] == [("cordon", "done")]
    assert STATE_TAG in world.tags(target)
