"""The drainer's adapters in the units that own them: ECS over a stubbed boto3 client (each request's
exact parameters, each answer read back), the ledger over moto's DynamoDB (each condition at its
edge), the capacity debt's item, and the worker's ``/worker`` probe over a file and a closed port."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from fleet_remediation.core.errors import AwsApiError, ConcurrentActionError
from worker_drainer.adapters.capacity_debts import CapacityDebt, Phase, debt_attributes, debt_from
from worker_drainer.adapters.ecs_model import EcsTask, ServiceCapacity, TaskProtection
from worker_drainer.adapters.ecs_tasks import DESCRIBE_BATCH, BotoEcsTasks, TaskGoneError, ecs_client_config
from worker_drainer.adapters.journal_model import AUDIT_RETENTION_SECONDS, AuditKey, TagWrite
from worker_drainer.adapters.ledger import DynamoLedger, Lease
from worker_drainer.adapters.worker_probe import HttpWorkerProbe

NOW = datetime(2026, 12, 2, 14, 0, tzinfo=UTC)
PREFIX = "arn:aws:ecs:eu-west-1:123456789012:task/agents/"
ARN = f"{PREFIX}t0"


# --- ECS: each request's parameters and what is read from each answer ------------------------------


@pytest.fixture(scope="module")
def ecs_client() -> Any:
    # One client for the module: building one costs seconds on a loaded machine; each test stubs it anew.
    return boto3.client("ecs", region_name="eu-west-1", aws_access_key_id="a", aws_secret_access_key="s")


@pytest.fixture
def ecs(ecs_client: Any) -> Iterator[tuple[BotoEcsTasks, Stubber]]:
    with Stubber(ecs_client) as stub:
        yield BotoEcsTasks("agents", "agent-svc", client=ecs_client), stub
        stub.assert_no_pending_responses()


def raw_task(task_id: str, status: str = "RUNNING", group: str = "service:agent-svc") -> dict[str, Any]:
    return {
        "taskArn": f"{PREFIX}{task_id}",
        "lastStatus": status,
        "desiredStatus": status,
        "group": group,
        "tags": [{"key": "livekit-drainer:state", "value": "draining"}],
    }


def test_running_tasks_are_listed_page_by_page_and_described_a_hundred_at_a_time(
    ecs: tuple[BotoEcsTasks, Stubber],
) -> None:
    tasks, stub = ecs
    arns = [f"{PREFIX}t{n}" for n in range(DESCRIBE_BATCH + 1)]
    listing = {"cluster": "agents", "serviceName": "agent-svc", "desiredStatus": "RUNNING"}
    stub.add_response("list_tasks", {"taskArns": arns[:60], "nextToken": "page-2"}, listing)
    stub.add_response("list_tasks", {"taskArns": arns[60:]}, listing | {"nextToken": "page-2"})
    first = [raw_task("t0"), raw_task("t1", status="STOPPED"), raw_task("t2", group="service:other")]
    stub.add_response(
        "describe_tasks", {"tasks": first}, {"cluster": "agents", "tasks": arns[:100], "include": ["TAGS"]}
    )
    stub.add_response(
        "describe_tasks",
        {"tasks": [raw_task("t100")]},
        {"cluster": "agents", "tasks": arns[100:], "include": ["TAGS"]},
    )
    running = tasks.running_tasks()
    assert [t.task_id for t in running] == ["t0", "t100"]
    assert running[0].tags == {"livekit-drainer:state": "draining"}
    assert tasks.calls == 4


def test_a_task_described_alone_is_none_once_ecs_no_longer_knows_it(
    ecs: tuple[BotoEcsTasks, Stubber],
) -> None:
    tasks, stub = ecs
    params = {"cluster": "agents", "tasks": [ARN], "include": ["TAGS"]}
    stub.add_response("describe_tasks", {"tasks": [raw_task("t0")]}, params)
    stub.add_response(
        "describe_tasks", {"tasks": [], "failures": [{"arn": ARN, "reason": "MISSING"}]}, params
    )
    assert tasks.describe_task(ARN) == EcsTask(
        ARN, "RUNNING", "RUNNING", "service:agent-svc", {"livekit-drainer:state": "draining"}
    )
    assert tasks.describe_task(ARN) is None


def test_tags_are_written_and_removed_by_key(ecs: tuple[BotoEcsTasks, Stubber]) -> None:
    tasks, stub = ecs
    written = [
        {"key": "livekit-drainer:state", "value": "draining"},
        {"key": "livekit-drainer:cause", "value": "vad"},
    ]
    stub.add_response("tag_resource", {}, {"resourceArn": ARN, "tags": written})
    stub.add_response(
        "untag_resource",
        {},
        {"resourceArn": ARN, "tagKeys": ["livekit-drainer:state", "livekit-drainer:cause"]},
    )
    tasks.tag_task(ARN, {"livekit-drainer:state": "draining", "livekit-drainer:cause": "vad"})
    tasks.untag_task(ARN, ("livekit-drainer:state", "livekit-drainer:cause"))
    assert tasks.calls == 2


def test_protection_is_read_with_its_expiry_and_off_when_no_task_shows_it(
    ecs: tuple[BotoEcsTasks, Stubber],
) -> None:
    tasks, stub = ecs
    params = {"cluster": "agents", "tasks": [ARN]}
    until = NOW + timedelta(hours=2)
    stub.add_response(
        "get_task_protection",
        {
            "protectedTasks": [
                {"taskArn": ARN, "protectionEnabled": False},
                {"taskArn": ARN, "protectionEnabled": True, "expirationDate": until},
            ]
        },
        params,
    )
    stub.add_response(
        "get_task_protection", {"protectedTasks": [{"taskArn": ARN, "protectionEnabled": False}]}, params
    )
    stub.add_response("get_task_protection", {"protectedTasks": [{"taskArn": ARN}]}, params)
    stub.add_response("get_task_protection", {}, params)
    assert tasks.protection(ARN) == TaskProtection(True, until)
    assert tasks.protection(ARN) == TaskProtection(False)
    assert tasks.protection(ARN) == TaskProtection(False)  # an answer without the flag: off
    assert tasks.protection(ARN) == TaskProtection(False)


@pytest.mark.parametrize(
    ("reason", "detail", "error", "message"),
    [
        ("MISSING", None, TaskGoneError, "ECS GetTaskProtection failed for t0: MISSING"),
        (
            "TASK_NOT_VALID",
            "not in a service",
            TaskGoneError,
            "ECS GetTaskProtection failed for t0: TASK_NOT_VALID not in a service",
        ),
        ("ACCESS_DENIED", "no", AwsApiError, "ECS GetTaskProtection failed for t0: ACCESS_DENIED no"),
        (None, None, AwsApiError, "ECS GetTaskProtection failed for t0: UNKNOWN"),
    ],
)
def test_a_protection_failure_names_the_task_and_a_gone_task_is_its_own_error(
    ecs: tuple[BotoEcsTasks, Stubber],
    reason: str | None,
    detail: str | None,
    error: type[AwsApiError],
    message: str,
) -> None:
    tasks, stub = ecs
    failure: dict[str, str] = {"arn": ARN}
    if reason is not None:
        failure["reason"] = reason
    if detail is not None:
        failure["detail"] = detail
    stub.add_response("get_task_protection", {"failures": [failure]}, {"cluster": "agents", "tasks": [ARN]})
    with pytest.raises(AwsApiError) as raised:
        tasks.protection(ARN)
    assert type(raised.value) is error
    assert (raised.value.message, raised.value.aws_code, raised.value.resource) == (
        message,
        reason or "UNKNOWN",
        ARN,
    )


def test_protection_is_set_with_an_expiry_only_when_enabling_with_one(
    ecs: tuple[BotoEcsTasks, Stubber],
) -> None:
    tasks, stub = ecs
    base = {"cluster": "agents", "tasks": [ARN]}
    stub.add_response(
        "update_task_protection", {}, base | {"protectionEnabled": True, "expiresInMinutes": 90}
    )
    stub.add_response("update_task_protection", {}, base | {"protectionEnabled": True})
    stub.add_response("update_task_protection", {}, base | {"protectionEnabled": False})
    stub.add_response(
        "update_task_protection",
        {"failures": [{"arn": ARN, "reason": "MISSING"}]},
        base | {"protectionEnabled": False},
    )
    tasks.set_protection(ARN, True, 90)
    tasks.set_protection(ARN, True)
    tasks.set_protection(ARN, False, 90)
    with pytest.raises(TaskGoneError, match="ECS UpdateTaskProtection failed for t0: MISSING"):
        tasks.set_protection(ARN, False)


def test_a_stop_and_a_desired_count_name_the_cluster_and_service(ecs: tuple[BotoEcsTasks, Stubber]) -> None:
    tasks, stub = ecs
    stub.add_response(
        "stop_task", {}, {"cluster": "agents", "task": ARN, "reason": "livekit-drainer: drained"}
    )
    stub.add_response("update_service", {}, {"cluster": "agents", "service": "agent-svc", "desiredCount": 6})
    tasks.stop_task(ARN, "livekit-drainer: drained")
    tasks.set_desired_count(6)
    assert tasks.calls == 2


def service(status: str = "ACTIVE", **fields: Any) -> dict[str, Any]:
    return {"serviceName": "agent-svc", "status": status, "desiredCount": 5, **fields}


def test_the_capacity_and_the_managed_tags_are_read_from_the_active_service(
    ecs: tuple[BotoEcsTasks, Stubber],
) -> None:
    tasks, stub = ecs
    params = {"cluster": "agents", "services": ["agent-svc"]}
    stub.add_response(
        "describe_services",
        {"services": [service("DRAINING", desiredCount=9), service(runningCount=4)]},
        params,
    )
    stub.add_response("describe_services", {"services": [service()]}, params)
    stub.add_response("describe_services", {"services": [service()]}, params)
    stub.add_response("describe_services", {"services": [service(enableECSManagedTags=True)]}, params)
    stub.add_response("describe_services", {"services": [service("INACTIVE")]}, params)
    assert tasks.capacity() == ServiceCapacity(5, 4)
    assert tasks.capacity() == ServiceCapacity(5, 0)  # no running count in the answer: none running
    assert tasks.ecs_managed_tags() is False  # left out: ECS's default, off
    assert tasks.ecs_managed_tags() is True
    with pytest.raises(AwsApiError) as missing:
        tasks.capacity()
    assert (missing.value.message, missing.value.aws_code, missing.value.resource) == (
        "ECS service agent-svc not found or not active in cluster agents",
        "ServiceNotFoundException",
        "agent-svc",
    )


def test_a_refused_ecs_call_is_a_typed_error_naming_its_operation_and_resource(
    ecs: tuple[BotoEcsTasks, Stubber],
) -> None:
    tasks, stub = ecs
    stub.add_client_error("stop_task", "AccessDeniedException", "not allowed", http_status_code=400)
    with pytest.raises(AwsApiError) as refused:
        tasks.stop_task(ARN, "why")
    assert (refused.value.message, refused.value.resource, refused.value.unknown) == (
        "ECS StopTask failed: AccessDeniedException: not allowed",
        ARN,
        False,
    )
    assert tasks.calls == 1


# --- The ledger on DynamoDB (moto): each condition at its edge ----------------------------------


@pytest.fixture(scope="module")
def dynamodb() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("dynamodb", region_name="eu-west-1")


@pytest.fixture
def ledger(dynamodb: Any, request: pytest.FixtureRequest) -> tuple[DynamoLedger, Any]:
    """A table of its own for each test, in the module's one moto DynamoDB."""
    table = f"ledger-{request.node.name[:180]}"
    dynamodb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    return DynamoLedger(table, "agent-svc", client=dynamodb), dynamodb


