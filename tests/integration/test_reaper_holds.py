"""The reaper holds while an agent service deploys (moto ECS; moto keeps one deployment per service,
so ``EcsRollingDeployment``, a named fake, lists the rolling update's second one): no room is warned
or deleted, the decision is ``held``; a manual run deletes; an unreadable answer holds too. Under the
service profile it holds the same, and a once-only record of unknown outcome fails the run instead
of dropping its deletes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from moto import mock_aws

from devkit.fakes.aws_faults import Ambiguous, TookEffect
from devkit.fakes.ecs_fakes import EcsRollingDeployment
from devkit.fakes.ecs_profile import EcsAsTheProfileSays
from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.adapters.deployments import EcsDeploymentWatch
from fleet_remediation.adapters.idempotency import DynamoDBOnceGuard
from fleet_remediation.contract.agent_services import AgentService
from fleet_remediation.contract.budgets import IDEMPOTENCY_WRITE
from fleet_remediation.core.errors import OnceRecordUnknownError
from livekit_fleet_remediation.offline.lambda_context import LOCAL_ACCOUNT, local_region
from tests.unit.test_reaper_service import NOW, invoke, make_deps, old_and_new

SERVICE = AgentService(name="agents", ecs_cluster="agents", ecs_service="agent-svc", agent_log_group="/g")


@pytest.fixture
def ecs() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("ecs", region_name=local_region())
        client.create_cluster(clusterName=SERVICE.ecs_cluster)
        client.register_task_definition(
            family="agent", containerDefinitions=[{"name": "agent", "image": "agent:1", "memory": 512}]
        )
        client.create_service(
            cluster=SERVICE.ecs_cluster,
            serviceName=SERVICE.ecs_service,
            taskDefinition="agent",
            desiredCount=0,
        )
        yield client


def _tick() -> dict[str, Any]:
    region = local_region()
    return {
        "version": "0",
        "id": "s",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": LOCAL_ACCOUNT,
        "time": NOW.isoformat(),
        "region": region,
        "resources": [f"arn:aws:events:{region}:{LOCAL_ACCOUNT}:rule/reaper"],
        "detail": {},
    }


def test_the_reaper_holds_while_the_agent_service_deploys(ecs: Any) -> None:
    rolling = EcsRollingDeployment(ecs)
    rooms = old_and_new()
    deps, _ = make_deps(rooms)
    deps.deployments = EcsDeploymentWatch([SERVICE], ecs)
    rolling.rolling = True
    held = invoke(_tick(), deps)
    assert held["summary"]["held"].startswith("a deployment of agent-svc is in progress")
    assert [c["decision"] for c in held["candidates"] if c["resource"] == "lesson-zombie"] == ["held"]
    assert held["actions"] == []
    assert "lesson-zombie" in rooms.rooms
    rolling.rolling = False
    done = invoke(_tick(), deps)
    assert [a["resource"] for a in done["actions"]] == ["lesson-zombie"]


def test_an_unreadable_deployment_state_holds_and_says_why(ecs: Any) -> None:
    rooms = old_and_new()
    deps, _ = make_deps(rooms)
    missing = AgentService(name="agents", ecs_cluster="nowhere", ecs_service="gone", agent_log_group="/g")
    deps.deployments = EcsDeploymentWatch([missing], ecs)
    report = invoke(_tick(), deps)
    assert report["summary"]["held"].startswith("whether a deployment is in progress is unknown")
    assert [e["code"] for e in report["errors"]] == ["AwsApiError"]
    assert "lesson-zombie" in rooms.rooms


def test_under_the_service_profile_the_reaper_holds_then_an_unknown_once_record_fails_the_run_not_the_rooms(
    ecs: Any,
) -> None:
    """ECS as the profile says (``EcsAsTheProfileSays``: throttled at its read rate) answers the
    deployment read; then the run's once-only record (moto DynamoDB) is written and answered 500
    (``TookEffect``): the run deletes nothing and fails after its report, so Lambda retries it
    (``tests/faults/test_once_record_unknown.py`` shows that retry acting once)."""
    EcsAsTheProfileSays(ecs, clock=lambda: NOW.timestamp())
    rolling = EcsRollingDeployment(ecs)
    rooms = old_and_new()
    deps, _ = make_deps(rooms)
    deps.deployments = EcsDeploymentWatch([SERVICE], ecs)
    rolling.rolling = True
    assert invoke(_tick(), deps)["summary"]["held"].startswith("a deployment of agent-svc is in progress")
    rolling.rolling = False

    dynamodb = boto3.client("dynamodb", region_name=local_region())
    dynamodb.create_table(
        TableName="once",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    once_client = aws_client(IDEMPOTENCY_WRITE)
    TookEffect(once_client, "dynamodb.PutItem", Ambiguous.SERVER_ERROR)
    deps.once = DynamoDBOnceGuard(
        "once", persistence=DynamoDBPersistenceLayer(table_name="once", boto3_client=once_client)
    )
    with pytest.raises(OnceRecordUnknownError):
        invoke(_tick(), deps)
    assert "lesson-zombie" in rooms.rooms  # not deleted without its record, not dropped either
