"""The drainer under the scan budget, through its handler on the moto world (ECS, DynamoDB, SSM,
CloudWatch) with the real ``CloudWatchLogsInsights`` adapter polling ``FakeInsightsClient`` (a named
strict fake: moto has no Logs Insights engine): the scheduled tick's per-task look is skipped when
the hour's budget is spent, told in the report without failing it; the look the VAD ALARM
triggers is not held back by its estimate, but waits when the hour is spent, and a flapping VAD
alarm gets one look per ``alarm_look_minutes`` (the gate shared with the responder)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest

from devkit.fakes.drainer_world import DrainerWorld, alarm_event, moto_world, schedule_event
from devkit.fakes.logs_insights import FakeInsightsClient
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.adapters.logs_insights import CloudWatchLogsInsights
from fleet_remediation.adapters.scan_budget import (
    BudgetedInsights,
    CloudWatchIncomingBytes,
    DynamoDBScanTally,
    ScanBudget,
)
from fleet_remediation.adapters.scan_look_gate import DynamoDBLookGate
from fleet_remediation.contract.signals import SignalCatalog
from worker_drainer.adapters.worker_logs import InsightsWorkerLogs

GB = 1e9
TALLY_TABLE = "it-scan-tally"


@dataclasses.dataclass
class Budgeted:
    world: DrainerWorld
    client: FakeInsightsClient
    tally: DynamoDBScanTally

    def hour(self) -> str:
        return self.world.now.strftime("%Y-%m-%dT%H")

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        deps = self.world.dependencies()
        settings = deps.settings
        budget = ScanBudget(
            10 * GB,
            self.tally,
            CloudWatchIncomingBytes(boto3.client("cloudwatch")),
            gate=DynamoDBLookGate(TALLY_TABLE, boto3.client("dynamodb")),
            alarm_look_interval=timedelta(minutes=10),
            clock=lambda: self.world.now,
        )
        insights = BudgetedInsights(CloudWatchLogsInsights(self.client, poll_interval_seconds=0.001), budget)  # type: ignore[arg-type]
        logs = InsightsWorkerLogs(
            insights, settings.agent_log_group, SignalCatalog.from_settings(settings.signals)
        )
        return self.world.invoke(event, dataclasses.replace(deps, worker_logs=logs))


def _nothing(query: str, start: datetime, end: datetime) -> list[dict[str, object]]:
    return []


@pytest.fixture
def budgeted(livekit_server: LocalLiveKit) -> Iterator[Budgeted]:
    with moto_world(livekit_server) as world:
        boto3.client("dynamodb").create_table(
            TableName=TALLY_TABLE,
            KeySchema=[{"AttributeName": "hour", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "hour", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client = FakeInsightsClient(_nothing, running_polls=1, bytes_per_poll=0.01 * GB)
        yield Budgeted(world, client, DynamoDBScanTally(TALLY_TABLE, boto3.client("dynamodb")))


def test_the_ticks_per_task_look_is_skipped_when_the_hours_budget_is_spent(budgeted: Budgeted) -> None:
    budgeted.tally.add(budgeted.hour(), 10 * GB)
    report = budgeted.invoke(schedule_event(budgeted.world.now))
    assert report["errors"] == []
    assert report["status"] == "ok"
    assert budgeted.client.started == []
    (skip,) = [c for c in report["candidates"] if c["reason"].startswith("scan budget")]
    assert skip["resource"] == "/ppi/livekit/it/agent"
    assert skip["decision"] == "skip"
    assert "this hour's 10 GB are spent" in skip["reason"]


def test_the_look_the_vad_alarm_triggers_waits_when_the_hour_is_spent(budgeted: Budgeted) -> None:
    budgeted.tally.add(budgeted.hour(), 10 * GB)
    report = budgeted.invoke(alarm_event(at=budgeted.world.now))
    assert report["status"] == "ok", report["errors"]
    assert budgeted.client.started == [], "a spent hour starts no query, an ALARM's neither"
    skips = [c["reason"] for c in report["candidates"] if c["reason"].startswith("scan budget")]
    assert skips
    assert all("this hour's 10 GB are spent" in reason for reason in skips), skips
    assert budgeted.tally.spent(budgeted.hour()) == 10 * GB


def test_a_flapping_vad_alarm_gets_one_look_per_interval(budgeted: Budgeted) -> None:
    first = budgeted.invoke(alarm_event(at=budgeted.world.now))
    assert first["errors"] == [], first["errors"]
    looks = len(budgeted.client.started)
    assert looks, "the first ALARM's statistics were read"
    # The hour the first look was counted in: a flap a minute later may fall in the next hour.
    first_hour = budgeted.hour()
    budgeted.world.now += timedelta(minutes=1)
    again = budgeted.invoke(alarm_event(at=budgeted.world.now))
    assert len(budgeted.client.started) == looks, "the flap a minute later starts no query"
    skips = [c["reason"] for c in again["candidates"] if c["reason"].startswith("scan budget")]
    assert skips
    assert "flaps" in skips[0], skips
    assert "one look per 10 min" in skips[0], skips
    assert budgeted.tally.spent(first_hour) > 0, "the first look counted"


def test_the_ticks_per_task_look_is_skipped_when_the_hours_tally_is_unreadable(budgeted: Budgeted) -> None:
    """Unknown spend is not zero: with the tally table gone, the scheduled look is not run unbounded."""
    boto3.client("dynamodb").delete_table(TableName=TALLY_TABLE)
    report = budgeted.invoke(schedule_event(budgeted.world.now))
    assert budgeted.client.started == []
    (skip,) = [c for c in report["candidates"] if c["reason"].startswith("scan budget")]
    assert skip["decision"] == "skip"
    assert "this hour's spend is unreadable" in skip["reason"]