def test_a_lease_is_refused_while_another_holds_it_until_the_second_after_it_expires(
    ledger: tuple[DynamoLedger, Any],
) -> None:
    store, _ = ledger
    lease = store.acquire("service#agent-svc", "run-1", NOW, 60)
    assert (lease.key, lease.holder, lease.expires_at) == (
        "service#agent-svc",
        "run-1",
        int(NOW.timestamp()) + 60,
    )
    assert store.acquire("service#agent-svc", "run-1", NOW, 60) == lease  # its own holder takes it again
    expiry = NOW + timedelta(seconds=60)
    with pytest.raises(
        ConcurrentActionError, match="service#agent-svc is being handled by another invocation"
    ):
        store.acquire("service#agent-svc", "run-2", expiry, 60)
    assert store.acquire("service#agent-svc", "run-2", expiry + timedelta(seconds=1), 60).holder == "run-2"


def test_a_lease_is_released_only_by_its_holder(ledger: tuple[DynamoLedger, Any]) -> None:
    store, _ = ledger
    mine = store.acquire("service#agent-svc", "run-1", NOW, 60)
    theirs = store.acquire("service#agent-svc", "run-2", NOW + timedelta(minutes=2), 60)
    store.release(mine)  # expired and taken by another since: theirs stays
    with pytest.raises(ConcurrentActionError):
        store.acquire("service#agent-svc", "run-3", NOW + timedelta(minutes=2), 60)
    store.release(theirs)
    assert store.acquire("service#agent-svc", "run-3", NOW + timedelta(minutes=2), 60).holder == "run-3"


