"""The drainer's check that its IAM scope can be met, in the unit that owns it
(``act.task_scope_check``): the cluster scope reads nothing; the service scope needs the service's
ECS managed tags on, and an unreadable setting refuses the task steps as surely as one that is off."""

from __future__ import annotations

from typing import Any, cast

import pytest

from fleet_remediation.contract.sections import TaskActionScope
from fleet_remediation.core.errors import AwsApiError
from worker_drainer.act.task_scope_check import EcsManagedTagsOffError, task_scope_refusal
from worker_drainer.adapters.ecs_tasks import EcsTaskService


class Service:
    """What DescribeServices says of the managed tags: on, off, or an error."""

    def __init__(self, tags: bool | Exception) -> None:
        self.tags, self.reads = tags, 0

    def ecs_managed_tags(self) -> bool:
        self.reads += 1
        if isinstance(self.tags, Exception):
            raise self.tags
        return self.tags


def _refusal(service: Service, scope: TaskActionScope) -> Any:
    return task_scope_refusal(cast(EcsTaskService, service), scope, "agents-cluster", "agents")


THROTTLED = AwsApiError("DescribeServices: throttled", aws_code="Throttling")


@pytest.mark.parametrize("tags", [True, False, THROTTLED])
def test_the_cluster_scope_reads_nothing_and_refuses_nothing(tags: bool | Exception) -> None:
    service = Service(tags)
    assert _refusal(service, TaskActionScope.CLUSTER) is None
    assert service.reads == 0


def test_the_service_scope_with_managed_tags_on_may_act() -> None:
    service = Service(True)
    assert _refusal(service, TaskActionScope.SERVICE) is None
    assert service.reads == 1


def test_managed_tags_off_refuse_with_the_fix_named() -> None:
    refusal = _refusal(Service(False), TaskActionScope.SERVICE)
    assert isinstance(refusal, EcsManagedTagsOffError)
    assert (refusal.code, refusal.resource) == ("EcsManagedTagsOff", "agents")
    assert refusal.message == (
        "ECS service agents has ECS managed tags off, so its tasks carry no aws:ecs:serviceName tag and the "
        "drainer's IAM policy (drainer.task_action_scope = service) denies every task change. Turn them "
        "on (aws ecs update-service --cluster agents-cluster --service agents --enable-ecs-managed-tags "
        "--force-new-deployment: tasks started before keep no tag) or set drainer.task_action_scope to "
        "cluster"
    )


def test_an_unreadable_setting_refuses_with_the_read_error() -> None:
    unreadable = AwsApiError("DescribeServices: read timeout", aws_code="Transport", unknown=True)
    assert _refusal(Service(unreadable), TaskActionScope.SERVICE) is unreadable
