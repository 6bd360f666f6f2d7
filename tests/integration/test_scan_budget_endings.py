"""Every look's bytes reach the hour's scan tally however the look ends: complete, past its deadline,
ended by Insights (Timeout), a poll refused for good, or a StartQuery whose reply was lost (a query
may be running: the estimate is counted). A StartQuery the service refused scanned nothing.

The tally is a DynamoDB table and the estimate the log group's IncomingBytes (both moto, in
process); Logs Insights is ``FakeInsightsClient`` (a named strict fake: moto has no Insights engine)
timed by the service profile's p99 on a simulated clock, behind the real adapter."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from devkit.fakes.logs_insights import FakeInsightsClient, insights_over
from fleet_remediation.adapters.scan_budget import (
    BudgetedInsights,
    CloudWatchIncomingBytes,
    DynamoDBScanTally,
    LookPolicy,
    ScanBudget,
)
from fleet_remediation.contract.sections import DrainerSection
from fleet_remediation.core.errors import AwsApiError, DeadlineExceededError, RemediationError
from livekit_fleet_remediation.offline.service_profile import SimulatedClock

REGION = "eu-west-1"
GROUP = "/lkfr/agents"
TABLE = "scan-tally"
NOW = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)
HOUR = NOW.strftime("%Y-%m-%dT%H")
WINDOW = (NOW - timedelta(minutes=3), NOW)
ESTIMATE = 0.3e9
DEADLINE = DrainerSection().insights_timeout_seconds


class World:
    def __init__(self, client: FakeInsightsClient) -> None:
        self.client = client
        self.problems: list[RemediationError] = []
        budget = ScanBudget(
            100e9,
            DynamoDBScanTally(TABLE, boto3.client("dynamodb", region_name=REGION)),
            CloudWatchIncomingBytes(boto3.client("cloudwatch", region_name=REGION)),
            clock=lambda: NOW,
        )
        self.insights = BudgetedInsights(insights_over(client), budget)

    def look(self, *, priority: bool = False) -> Any:
        self.insights.policy = LookPolicy(priority=priority, problem=self.problems.append)
        return self.insights.run_query(GROUP, "stats count(*) by @logStream", *WINDOW, DEADLINE)

    def tallied(self) -> float:
        return DynamoDBScanTally(TABLE, boto3.client("dynamodb", region_name=REGION)).spent(HOUR)


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        boto3.client("dynamodb", region_name=REGION).create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "hour", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "hour", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        boto3.client("cloudwatch", region_name=REGION).put_metric_data(
            Namespace="AWS/Logs",
            MetricData=[
                {
                    "MetricName": "IncomingBytes",
                    "Dimensions": [{"Name": "LogGroupName", "Value": GROUP}],
                    "Timestamp": NOW - timedelta(minutes=1),
                    "Value": ESTIMATE,
                    "Unit": "Bytes",
                }
            ],
        )
        yield


def _answered(code: str, status: int, operation: str) -> ClientError:
    response: Any = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(response, operation)


def _world(**options: Any) -> World:
    return World(
        FakeInsightsClient(lambda *_: [{"@logStream": "s", "count": 1}], clock=SimulatedClock(), **options)
    )


@pytest.mark.usefixtures("aws")
def test_a_complete_look_counts_its_bytes_scanned() -> None:
    world = _world(scan_bytes=0.25e9)
    assert world.look().rows == [{"@logStream": "s", "count": "1"}]
    assert world.tallied() == 0.25e9


@pytest.mark.usefixtures("aws")
def test_a_look_past_its_deadline_counts_what_it_scanned_until_its_stop() -> None:
    world = _world(scan_bytes=50e9)  # 500 s of running at p99
    with pytest.raises(DeadlineExceededError):
        world.look()
    (query,) = world.client.queries.values()
    assert query.stopped
    assert 0 < world.tallied() < 50e9
    assert world.tallied() == pytest.approx(world.insights.inner.last_scanned or 0, abs=1)


@pytest.mark.usefixtures("aws")
def test_a_look_insights_timed_out_counts_its_bytes() -> None:
    world = _world(scan_bytes=0.2e9, final_status="Timeout")
    with pytest.raises(AwsApiError, match="ended with status Timeout"):
        world.look()
    assert world.tallied() == 0.2e9


@pytest.mark.usefixtures("aws")
def test_a_look_whose_poll_is_refused_for_good_counts_its_last_statistics() -> None:
    world = _world(scan_bytes=20e9)
    original = world.client.get_query_results
    polls = 0

    def refused_on_the_twelfth(*, queryId: str) -> dict[str, Any]:
        nonlocal polls
        polls += 1
        if polls == 12:
            raise _answered("AccessDeniedException", 400, "GetQueryResults")
        return original(queryId=queryId)

    world.client.get_query_results = refused_on_the_twelfth  # type: ignore[method-assign]
    with pytest.raises(AwsApiError, match="AccessDeniedException"):
        world.look()
    assert world.tallied() > 0
    assert world.tallied() == pytest.approx(world.insights.inner.last_scanned or 0, abs=1)  # whole bytes


@pytest.mark.usefixtures("aws")
@pytest.mark.parametrize("priority", [False, True])
def test_a_lost_start_query_reply_counts_the_estimate(priority: bool) -> None:
    world = _world(scan_bytes=0.25e9)

    def lost(**_: Any) -> dict[str, Any]:
        raise _answered("InternalFailure", 500, "StartQuery")

    world.client.start_query = lost  # type: ignore[method-assign]
    with pytest.raises(AwsApiError, match="a query may be running") as raised:
        world.look(priority=priority)
    assert raised.value.unknown
    assert world.tallied() == ESTIMATE  # read before the look, or after it for a priority look


@pytest.mark.usefixtures("aws")
def test_a_start_query_the_service_refused_scanned_nothing() -> None:
    world = _world(scan_bytes=0.25e9)
    world.client.profile = world.client.profile.__class__(
        name="one-query", version=1, insights_concurrent_queries=0
    )
    with pytest.raises(AwsApiError, match="LimitExceededException"):
        world.look()
    assert world.tallied() == 0