def test_capacity_debts_are_written_only_from_the_phase_expected(ledger: tuple[DynamoLedger, Any]) -> None:
    store, _ = ledger
    raising = CapacityDebt("t0", ARN, 100, Phase.RAISING, 4, 5)
    store.put_capacity_debt(raising, expected=None)
    with pytest.raises(ConcurrentActionError, match="capacity debt of t0 is not absent"):
        store.put_capacity_debt(raising, expected=None)
    with pytest.raises(ConcurrentActionError, match="capacity debt of t0 is not raised"):
        store.put_capacity_debt(raising.moved(Phase.LOWERING, 5, 4), expected=Phase.RAISED)
    store.put_capacity_debt(raising.moved(Phase.RAISED), expected=Phase.RAISING)
    store.put_capacity_debt(CapacityDebt("t1", f"{PREFIX}t1", 200), expected=None)
    assert store.capacity_debt("t0") == CapacityDebt("t0", ARN, 100, Phase.RAISED)
    assert sorted(d.task_id for d in store.capacity_debts()) == ["t0", "t1"]
    assert store.capacity_debt("t9") is None
    with pytest.raises(ConcurrentActionError, match="capacity debt of t0 is not lowering"):
        store.forget_capacity_debt("t0", expected=Phase.LOWERING)
    store.forget_capacity_debt("t0", expected=Phase.RAISED)
    assert [d.task_id for d in store.capacity_debts()] == ["t1"]


