"""The drainer's memory of the tasks failing at its previous tick, on a DynamoDB table (moto)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import boto3
import pytest
from moto import mock_aws

from worker_drainer.adapters.group_event_records import MAX_REMEMBERED_STREAMS
from worker_drainer.adapters.ledger import DynamoLedger

NOW = datetime(2026, 12, 2, 14, 0, tzinfo=UTC)


@pytest.fixture
def ledger() -> Iterator[DynamoLedger]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-1")
        client.create_table(
            TableName="ledger",
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield DynamoLedger("ledger", "agents", client=client)


def test_the_memory_returns_the_streams_of_the_previous_tick(ledger: DynamoLedger) -> None:
    ledger.tick_memory.remember(["agent/agent/b", "agent/agent/a"], NOW, 150)
    assert ledger.tick_memory.earlier(NOW) == ["agent/agent/a", "agent/agent/b"]


def test_an_expired_memory_is_no_sighting(ledger: DynamoLedger) -> None:
    ledger.tick_memory.remember(["agent/agent/a"], NOW, 150)
    assert ledger.tick_memory.earlier(NOW.replace(minute=3)) == []


def test_a_fleet_wide_failure_is_remembered_in_part_within_the_item_limit(ledger: DynamoLedger) -> None:
    streams = [f"agent/agent/{index:032x}" for index in range(MAX_REMEMBERED_STREAMS + 500)]
    ledger.tick_memory.remember(streams, NOW, 150)
    kept = ledger.tick_memory.earlier(NOW)
    assert kept == sorted(streams)[:MAX_REMEMBERED_STREAMS]
    assert sum(len(stream) + 4 for stream in kept) < 400_000
