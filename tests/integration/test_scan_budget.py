"""The Logs Insights scan budget through the responder's handler: the hour's tally in a DynamoDB table
and the agent log group's IncomingBytes in CloudWatch (both moto), the real ``CloudWatchLogsInsights``
adapter polling ``FakeInsightsClient`` (a named strict fake: moto has no Logs Insights engine and no
query statistics) that reports ``bytesScanned`` as the service does while a query runs.

A re-check whose estimate passes what is left is skipped, a running one is stopped when its bytes
scanned pass it; the look a new ALARM triggers is not held back by its estimate but waits when the
hour is spent, and a flapping alarm gets one look per ``alarm_look_minutes``; a look that ends early
(its deadline, a query that times out) is counted. Each is told in the one report, none fails the
invocation."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from devkit.fakes.aws_faults import Ambiguous, TookEffect
from devkit.fakes.logs_insights import FakeInsightsClient
from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.adapters.logs_insights import CloudWatchLogsInsights, ScanStoppedError
from fleet_remediation.adapters.scan_budget import (
    BudgetedInsights,
    CloudWatchIncomingBytes,
    DynamoDBScanTally,
    LookPolicy,
    LookSkippedError,
    ScanBudget,
)
from fleet_remediation.adapters.scan_look_gate import DynamoDBLookGate
from fleet_remediation.contract.budgets import SCAN_TALLY_CALL, insights_look_seconds
from fleet_remediation.core.errors import RemediationError
from tests.integration.test_tts_reach_alarm import (
    ALARM_AT,
    REGION,
    T0,
    Aws,
    _with_page,
    alarm_event,
    make_aws,
    recheck_event,
)
from tts_reach_alarm.handler import lambda_handler

GB = 1e9
CEILING = 10 * GB
HOUR = T0.strftime("%Y-%m-%dT%H")
TALLY_TABLE = "scan-tally"


def job_rows(query: str, start: datetime, end: datetime) -> list[dict[str, object]]:
    """Four failed sessions on one worker and fifteen healthy elsewhere; their rooms when asked."""
    bad = "agent/ppi-livekit-agent/b9238a5f30f04c3a9207df1601ba88bf"
    if "room_id" in query:
        return [{"job_id": f"AJ_fail{i}", "room": f"room-{i}", "room_id": f"RM_{i}"} for i in range(4)]
    failed = [
        {"job_id": f"AJ_fail{i}", "@logStream": bad, "responses": 3, "first_frames": 0} for i in range(4)
    ]
    healthy = [
        {
            "job_id": f"AJ_ok{i}",
            "@logStream": f"agent/ppi-livekit-agent/{i:032x}",
            "responses": 5,
            "first_frames": 5,
        }
        for i in range(15)
    ]
    return [*failed, *healthy]


@dataclass
class Budgeted:
    aws: Aws
    client: FakeInsightsClient
    # What the look policy was told (problems with the tally).
    problems: list[Exception] = field(default_factory=list)

    def spend(self, scanned: float) -> None:
        DynamoDBScanTally(TALLY_TABLE, boto3.client("dynamodb", region_name=REGION)).add(HOUR, scanned)

    def spent(self) -> float:
        return DynamoDBScanTally(TALLY_TABLE, boto3.client("dynamodb", region_name=REGION)).spent(HOUR)

    def incoming(self, total: float) -> None:
        """What the agent log group took in over the re-check's window, per CloudWatch."""
        boto3.client("cloudwatch", region_name=REGION).put_metric_data(
            Namespace="AWS/Logs",
            MetricData=[
                {
                    "MetricName": "IncomingBytes",
                    "Dimensions": [{"Name": "LogGroupName", "Value": self.aws.deps.settings.agent_log_group}],
                    "Timestamp": T0 - timedelta(minutes=10),
                    "Value": total,
                    "Unit": "Bytes",
                }
            ],
        )