def test_every_page_of_capacity_debts_is_read(ledger: tuple[DynamoLedger, Any]) -> None:
    store, client = ledger
    pages = [
        {
            "Items": [{"sk": {"S": "t0"}, "task_arn": {"S": ARN}, "raised_at": {"N": "1"}}],
            "LastEvaluatedKey": {"pk": {"S": "x"}, "sk": {"S": "t0"}},
        },
        {"Items": [{"sk": {"S": "t1"}, "task_arn": {"S": ARN}, "raised_at": {"N": "2"}}]},
    ]
    with Stubber(client) as stub:
        base = {
            "TableName": store.table_name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": "capacity#agent-svc"}},
            "ConsistentRead": True,
        }
        stub.add_response("query", pages[0], base)
        stub.add_response(
            "query", pages[1], base | {"ExclusiveStartKey": {"pk": {"S": "x"}, "sk": {"S": "t0"}}}
        )
        assert [(d.task_id, d.raised_at) for d in store.capacity_debts()] == [("t0", 1), ("t1", 2)]


def test_an_audit_entry_is_kept_ninety_days_under_its_task(ledger: tuple[DynamoLedger, Any]) -> None:
    store, client = ledger
    key = AuditKey("run-1", NOW, 3)
    store.audit("t0", key, {"action": "cordon", "outcome": "intended"})
    item = client.get_item(
        TableName=store.table_name, Key={"pk": {"S": "task#t0"}, "sk": {"S": key.sort_key}}
    )["Item"]
    assert item == {
        "pk": {"S": "task#t0"},
        "sk": {"S": key.sort_key},
        "action": {"S": "cordon"},
        "outcome": {"S": "intended"},
        "expires_at": {"N": str(int(NOW.timestamp()) + AUDIT_RETENTION_SECONDS)},
    }


def test_a_notice_is_first_once_per_key_until_the_second_after_it_expires(
    ledger: tuple[DynamoLedger, Any],
) -> None:
    store, _ = ledger
    assert store.first_notice("guardrail#t0", NOW, 600)
    assert store.first_notice("guardrail#t1", NOW, 600)  # another key is told too
    assert not store.first_notice("guardrail#t0", NOW + timedelta(seconds=600), 600)
    assert store.first_notice("guardrail#t0", NOW + timedelta(seconds=601), 600)


def test_a_ledger_call_that_fails_is_a_typed_error(ledger: tuple[DynamoLedger, Any]) -> None:
    store, client = ledger
    with Stubber(client) as stub:
        stub.add_client_error("put_item", "InternalServerError", "boom", http_status_code=500)
        with pytest.raises(AwsApiError) as failed:
            store.audit("t0", AuditKey("run-1", NOW, 0), {"outcome": "intended"})
        stub.add_client_error("put_item", "ConditionalCheckFailedException", "no", http_status_code=400)
        with pytest.raises(AwsApiError) as unconditional:
            store.audit("t0", AuditKey("run-1", NOW, 0), {"outcome": "intended"})
    assert (failed.value.aws_code, failed.value.unknown, failed.value.resource) == (
        "InternalServerError",
        True,
        "t0",
    )
    assert failed.value.message == "DynamoDB ledger call failed: InternalServerError: boom"
    assert unconditional.value.aws_code == "ConditionalCheckFailedException"  # not a lost race there
    assert store.calls == 2


# --- A capacity debt's item ---------------------------------------------------------------------


def test_a_debt_round_trips_through_its_item_with_its_counts_only_when_known() -> None:
    moving = CapacityDebt("t0", ARN, 1700000000, Phase.LOWERING, 5, 4)
    assert debt_attributes(moving) == {
        "task_arn": {"S": ARN},
        "raised_at": {"N": "1700000000"},
        "phase": {"S": "lowering"},
        "before": {"N": "5"},
        "after": {"N": "4"},
    }
    assert debt_from({"sk": {"S": "t0"}} | debt_attributes(moving)) == moving
    raised = CapacityDebt("t0", ARN, 1700000000)
    assert set(debt_attributes(raised)) == {"task_arn", "raised_at", "phase"}
    zero = CapacityDebt("t0", ARN, 0, Phase.LOWERING, 1, 0)
    assert debt_from({"sk": {"S": "t0"}} | debt_attributes(zero)) == zero


def test_a_debt_written_before_phases_existed_reads_as_raised() -> None:
    item = {"sk": {"S": "t0"}, "task_arn": {"S": ARN}, "raised_at": {"N": "12"}}
    assert debt_from(item) == CapacityDebt("t0", ARN, 12, Phase.RAISED, None, None)


