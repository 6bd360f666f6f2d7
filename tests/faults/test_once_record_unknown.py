"""A once-only record whose write took effect and then answered 500 never drops the run's action and
never lets it run twice: the record is read again; not complete, so this run does not act, and its
invocation fails after its report (``OnceRecordUnknownError``) so that Lambda's retry — after the
in-progress record, which expires with the invocation that wrote it, has expired — acts once.

DynamoDB is moto (in process); the 500 comes from ``TookEffect`` (``devkit.fakes.aws_faults``), an
explicit fake in front of moto that lets the write land and then answers 500."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from moto import mock_aws

from devkit.fakes.aws_faults import Ambiguous, TookEffect, answered
from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.adapters.idempotency import DynamoDBOnceGuard, RunEveryTime
from fleet_remediation.contract.budgets import IDEMPOTENCY_WRITE
from fleet_remediation.core.errors import ConcurrentActionError, OnceRecordUnknownError
from fleet_remediation.core.invocation import run_reported
from fleet_remediation.core.report import ReportBuilder
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext

TABLE = "once"
KEY = {"alarm": "tts-reach", "transition": "2026-12-02T09:00:00Z", "action": "suspect-event"}


@pytest.fixture
def dynamodb() -> Iterator[Any]:
    with mock_aws():
        boto3.client("dynamodb").create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield aws_client(IDEMPOTENCY_WRITE)


def _guard(client: Any, remaining_ms: int) -> DynamoDBOnceGuard:
    guard = DynamoDBOnceGuard(
        TABLE, persistence=DynamoDBPersistenceLayer(table_name=TABLE, boto3_client=client)
    )
    guard.register_lambda_context(LocalLambdaContext(remaining_ms))  # type: ignore[arg-type]
    return guard


def test_a_record_write_of_unknown_outcome_acts_once_on_the_retry_never_twice(dynamodb: Any) -> None:
    acted: list[str] = []

    def action() -> dict[str, Any]:
        acted.append("put the suspect-worker event")
        return {"event_id": "e-1"}

    fault = TookEffect(dynamodb, "dynamodb.PutItem", Ambiguous.SERVER_ERROR)
    with pytest.raises(OnceRecordUnknownError, match="may have been"):
        _guard(dynamodb, remaining_ms=1500).run_once(KEY, action)
    assert fault.took_effect == 1  # the in-progress record landed
    assert acted == []  # not acted on without its record

    # Another delivery while the first invocation could still be running: it does nothing.
    with pytest.raises(ConcurrentActionError):
        _guard(aws_client(IDEMPOTENCY_WRITE), remaining_ms=300).run_once(KEY, action)
    assert acted == []

    time.sleep(1.6)  # the failed invocation's in-progress record has expired: Lambda's retry
    retry = _guard(aws_client(IDEMPOTENCY_WRITE), remaining_ms=60_000)
    assert retry.run_once(KEY, action) == ({"event_id": "e-1"}, False)
    assert retry.run_once(KEY, action) == ({"event_id": "e-1"}, True)
    assert acted == ["put the suspect-worker event"]  # once


def test_the_invocation_fails_after_its_report_so_lambda_retries_it() -> None:
    def body(report: ReportBuilder) -> None:
        raise OnceRecordUnknownError("the once-only record may have been written", resource=TABLE)

    with pytest.raises(OnceRecordUnknownError):
        run_reported("tts_reach_alarm", "request-1", body)

    report = ReportBuilder("zombie_reaper", "request-2")
    report.error(OnceRecordUnknownError("unknown", resource=TABLE))
    assert report.failure_after_report is not None
    assert [e.code for e in report.errors] == ["OnceRecordUnknown"]


def _put_item_answers_500_without_effect(client: Any) -> None:
    def refuse(request: Any, **_: Any) -> Any:
        return answered(request, 500, {"__type": "InternalServerError", "message": "down"})

    client.meta.events.register_first("before-send.dynamodb.PutItem", refuse)


def test_a_record_write_that_fails_after_the_action_completed_before_replays_its_result(
    dynamodb: Any,
) -> None:
    acted: list[str] = []

    def action() -> dict[str, Any]:
        acted.append("acted")
        return {"event_id": f"e-{len(acted)}"}

    assert _guard(dynamodb, remaining_ms=60_000).run_once(KEY, action) == ({"event_id": "e-1"}, False)
    failing = aws_client(IDEMPOTENCY_WRITE)
    _put_item_answers_500_without_effect(failing)
    assert _guard(failing, remaining_ms=60_000).run_once(KEY, action) == ({"event_id": "e-1"}, True)
    assert acted == ["acted"]


def test_a_record_write_that_fails_with_no_record_before_acts_on_nothing(dynamodb: Any) -> None:
    failing = aws_client(IDEMPOTENCY_WRITE)
    _put_item_answers_500_without_effect(failing)
    with pytest.raises(OnceRecordUnknownError):
        _guard(failing, remaining_ms=60_000).run_once(KEY, lambda: {"event_id": "e-1"})


def test_every_time_runs_each_call_and_never_calls_it_a_replay() -> None:
    acted: list[str] = []

    def action() -> dict[str, Any]:
        acted.append("acted")
        return {"n": len(acted)}

    guard = RunEveryTime()
    assert [guard.run_once(KEY, action), guard.run_once(KEY, action)] == [
        ({"n": 1}, False),
        ({"n": 2}, False),
    ]


DESCRIBED = "alarm=tts-reach, transition=2026-12-02T09:00:00Z, action=suspect-event"


def test_another_invocation_holding_the_record_is_a_concurrent_action_naming_the_key_and_table(
    dynamodb: Any,
) -> None:
    TookEffect(dynamodb, "dynamodb.PutItem", Ambiguous.SERVER_ERROR)
    with pytest.raises(OnceRecordUnknownError) as unknown:
        _guard(dynamodb, remaining_ms=60_000).run_once(KEY, lambda: {"event_id": "e-1"})
    assert unknown.value.resource == TABLE
    assert f"the once-only record for {DESCRIBED} could not be written" in unknown.value.message
    with pytest.raises(ConcurrentActionError) as concurrent:
        _guard(aws_client(IDEMPOTENCY_WRITE), remaining_ms=60_000).run_once(KEY, lambda: {"event_id": "e-2"})
    assert (concurrent.value.message, concurrent.value.resource) == (
        f"another invocation is handling {DESCRIBED}",
        TABLE,
    )


def test_an_action_whose_completion_record_is_lost_stands_as_run_once(dynamodb: Any) -> None:
    acted: list[str] = []

    def action() -> dict[str, Any]:
        acted.append("acted")
        return {"event_id": "e-1"}

    failing = aws_client(IDEMPOTENCY_WRITE)

    def refuse(request: Any, **_: Any) -> Any:
        return answered(request, 500, {"__type": "InternalServerError", "message": "down"})

    failing.meta.events.register_first("before-send.dynamodb.UpdateItem", refuse)
    assert _guard(failing, remaining_ms=60_000).run_once(KEY, action) == ({"event_id": "e-1"}, False)
    assert acted == ["acted"]


def test_the_records_are_kept_under_the_functions_own_key_prefix(dynamodb: Any) -> None:
    _guard(dynamodb, remaining_ms=60_000).run_once(KEY, lambda: {"event_id": "e-1"})
    (item,) = boto3.client("dynamodb").scan(TableName=TABLE)["Items"]
    assert item["id"]["S"].startswith("fleet-remediation-once#")


def test_a_record_outlives_every_redelivery_of_its_event_for_a_day(dynamodb: Any) -> None:
    before = time.time()
    _guard(dynamodb, remaining_ms=60_000).run_once(KEY, lambda: {"event_id": "e-1"})
    (item,) = boto3.client("dynamodb").scan(TableName=TABLE)["Items"]
    assert before + 24 * 3600 - 1 <= int(item["expiration"]["N"]) <= time.time() + 24 * 3600 + 1


def test_the_guards_own_client_writes_under_the_once_records_budget(dynamodb: Any) -> None:
    guard = DynamoDBOnceGuard(TABLE)
    config = guard._persistence.client.meta.config
    assert config.retries["total_max_attempts"] == IDEMPOTENCY_WRITE.attempts
    assert config.read_timeout == IDEMPOTENCY_WRITE.read_timeout_seconds