@pytest.fixture
def budgeted() -> Iterator[Budgeted]:
    with mock_aws():
        aws = make_aws()
        boto3.client("dynamodb", region_name=REGION).create_table(
            TableName=TALLY_TABLE,
            KeySchema=[{"AttributeName": "hour", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "hour", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client = FakeInsightsClient(job_rows, running_polls=4, bytes_per_poll=0.05 * GB)
        budget = ScanBudget(
            CEILING,
            DynamoDBScanTally(TALLY_TABLE, boto3.client("dynamodb", region_name=REGION)),
            CloudWatchIncomingBytes(boto3.client("cloudwatch", region_name=REGION)),
            gate=DynamoDBLookGate(TALLY_TABLE, boto3.client("dynamodb", region_name=REGION)),
            alarm_look_interval=timedelta(minutes=10),
            clock=lambda: T0,
        )
        insights = CloudWatchLogsInsights(client, poll_interval_seconds=0.001)  # type: ignore[arg-type]
        aws.deps.insights = BudgetedInsights(insights, budget)
        _with_page(aws, "ALARM")
        yield Budgeted(aws, client)


def _skips(report: dict[str, Any]) -> list[str]:
    """The looks the budget skipped or stopped, as the report lists them."""
    return [
        c["reason"]
        for c in report["candidates"]
        if c["decision"] == "skip" and c["reason"].startswith("scan budget")
    ]


def test_the_budget_skips_a_recheck_its_estimate_would_pass(budgeted: Budgeted, lambda_context: Any) -> None:
    budgeted.spend(9.5 * GB)
    budgeted.incoming(1.0 * GB)
    report = lambda_handler(recheck_event(), lambda_context, dependencies=budgeted.aws.deps)
    assert report["status"] == "ok", report["errors"]
    assert budgeted.client.started == [], "a skipped re-check starts no query"
    (skip,) = _skips(report)
    assert "1.00 GB would pass the 0.50 GB left this hour of 10 GB" in skip
    assert budgeted.spent() == 9.5 * GB
    assert budgeted.aws.drain(budgeted.aws.sns_queue) == []


def test_the_budget_stops_a_running_recheck_and_counts_what_it_scanned(
    budgeted: Budgeted, lambda_context: Any
) -> None:
    budgeted.spend(9.88 * GB)  # 0.12 GB left; no IncomingBytes yet: the estimate cannot hold it back
    report = lambda_handler(recheck_event(), lambda_context, dependencies=budgeted.aws.deps)
    assert report["status"] == "ok", report["errors"]
    (query_id,) = budgeted.client.queries
    assert budgeted.client.queries[query_id].stopped, "StopQuery was sent"
    (skip,) = _skips(report)
    assert "stopped at 0.15 GB scanned" in skip
    # What it scanned before the stop counts: three polls of 0.05 GB.
    assert budgeted.spent() == pytest.approx(9.88 * GB + 0.15 * GB)


def test_the_look_a_new_alarm_triggers_is_not_held_back_by_its_estimate(
    budgeted: Budgeted, lambda_context: Any
) -> None:
    budgeted.spend(8 * GB)
    budgeted.incoming(5.0 * GB)
    report = lambda_handler(alarm_event(), lambda_context, dependencies=budgeted.aws.deps)
    assert report["status"] == "ok", report["errors"]
    assert _skips(report) == []
    assert report["summary"]["verdict"] == "concentrated"
    assert len(budgeted.client.started) == 2, "the window's jobs, then the failing jobs' rooms"
    # Both looks ran to their end (scheduled, four polls running, complete: 0.05 GB a poll) and count.
    assert budgeted.spent() == pytest.approx(8 * GB + 2 * 0.30 * GB)
    assert ALARM_AT.strftime("%Y-%m-%dT%H") == HOUR


def test_the_look_a_new_alarm_triggers_waits_when_the_hour_is_spent(
    budgeted: Budgeted, lambda_context: Any
) -> None:
    budgeted.spend(CEILING)
    report = lambda_handler(alarm_event(), lambda_context, dependencies=budgeted.aws.deps)
    assert report["status"] == "ok", report["errors"]
    assert budgeted.client.started == []
    (skip,) = _skips(report)
    assert "this hour's 10 GB are spent; the look waits for the next hour" in skip
    assert budgeted.spent() == CEILING


def _flap(at: datetime) -> dict[str, Any]:
    """The page going to ALARM again at ``at`` (a new transition: its own once-keys)."""
    event = alarm_event(timestamp=at.strftime("%Y-%m-%dT%H:%M:%S.000+0000"))
    event["time"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return event


def test_an_alarm_flapping_60_times_an_hour_scans_no_more_than_the_budget(
    budgeted: Budgeted, lambda_context: Any
) -> None:
    """Each ALARM analysis scans 4.8 GB (two looks of six polls at 0.4 GB): unbounded, 60 flaps would
    scan 288 GB. One look per 10 minutes and the ceiling leave at most the 10 GB budget plus the one
    poll a stopped look reads past it."""
    budgeted.client.bytes_per_poll = 0.4 * GB
    insights = budgeted.aws.deps.insights
    assert isinstance(insights, BudgetedInsights)
    start = datetime(2026, 9, 15, 17, 0, tzinfo=UTC)
    reasons: list[str] = []
    for minute in range(60):
        now = start + timedelta(minutes=minute)
        budgeted.aws.deps.clock = insights.budget.clock = lambda now=now: now
        report = lambda_handler(_flap(now), lambda_context, dependencies=budgeted.aws.deps)
        assert report["status"] == "ok", report["errors"]
        reasons += _skips(report)
    scanned = sum(q.polls * budgeted.client.bytes_per_poll for q in budgeted.client.queries.values())
    assert budgeted.spent() == pytest.approx(scanned), "every byte scanned is counted"
    assert scanned <= CEILING + budgeted.client.bytes_per_poll
    assert len(budgeted.client.started) <= 2 * 6, "at most one analysis per 10 minutes"
    assert any("flaps" in reason and "one look per 10 min" in reason for reason in reasons)
    assert any("this hour's 10 GB are spent" in reason for reason in reasons)


def _look(budgeted: Budgeted, client: FakeInsightsClient) -> tuple[RemediationError, float]:
    """One re-check straight through the budgeted adapter, on a fake clock: Insights polls once a
    second and the look's deadline leaves it about 3 s of polling after what the budget keeps for its
    own calls. The error it ended with and the last bytesScanned the service reported."""
    clock = [0.0]

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    inner = CloudWatchLogsInsights(client, sleep=sleep, monotonic=lambda: clock[0])  # type: ignore[arg-type]
    insights = budgeted.aws.deps.insights
    assert isinstance(insights, BudgetedInsights)
    budgeted_look = BudgetedInsights(inner, insights.budget)
    with pytest.raises(RemediationError) as ended:
        budgeted_look.run_query(
            budgeted.aws.deps.settings.agent_log_group,
            "stats count(*)",
            T0 - timedelta(minutes=32),
            T0,
            deadline=insights_look_seconds(3.0),
        )
    assert not isinstance(ended.value, LookSkippedError)
    (query,) = client.queries.values()
    return ended.value, query.polls * client.bytes_per_poll


@pytest.mark.parametrize("ending", ["deadline", "Timeout", "Failed"])
def test_a_look_that_ends_early_is_counted(budgeted: Budgeted, ending: str) -> None:
    """The window held 1 GB (IncomingBytes); the look read 0.1 GB a poll and never completed. What
    it scanned counts: its last bytesScanned where the error carries it, else its estimate (a look
    scans at most its window), never zero."""
    budgeted.incoming(1.0 * GB)
    client = FakeInsightsClient(
        job_rows,
        running_polls=None if ending == "deadline" else 3,
        final_status="Complete" if ending == "deadline" else ending,
        bytes_per_poll=0.1 * GB,
    )
    _, scanned = _look(budgeted, client)
    assert scanned > 0
    assert scanned <= budgeted.spent() <= 1.0 * GB


@pytest.mark.parametrize("fault_kind", list(Ambiguous), ids=[f.name.lower() for f in Ambiguous])
def test_a_tally_add_that_may_have_landed_is_never_sent_again(
    budgeted: Budgeted, lambda_context: Any, fault_kind: Ambiguous
) -> None:
    """The first look's ADD takes effect, then its attempt ends ambiguously (a 5xx, a reset with
    throttled retries, a hang): it is not sent again, the look's rows still count, and the report
    says the tally write failed; the second look's ADD goes through. Counted once each."""
    client = aws_client(SCAN_TALLY_CALL, region_name=REGION)
    faulted = TookEffect(client, "dynamodb.UpdateItem", fault_kind)
    insights = budgeted.aws.deps.insights
    assert isinstance(insights, BudgetedInsights)
    insights.budget.tally = DynamoDBScanTally(TALLY_TABLE, client)
    report = lambda_handler(alarm_event(), lambda_context, dependencies=budgeted.aws.deps)
    assert report["summary"]["verdict"] == "concentrated"
    assert faulted.took_effect == 1
    (error,) = report["errors"]
    assert "UpdateItem (scan tally)" in error["message"]
    assert budgeted.spent() == pytest.approx(2 * 0.30 * GB)


# --- unknown is not zero, and the budget's edges, on the budgeted adapter itself ------------------


def _policy_look(budgeted: Budgeted, priority: bool = False) -> Any:
    """One look over the re-check's window, straight through ``BudgetedInsights``."""
    insights = budgeted.aws.deps.insights
    assert isinstance(insights, BudgetedInsights)
    insights.policy = LookPolicy(priority=priority, problem=budgeted.problems.append)
    group = budgeted.aws.deps.settings.agent_log_group
    return insights.run_query(group, "stats count(*)", T0 - timedelta(minutes=32), T0, time.monotonic() + 20)


@pytest.mark.parametrize(
    "unreadable",
    ["table gone", "count a string", "count missing"],
)
def test_an_unreadable_tally_skips_every_look(budgeted: Budgeted, unreadable: str) -> None:
    """A tally that cannot be read (the table gone; an item whose count is not a number) is unknown
    spend, never "nothing spent": a scheduled re-check is skipped, and so is the look a new ALARM
    triggers (the ceiling holds for every look); no query starts."""
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    if unreadable == "table gone":
        dynamodb.delete_table(TableName=TALLY_TABLE)
    else:
        count = {"S": "lots"} if unreadable == "count a string" else None
        item = {"hour": {"S": HOUR}, "expires_at": {"N": "1"}} | ({"scanned_bytes": count} if count else {})
        dynamodb.put_item(TableName=TALLY_TABLE, Item=item)
    for priority in (False, True):
        with pytest.raises(LookSkippedError, match="this hour's spend is unreadable"):
            _policy_look(budgeted, priority=priority)
    assert budgeted.client.started == [], "a skipped look starts no query"


@pytest.mark.parametrize(
    ("spent", "estimate", "runs"),
    [
        (9 * GB, 1 * GB - 1, True),
        (9 * GB, 1 * GB, True),
        (9 * GB, 1 * GB + 1, False),
        (CEILING - 1, 0.0, True),
        (CEILING, 0.0, False),
        (CEILING + 1, 0.0, False),
    ],
    ids=[
        "estimate-under-left",
        "estimate-at-left",
        "estimate-over-left",
        "spent-under",
        "spent-at",
        "spent-over",
    ],
)
def test_a_recheck_runs_up_to_exactly_what_is_left(
    budgeted: Budgeted, spent: float, estimate: float, runs: bool
) -> None:
    budgeted.spend(spent)
    if estimate:
        budgeted.incoming(estimate)
    if runs:
        # It starts (a byte left is room to start; the running look is then stopped at what is left).
        with contextlib.suppress(ScanStoppedError):
            _policy_look(budgeted)
        assert len(budgeted.client.started) == 1
    else:
        with pytest.raises(LookSkippedError):
            _policy_look(budgeted)
        assert budgeted.client.started == []