def test_a_debt_moved_to_another_phase_keeps_its_task_and_takes_the_new_counts() -> None:
    debt = CapacityDebt("t0", ARN, 12, Phase.RAISING, 4, 5)
    assert debt.moved(Phase.LOWERING, 5, 4) == CapacityDebt("t0", ARN, 12, Phase.LOWERING, 5, 4)
    assert debt.moved(Phase.RAISED) == CapacityDebt("t0", ARN, 12, Phase.RAISED, None, None)


# --- The worker's /worker endpoint ----------------------------------------------------------------


def probe_answering(tmp_path: Path, body: str) -> tuple[HttpWorkerProbe, EcsTask]:
    (tmp_path / "worker").write_text(body)
    task = EcsTask(ARN, "RUNNING", "RUNNING", "service:agent-svc")
    return HttpWorkerProbe(8081, 1.0, endpoint_for=lambda _: f"{tmp_path.as_uri()}/"), task


@pytest.mark.parametrize(
    ("body", "jobs"),
    [
        ('{"active_jobs": 2, "worker_load": 0.5}', 2),
        ('{"active_jobs": 1.0}', 1),
        ('{"active_jobs": "3"}', 3),
        ('{"worker_load": 0.0}', 0),  # proto3 JSON leaves a zero out
        ('{"active_jobs": null}', None),
        ('{"active_jobs": "many"}', None),
        ("[1, 2]", None),
        ("not json", None),
    ],
)
def test_the_worker_endpoint_answers_its_active_jobs_or_unknown(
    tmp_path: Path, body: str, jobs: int | None
) -> None:
    probe, task = probe_answering(tmp_path, body)
    assert probe.active_jobs(task) == jobs
    assert probe.calls == 1


def test_a_worker_without_an_address_or_out_of_reach_is_unknown() -> None:
    probe = HttpWorkerProbe(1, 0.5)
    assert probe.active_jobs(EcsTask(ARN, "RUNNING", "RUNNING", "g")) is None
    assert probe.calls == 0  # no address: nothing asked
    reachable = EcsTask(ARN, "RUNNING", "RUNNING", "g", private_ip="127.0.0.1")
    assert probe.active_jobs(reachable) is None  # port 1: refused
    assert probe.calls == 1


def test_the_worker_endpoint_is_asked_on_the_tasks_private_address_and_port() -> None:
    probe = HttpWorkerProbe(8081, 1.0)
    task = EcsTask(ARN, "RUNNING", "RUNNING", "g", private_ip="10.0.0.7")
    assert probe._endpoint_for(task) == "http://10.0.0.7:8081"


ECS_CALLS = {
    "ListTasks": ("list_tasks", "agent-svc", lambda t: t.running_tasks()),
    "DescribeTasks": ("describe_tasks", ARN, lambda t: t.describe_task(ARN)),
    "TagResource": ("tag_resource", ARN, lambda t: t.tag_task(ARN, {"k": "v"})),
    "UntagResource": ("untag_resource", ARN, lambda t: t.untag_task(ARN, ["k"])),
    "GetTaskProtection": ("get_task_protection", ARN, lambda t: t.protection(ARN)),
    "UpdateTaskProtection": ("update_task_protection", ARN, lambda t: t.set_protection(ARN, False)),
    "StopTask": ("stop_task", ARN, lambda t: t.stop_task(ARN, "why")),
    "DescribeServices": ("describe_services", "agent-svc", lambda t: t.capacity()),
    "UpdateService": ("update_service", "agent-svc", lambda t: t.set_desired_count(3)),
}


@pytest.mark.parametrize("operation", list(ECS_CALLS))
def test_each_ecs_call_that_fails_names_its_operation_and_resource(
    ecs: tuple[BotoEcsTasks, Stubber], operation: str
) -> None:
    tasks, stub = ecs
    method, resource, call = ECS_CALLS[operation]
    stub.add_client_error(method, "ServerException", "boom", http_status_code=500)
    with pytest.raises(AwsApiError) as failed:
        call(tasks)
    assert (failed.value.message, failed.value.resource, failed.value.unknown) == (
        f"ECS {operation} failed: ServerException: boom",
        resource,
        True,
    )


def test_a_rolling_deployment_of_the_service_is_read_from_its_deployments(
    ecs: tuple[BotoEcsTasks, Stubber],
) -> None:
    tasks, stub = ecs
    params = {"cluster": "agents", "services": ["agent-svc"]}
    rolling = [{"id": "ecs-svc/2", "status": "PRIMARY"}, {"id": "ecs-svc/1", "status": "ACTIVE"}]
    stub.add_response("describe_services", {"services": [service(deployments=rolling)]}, params)
    stub.add_response("describe_services", {"services": [service(deployments=rolling[:1])]}, params)
    assert tasks.deployment_in_progress() == "a deployment of agent-svc is in progress (ecs-svc/2)"
    assert tasks.deployment_in_progress() is None


