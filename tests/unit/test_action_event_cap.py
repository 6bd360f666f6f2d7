"""The action events in the unit that owns them (``core.announce``): the per-run cap, at and over its
limit, and what the report says was not sent (one under the cap, at the cap and one over, then
through the production EventBridge adapter against moto's bus, delivered to an SQS queue, so that
what the summary counts as sent is what arrived); each event's fields and their length limits; the
summary of a put; and the once-key: two distinct invocations both announce, a retry of one does not."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from fleet_remediation.adapters.action_events import EventBridgeActionEvents
from fleet_remediation.contract.action_events import ENTRIES_PER_PUT, MAX_EVENTS_PER_RUN, event_id
from fleet_remediation.core.announce import Announced, action_events, announce
from fleet_remediation.core.errors import AwsApiError
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Decision, Mode, Outcome, Refusal
from livekit_fleet_remediation.offline.replay_stores import SimulatedOnceGuard

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


def test_an_event_id_is_the_same_in_every_release() -> None:
    # Receivers keep the ids they have seen, and a run retried across a deploy repeats its events:
    # the id of a fact is its parts (None as empty) joined by US (0x1f), SHA-256, 32 hex digits.
    parts = ("worker_drainer", "request", None, "task", "cordon", "done")
    expected = hashlib.sha256(b"worker_drainer\x1frequest\x1f\x1ftask\x1fcordon\x1fdone").hexdigest()
    assert event_id(*parts) == expected[:32]


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


def test_decisions_to_act_are_announced_as_would_act_or_held_and_skips_are_not() -> None:
    report = _report(0)
    report.action("task-a", "stop", Outcome.DONE, "silent")
    report.candidate("task-b", Decision.WOULD_ACT, "slow")
    report.candidate("task-c", Decision.HELD, "deployment in progress")
    report.candidate("task-d", Decision.SKIP, "healthy")
    events = action_events(report, None, NOW)
    assert [(e.kind.value, e.resource, e.action, e.outcome, e.mode) for e in events] == [
        ("action", "task-a", "stop", "done", "enforce"),
        ("would-act", "task-b", "act", "would-act", "enforce"),
        ("held", "task-c", "act", "held", "enforce"),
    ]


def test_a_run_with_its_switch_off_announces_nothing() -> None:
    report = _report(3)
    report.mode = Mode.OFF
    assert action_events(report, None, NOW) == []


@pytest.mark.parametrize("over", [0, 1])
def test_resource_action_and_reason_are_cut_to_their_limits(over: int) -> None:
    report = _report(0)
    report.refusals = [Refusal("r" * (512 + over), "a" * (64 + over), "why" * 200)]
    (event,) = action_events(report, None, NOW)
    assert (event.resource, event.action, event.reason) == ("r" * 512, "a" * 64, ("why" * 200)[:512])


class _Told:
    """A sink whose put went as ``announced`` says."""

    def __init__(self, announced: Announced) -> None:
        self.announced, self.puts = announced, 0

    def put(self, events: list[Any]) -> Announced:
        self.puts += 1
        return self.announced


def test_the_summary_counts_the_put_and_quotes_at_most_three_problems() -> None:
    report = _report(2)
    problems = [f"may have landed: {n}" for n in range(4)]
    announce(report, action_events(report, None, NOW), _Told(Announced(1, 1, 0, problems)), None)
    assert report.summary["action_events"] == {"sent": 1, "unknown": 1, "failed": 0, "problems": problems[:3]}


def test_a_put_that_raises_is_a_report_error_and_no_summary() -> None:
    class Broken:
        def put(self, events: list[Any]) -> Announced:
            raise AwsApiError("PutEvents: access denied", aws_code="AccessDenied")

    report = _report(1)
    announce(report, action_events(report, None, NOW), Broken(), None)
    assert [(e.code, e.message) for e in report.errors] == [("AwsApiError", "PutEvents: access denied")]
    assert "action_events" not in report.summary


class _Keys(SimulatedOnceGuard):
    def __init__(self) -> None:
        super().__init__()
        self.keys: list[dict[str, str]] = []

    def run_once(self, key: dict[str, str], action: Any) -> Any:
        self.keys.append(key)
        return super().run_once(key, action)


def test_two_invocations_both_announce_and_a_retry_of_one_is_a_replay() -> None:
    once, sink = _Keys(), _Told(Announced(sent=1))
    first, second, retry = _report(1), _report(1), _report(1)
    second.invocation_id = "another-request"
    for report in (first, second, retry):
        announce(report, action_events(report, None, NOW), sink, once)
    assert sink.puts == 2
    assert (
        first.summary["action_events"]
        == second.summary["action_events"]
        == {
            "sent": 1,
            "unknown": 0,
            "failed": 0,
            "problems": [],
        }
    )
    assert retry.summary["action_events"]["replayed"] is True
    # The key is stored (DynamoDB, a day): a retry after a deploy must find the same record.
    assert once.keys[0] == {"function": "worker_drainer", "request": "cap-request", "step": "action-events"}


def test_a_local_run_without_a_request_id_puts_without_a_once_key() -> None:
    once, sink = _Keys(), _Told(Announced(sent=1))
    for _ in range(2):
        report = _report(1)
        report.invocation_id = None
        announce(report, action_events(report, None, NOW), sink, once)
    assert (sink.puts, once.keys) == (2, [])
