"""The per-run cap on action events, at and over its limit, and what the report says was not sent:
one under the cap, at the cap and one over, on the unit that owns the cap (``core.announce``), then
through the production EventBridge adapter against moto's bus (delivered to an SQS queue) so that
what the summary counts as sent is what arrived."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from fleet_remediation.adapters.action_events import EventBridgeActionEvents
from fleet_remediation.contract.action_events import ENTRIES_PER_PUT, MAX_EVENTS_PER_RUN, event_id
from fleet_remediation.core.announce import action_events, announce
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Mode, Refusal

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
REGION = "eu-west-1"


def _report(refusals: int) -> ReportBuilder:
    report = ReportBuilder("worker_drainer", "cap-request", NOW)
    report.mode = Mode.ENFORCE
    report.environment = "cap"
    report.refusals = [Refusal(f"task-{i:03d}", "cordon", "over the cap") for i in range(refusals)]
    return report


def test_the_cap_is_more_than_one_put() -> None:
    # The edges below only mean something if the cap spans batches.
    assert MAX_EVENTS_PER_RUN > ENTRIES_PER_PUT


@pytest.mark.parametrize(
    ("facts", "events", "not_sent"),
    [
        (MAX_EVENTS_PER_RUN - 1, MAX_EVENTS_PER_RUN - 1, None),
        (MAX_EVENTS_PER_RUN, MAX_EVENTS_PER_RUN, None),
        (MAX_EVENTS_PER_RUN + 1, MAX_EVENTS_PER_RUN, 1),
        (MAX_EVENTS_PER_RUN + 7, MAX_EVENTS_PER_RUN, 7),
    ],
    ids=["one-under", "at", "one-over", "seven-over"],
)
def test_a_run_announces_at_most_the_cap_and_counts_the_rest(
    facts: int, events: int, not_sent: int | None
) -> None:
    report = _report(facts)
    announced = action_events(report, None, NOW)
    assert len(announced) == events
    assert [event.resource for event in announced] == [f"task-{i:03d}" for i in range(events)], (
        "the first facts are sent, in order"
    )
    assert report.summary.get("action_events_not_sent") == not_sent
    assert len({event.id for event in announced}) == events, "one id per fact"


@pytest.fixture
def bus_queue() -> Iterator[str]:
    with mock_aws():
        sqs, bus = boto3.client("sqs", region_name=REGION), boto3.client("events", region_name=REGION)
        url = sqs.create_queue(QueueName="actions")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        bus.put_rule(Name="actions", EventPattern=json.dumps({"source": [{"prefix": ""}]}))
        bus.put_targets(Rule="actions", Targets=[{"Id": "queue", "Arn": arn}])
        yield url


def _delivered(url: str) -> list[str]:
    sqs, ids = boto3.client("sqs", region_name=REGION), []
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in batch:
            ids.append(json.loads(message["Body"])["detail"]["resource"])
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return ids


def test_one_over_the_cap_sends_the_cap_and_the_summary_says_one_was_not_sent(bus_queue: str) -> None:
    report = _report(MAX_EVENTS_PER_RUN + 1)
    sink = EventBridgeActionEvents("default", boto3.client("events", region_name=REGION))
    announce(report, action_events(report, None, NOW), sink, None)
    summary = report.summary
    assert summary["action_events"] == {"sent": MAX_EVENTS_PER_RUN, "unknown": 0, "failed": 0, "problems": []}
    assert summary["action_events_not_sent"] == 1
    assert sorted(_delivered(bus_queue)) == [f"task-{i:03d}" for i in range(MAX_EVENTS_PER_RUN)]


def test_each_event_says_who_acted_where_and_how_and_its_id_names_the_fact() -> None:
    report = _report(1)
    report.agent_service = "outbound"
    report.mode = Mode.DRY_RUN
    (event,) = action_events(report, "incident-1", NOW)
    assert (event.environment, event.function, event.agent_service) == ("cap", "worker_drainer", "outbound")
    assert (event.invocation_id, event.incident_id, event.mode) == ("cap-request", "incident-1", "dry-run")
    assert (event.resource, event.action, event.outcome) == ("task-000", "cordon", "refused")
    assert event.id == event_id("worker_drainer", "cap-request", "refusal", "task-000", "cordon", "refused")
    report.environment = None
    (unnamed,) = action_events(report, None, NOW)
    assert unnamed.environment == "unknown"


@pytest.mark.parametrize("part", range(6))
def test_an_event_id_changes_with_each_part_of_its_fact(part: int) -> None:
    parts = ["worker_drainer", "request", "action", "task", "cordon", "done"]
    other = [*parts]
    other[part] = "other"
    assert event_id(*parts) != event_id(*other)
    assert len(event_id(*parts)) == 32
    # Parts are separated: moving a character from one part to the next is another fact.
    assert event_id("ab", "c") != event_id("a", "bc")
    assert event_id(None, "x") == event_id("", "x")


def test_a_sink_that_is_given_no_events_is_not_called() -> None:
    calls: list[int] = []

    class Sink:
        def put(self, events: list[Any]) -> Any:
            calls.append(len(events))
            raise AssertionError("no events: nothing to put")

    announce(_report(0), [], Sink(), None)
    assert calls == []