def test_the_ecs_client_gives_up_within_its_request_timeout_with_adaptive_retries() -> None:
    config = ecs_client_config(4.0)
    assert (config.connect_timeout, config.read_timeout) == (1.0, 4.0)
    assert config.retries == {"mode": "adaptive", "total_max_attempts": 3}


def test_an_intent_is_open_until_closed_once_and_its_outcome_read_from_the_audit(
    ledger: tuple[DynamoLedger, Any],
) -> None:
    store, _ = ledger
    key = AuditKey("run-1", NOW, 0)
    entry = {"action": "cordon", "task_arn": ARN, "outcome": "intended"}
    store.open_intent("t0", key, entry)
    (found,) = store.open_intents()
    assert (found.task_id, found.key, found.action, found.task_arn) == ("t0", key, "cordon", ARN)
    assert store.recorded_outcome(found) is None  # no audit item yet
    store.audit("t0", key, entry | {"outcome": "done"})
    assert store.recorded_outcome(found) == "done"
    assert store.close_intent("t0", key) is True
    assert store.close_intent("t0", key) is False  # another run closed it first
    assert store.open_intents() == []


def test_a_group_event_holds_until_it_expires_and_tag_writes_are_read_since_a_moment(
    ledger: tuple[DynamoLedger, Any],
) -> None:
    store, _ = ledger
    store.hold_group_event("3 tasks of one revision failing", NOW, 600)
    assert store.group_event(NOW + timedelta(seconds=599)) == "3 tasks of one revision failing"
    assert store.group_event(NOW + timedelta(seconds=601)) is None
    early = TagWrite("t0", NOW, {"livekit-drainer:state": "draining"})
    late = TagWrite("t1", NOW + timedelta(seconds=10), {}, ("livekit-drainer:state",))
    store.record_tag_write(AuditKey("run-1", NOW, 0), early)
    store.record_tag_write(AuditKey("run-1", NOW + timedelta(seconds=10), 1), late)
    assert [w.task_id for w in store.tag_writes_since(NOW + timedelta(seconds=5))] == ["t1"]
    assert [w.task_id for w in store.tag_writes_since(NOW)] == ["t0", "t1"]


def test_ecs_answers_without_their_lists_are_empty(ecs: tuple[BotoEcsTasks, Stubber]) -> None:
    tasks, stub = ecs
    stub.add_response(
        "list_tasks", {}, {"cluster": "agents", "serviceName": "agent-svc", "desiredStatus": "RUNNING"}
    )
    stub.add_response("describe_tasks", {}, {"cluster": "agents", "tasks": [ARN], "include": ["TAGS"]})
    stub.add_response("describe_services", {}, {"cluster": "agents", "services": ["agent-svc"]})
    assert tasks.running_tasks() == []
    assert tasks.describe_task(ARN) is None
    with pytest.raises(AwsApiError, match="not found or not active"):
        tasks.capacity()


def test_a_failed_describe_of_several_tasks_names_the_service(ecs: tuple[BotoEcsTasks, Stubber]) -> None:
    tasks, stub = ecs
    stub.add_response("list_tasks", {"taskArns": [ARN, f"{PREFIX}t1"]})
    stub.add_client_error("describe_tasks", "ServerException", "boom", http_status_code=500)
    with pytest.raises(AwsApiError) as failed:
        tasks.running_tasks()
    assert (failed.value.message, failed.value.resource) == (
        "ECS DescribeTasks failed: ServerException: boom",
        "agent-svc",
    )


def test_a_notice_marker_is_kept_under_its_key_and_a_failed_one_names_it(
    ledger: tuple[DynamoLedger, Any],
) -> None:
    store, client = ledger
    store.first_notice("guardrail#t0", NOW, 600)
    item = client.get_item(
        TableName=store.table_name, Key={"pk": {"S": "notice#guardrail#t0"}, "sk": {"S": "notice"}}
    )
    assert item["Item"]["expires_at"] == {"N": str(int(NOW.timestamp()) + 600)}
    with Stubber(client) as stub:
        stub.add_client_error("put_item", "InternalServerError", "boom", http_status_code=500)
        with pytest.raises(AwsApiError) as failed:
            store.first_notice("guardrail#t1", NOW, 600)
    assert failed.value.resource == "guardrail#t1"


class WorkerEndpoint(BaseHTTPRequestHandler):
    """``GET /worker`` answers the body the test set; any other path is not found."""

    body = b'{"active_jobs": 2}'

    def do_GET(self) -> None:
        found = self.requestline.split()[1] == "/worker"  # as sent: http.server folds a leading "//"
        self.send_response(200 if found else 404)
        self.end_headers()
        self.wfile.write(self.body if found else b"")

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture(scope="module")
def worker_endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), WorkerEndpoint)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_the_worker_endpoint_is_asked_at_slash_worker_each_time(worker_endpoint: str) -> None:
    probe = HttpWorkerProbe(8081, 2.0, endpoint_for=lambda _: f"{worker_endpoint}/")
    task = EcsTask(ARN, "RUNNING", "RUNNING", "g")
    assert [probe.active_jobs(task), probe.active_jobs(task)] == [2, 2]
    assert probe.calls == 2


def test_a_worker_that_never_answers_is_unknown_within_the_probes_timeout() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # connections are taken, never answered
        probe = HttpWorkerProbe(silent.getsockname()[1], 0.2)
        started = time.monotonic()
        assert probe.active_jobs(EcsTask(ARN, "RUNNING", "RUNNING", "g", private_ip="127.0.0.1")) is None
        assert time.monotonic() - started < 5


# --- The production clients (none injected) against a peer that answers 5xx or throttles ----------


class RefusingPeer(BaseHTTPRequestHandler):
    """An AWS JSON endpoint that answers every request with ``answer`` and counts them by target."""

    answer: tuple[int, str] = (500, "InternalServerError")
    targets: list[str] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).targets.append(str(self.headers.get("X-Amz-Target", "")).rsplit(".", 1)[-1])
        status, code = type(self).answer
        body = json.dumps({"__type": code, "message": "the peer refuses"}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def refusing_peer(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[RefusingPeer]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), RefusingPeer)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    RefusingPeer.targets, RefusingPeer.answer = [], (500, "InternalServerError")
    for name, value in {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{server.server_address[1]}",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "a",
        "AWS_SECRET_ACCESS_KEY": "s",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_MAX_ATTEMPTS", raising=False)
    yield RefusingPeer
    server.shutdown()


def test_the_production_ledger_sends_each_write_once_and_each_read_within_its_budget(
    refusing_peer: type[RefusingPeer],
) -> None:
    store = DynamoLedger("ledger", "agent-svc")
    calls = [
        lambda: store.audit("t0", AuditKey("run-1", NOW, 0), {"outcome": "intended"}),
        lambda: store.capacity_debts(),
        lambda: store.tag_writes_since(NOW),
        lambda: store.group_event(NOW),
        lambda: store.tick_memory.earlier(NOW),
        lambda: store.first_notice("guardrail#t0", NOW, 600),
    ]
    for call in calls:
        with pytest.raises(AwsApiError):
            call()
    # A write that may have landed is never sent again; the debts' read has two attempts, the
    # tag writes' read and the group records one each (contract/budgets.py).
    assert refusing_peer.targets == ["PutItem", "Query", "Query", "Query", "Query", "Query", "PutItem"]


def test_the_production_notice_marker_is_one_attempt_even_when_throttled(
    refusing_peer: type[RefusingPeer],
) -> None:
    refusing_peer.answer = (400, "ThrottlingException")
    with pytest.raises(AwsApiError):
        DynamoLedger("ledger", "agent-svc").first_notice("guardrail#t0", NOW, 600)
    assert refusing_peer.targets == ["PutItem"]


def test_the_production_ecs_client_sends_a_stop_once_within_its_request_timeout(
    refusing_peer: type[RefusingPeer],
) -> None:
    tasks = BotoEcsTasks("agents", "agent-svc")
    with pytest.raises(AwsApiError):
        tasks.stop_task(ARN, "why")
    assert refusing_peer.targets == ["StopTask"]
    config = tasks._client.meta.config
    assert (config.connect_timeout, config.read_timeout) == (1.0, 5.0)
    assert (
        BotoEcsTasks("agents", "agent-svc", request_timeout_seconds=2.0)._client.meta.config.read_timeout
        == 2.0
    )


def test_two_services_on_one_table_keep_their_records_apart(ledger: tuple[DynamoLedger, Any]) -> None:
    ours, client = ledger
    theirs = DynamoLedger(ours.table_name, "other-svc", client=client)
    key = AuditKey("run-1", NOW, 0)
    ours.open_intent("t0", key, {"action": "cordon", "task_arn": ARN, "outcome": "intended"})
    ours.hold_group_event("a revision failing", NOW, 600)
    ours.tick_memory.remember(["agent/agent/t0"], NOW, 150)
    ours.record_tag_write(key, TagWrite("t0", NOW, {"livekit-drainer:state": "draining"}))
    assert (theirs.open_intents(), theirs.group_event(NOW), theirs.tick_memory.earlier(NOW)) == ([], None, [])
    assert theirs.tag_writes_since(NOW) == []
    assert [i.task_id for i in ours.open_intents()] == ["t0"]
    assert ours.tick_memory.earlier(NOW) == ["agent/agent/t0"]
    assert [w.task_id for w in ours.tag_writes_since(NOW)] == ["t0"]


def test_an_injected_client_serves_every_read_of_the_ledger(ledger: tuple[DynamoLedger, Any]) -> None:
    store, client = ledger
    held = {
        "Items": [
            {
                "pk": {"S": "group-event#agent-svc"},
                "sk": {"S": "group-event"},
                "description": {"S": "stubbed"},
                "expires_at": {"N": str(int(NOW.timestamp()) + 60)},
            }
        ]
    }
    with Stubber(client) as stub:
        stub.add_response("query", held)
        stub.add_response("query", {})
        assert store.group_event(NOW) == "stubbed"
        assert store.tag_writes_since(NOW) == []
        stub.assert_no_pending_responses()


def test_each_failed_ledger_call_names_what_it_was_for(ledger: tuple[DynamoLedger, Any]) -> None:
    store, client = ledger
    lease = store.acquire("service#agent-svc", "run-1", NOW, 60)
    calls = [
        ("put_item", lambda: store.put_capacity_debt(CapacityDebt("t0", ARN, 1), expected=None), "t0"),
        ("delete_item", lambda: store.forget_capacity_debt("t0", expected=Phase.RAISED), "t0"),
        ("put_item", lambda: store.acquire("service#agent-svc", "run-2", NOW, 60), "service#agent-svc"),
        ("delete_item", lambda: store.release(lease), "service#agent-svc"),
        ("delete_item", lambda: store.close_intent("t0", AuditKey("run-1", NOW, 0)), "t0"),
        ("query", lambda: store.capacity_debts(), "agent-svc"),
    ]
    with Stubber(client) as stub:
        for method, call, resource in calls:
            stub.add_client_error(method, "InternalServerError", "boom", http_status_code=500)
            with pytest.raises(AwsApiError) as failed:
                call()
            assert failed.value.resource == resource, method


def test_a_lost_race_names_the_record_it_lost(ledger: tuple[DynamoLedger, Any]) -> None:
    store, _ = ledger
    store.acquire("service#agent-svc", "run-1", NOW, 60)
    with pytest.raises(ConcurrentActionError) as taken:
        store.acquire("service#agent-svc", "run-2", NOW, 60)
    store.put_capacity_debt(CapacityDebt("t0", ARN, 1), expected=None)
    with pytest.raises(ConcurrentActionError) as raced:
        store.put_capacity_debt(CapacityDebt("t0", ARN, 1), expected=None)
    with pytest.raises(ConcurrentActionError) as moved:
        store.forget_capacity_debt("t0", expected=Phase.LOWERING)
    assert (taken.value.resource, raced.value.resource, moved.value.resource) == (
        "service#agent-svc",
        "t0",
        "t0",
    )


def test_a_debt_query_answered_without_items_is_no_debt(ledger: tuple[DynamoLedger, Any]) -> None:
    store, client = ledger
    with Stubber(client) as stub:
        stub.add_response("query", {})
        assert store.capacity_debts() == []


def test_every_ledger_write_of_the_production_client_is_sent_once_to_a_peer_answering_5xx(
    refusing_peer: type[RefusingPeer],
) -> None:
    store = DynamoLedger("ledger", "agent-svc")
    key = AuditKey("run-1", NOW, 0)
    writes = {
        "PutItem": [
            lambda: store.acquire("service#agent-svc", "run-1", NOW, 60),
            lambda: store.put_capacity_debt(CapacityDebt("t0", ARN, 1), expected=None),
            lambda: store.audit("t0", key, {"outcome": "intended"}),
            lambda: store.first_notice("guardrail#t0", NOW, 600),
            lambda: store.open_intent("t0", key, {"action": "cordon", "outcome": "intended"}),
            lambda: store.record_tag_write(key, TagWrite("t0", NOW, {"livekit-drainer:state": "draining"})),
            lambda: store.hold_group_event("a revision failing", NOW, 600),
            lambda: store.tick_memory.remember(["agent/agent/t0"], NOW, 150),
        ],
        "DeleteItem": [
            lambda: store.release(Lease("service#agent-svc", "run-1", 0)),
            lambda: store.forget_capacity_debt("t0", expected=Phase.RAISED),
            lambda: store.close_intent("t0", key),
        ],
    }
    for target, calls in writes.items():
        for write in calls:
            refusing_peer.targets.clear()
            with pytest.raises(AwsApiError):
                write()
            assert refusing_peer.targets == [target]


def test_every_ecs_change_of_the_production_client_is_sent_once_to_a_peer_answering_5xx(
    refusing_peer: type[RefusingPeer],
) -> None:
    tasks = BotoEcsTasks("agents", "agent-svc")
    changes = {
        "TagResource": lambda: tasks.tag_task(ARN, {"livekit-drainer:state": "draining"}),
        "UntagResource": lambda: tasks.untag_task(ARN, ["livekit-drainer:state"]),
        "UpdateTaskProtection": lambda: tasks.set_protection(ARN, False),
        "StopTask": lambda: tasks.stop_task(ARN, "why"),
        "UpdateService": lambda: tasks.set_desired_count(4),
    }
    for target, change in changes.items():
        refusing_peer.targets.clear()
        with pytest.raises(AwsApiError):
            change()
        assert refusing_peer.targets == [target]
