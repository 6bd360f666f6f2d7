"""tts_reach_alarm end to end through its handler: moto SNS, EventBridge (a rule routes suspect-worker
events to an SQS queue we read), a DynamoDB idempotency table, and ``FakeLogsInsights`` because
moto has no Logs Insights query engine."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from devkit.fakes.logs_insights import FakeInsightsClient, FakeLogsInsights, insights_row
from fleet_remediation.adapters.alarm_state import AlarmReading
from fleet_remediation.adapters.idempotency import DynamoDBOnceGuard
from fleet_remediation.adapters.logs_insights import CloudWatchLogsInsights
from fleet_remediation.adapters.notifier import SnsNotifier
from fleet_remediation.adapters.scan_budget import BudgetedInsights, ScanBudget
from fleet_remediation.contract.budgets import SUSPECT_EVENT_PUT, guarded_action_seconds
from fleet_remediation.contract.detection import DetectionConfig
from fleet_remediation.contract.events import SuspectWorkerDetail, TimeWindow, responder_event_ages
from fleet_remediation.contract.metrics import MetricDefinition
from fleet_remediation.contract.naming import EVENT_SOURCE, SUSPECT_WORKER_DETAIL_TYPE, tts_reach_alarm_name
from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.core.door import Door
from fleet_remediation.core.errors import AwsApiError
from fleet_remediation.core.pipeline import Run
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_bounds import MAX_STRING_CHARS
from fleet_remediation.core.report_model import Mode, Outcome
from fleet_remediation.domain.group_verdict import GroupEvent
from fleet_remediation.domain.job_outcomes import JobOutcome
from livekit_fleet_remediation.offline.eventbridge_events import schedule_event
from livekit_fleet_remediation.offline.fixed_mode import FixedModeSwitch
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from livekit_fleet_remediation.offline.replay_stores import SimulatedAlarmStates
from tts_reach_alarm import work
from tts_reach_alarm.adapters.event_bus import EventBridgePublisher
from tts_reach_alarm.adapters.task_facts import FactsRead
from tts_reach_alarm.analysis import Verdict, assess_concentration
from tts_reach_alarm.dependencies import TtsReachDependencies
from tts_reach_alarm.handler import lambda_handler
from tts_reach_alarm.investigation import Findings
from tts_reach_alarm.messages import ALARM_REASON_LIMIT, incident_id
from tts_reach_alarm.transition import Transition, parse_transition
from tts_reach_alarm.work import Look, ResponderStages, ResponderWork, findings_summary

REGION = "eu-west-1"
ALARM = tts_reach_alarm_name("prod", "agents")
BAD = "agent/ppi-livekit-agent/b9238a5f30f04c3a9207df1601ba88bf"
ALARM_AT = datetime(2026, 9, 15, 17, 41, tzinfo=UTC)
T0 = datetime(2026, 9, 15, 17, 45, tzinfo=UTC)


def alarm_event(
    state: str = "ALARM", name: str = ALARM, timestamp: str = "2026-09-15T17:41:00.000+0000"
) -> dict:
    return {
        "version": "0",
        "id": "c4c1c1c9-6542-e61b-6ef0-8c4d36933a92",
        "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch",
        "account": "123456789012",
        "time": "2026-09-15T17:41:05Z",
        "region": REGION,
        "resources": [f"arn:aws:cloudwatch:{REGION}:123456789012:alarm:{name}"],
        "detail": {
            "alarmName": name,
            "state": {
                "value": state,
                "reason": "Threshold Crossed: 3 out of the last 5 datapoints were less than the threshold.",
                "reasonData": json.dumps({"recentDatapoints": [0.73, 0.8, 0.8]}),
                "timestamp": timestamp,
            },
            "previousState": {"value": "OK", "reason": "", "timestamp": "2026-09-15T16:00:00.000+0000"},
            "configuration": {"metrics": []},
        },
    }


def incident_rows(stream: str = BAD) -> list[list[dict[str, str]]]:
    failed = [
        insights_row({"job_id": f"AJ_fail{i}", "@logStream": stream, "responses": 3, "first_frames": 0})
        for i in range(4)
    ]
    healthy = [
        insights_row(
            {
                "job_id": f"AJ_ok{i}",
                "@logStream": f"agent/ppi-livekit-agent/{i:032x}",
                "responses": 5,
                "first_frames": 5,
            }
        )
        for i in range(15)
    ]
    return failed + healthy


def rooms_rows() -> list[list[dict[str, str]]]:
    return [
        insights_row({"job_id": f"AJ_fail{i}", "room": f"lesson-son-{i}", "room_id": f"RM_{i}"})
        for i in range(4)
    ]


@dataclass
class Aws:
    sns_queue: str
    events_queue: str
    deps: TtsReachDependencies
    insights: FakeLogsInsights

    def drain(self, queue_url: str) -> list[dict[str, Any]]:
        sqs = boto3.client("sqs", region_name=REGION)
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        return [json.loads(m["Body"]) for m in messages.get("Messages", [])]


def make_aws(mode: Mode = Mode.ENFORCE) -> Aws:
    sqs = boto3.client("sqs", region_name=REGION)
    sns = boto3.client("sns", region_name=REGION)
    events = boto3.client("events", region_name=REGION)
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    topic = sns.create_topic(Name="lkfr-prod-notifications")["TopicArn"]
    sns_queue = sqs.create_queue(QueueName="notifications")["QueueUrl"]
    events_queue = sqs.create_queue(QueueName="suspects")["QueueUrl"]

    def arn(url: str) -> str:
        return sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn(sns_queue))
    events.put_rule(
        Name="suspects",
        EventPattern=json.dumps({"source": [EVENT_SOURCE], "detail-type": [SUSPECT_WORKER_DETAIL_TYPE]}),
    )
    events.put_targets(Rule="suspects", Targets=[{"Id": "queue", "Arn": arn(events_queue)}])
    dynamodb.create_table(
        TableName="idempotency",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    settings = TtsReachSettings.model_validate(
        dict(
            environment_name="prod",
            mode_parameter_name="/lkfr/prod/mode",
            notification_topic_arn=topic,
            runbook_base_url="https://runbooks.example.com/repo",
            aws_region=REGION,
            agent_log_group="/ppi/livekit/prod/agent",
            idempotency_table_name="idempotency",
            detection=DetectionConfig(),
        )
    )
    insights = FakeLogsInsights(responses=[incident_rows(), rooms_rows()])
    deps = TtsReachDependencies(
        settings=settings,
        mode_switch=FixedModeSwitch(mode),
        notifier=SnsNotifier(topic, boto3.client("sns", region_name=REGION)),
        events=EventBridgePublisher("default", events),
        insights=insights,
        once=DynamoDBOnceGuard("idempotency"),
        # Minutes after the alarm: its event is fresh at the door.
        clock=lambda: T0,
    )
    return Aws(sns_queue, events_queue, deps, insights)


@pytest.fixture
def aws() -> Iterator[Aws]:
    with mock_aws():
        yield make_aws()


def test_alarm_notifies_once_and_hands_the_worker_to_the_drainer(aws: Aws, lambda_context) -> None:  # type: ignore[no-untyped-def]
    report = lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
    assert report["status"] == "ok", report["errors"]
    assert report["summary"]["verdict"] == "concentrated"
    assert report["summary"]["p_value"] == pytest.approx(1 / 3876)
    notes = aws.drain(aws.sns_queue)
    assert len(notes) == 1
    body = notes[0]["Message"]
    assert notes[0]["Subject"] == (
        "[prod/agents] 4 sessions had no TTS audio, mostly worker b9238a5f; sent to the drainer"
    )
    assert "They concentrate on worker task b9238a5f30f04c3a9207df1601ba88bf" in body
    assert "job AJ_fail0 room lesson-son-0 (RM_0)" in body
    assert "https://runbooks.example.com/repo/runbooks/tts-reach.html" in body
    assert "#alarmsV2:alarm/livekit-prod-agents-tts-reach" in body
    assert "#logsV2:logs-insights$3FqueryDetail" in body
    assert "#dashboards/dashboard/livekit-prod-fleet" in body
    suspects = aws.drain(aws.events_queue)
    assert len(suspects) == 1
    detail = suspects[0]["detail"]
    assert suspects[0]["detail-type"] == SUSPECT_WORKER_DETAIL_TYPE
    assert suspects[0]["source"] == EVENT_SOURCE
    assert detail["log_stream"] == BAD
    assert detail["task_id"] == "b9238a5f30f04c3a9207df1601ba88bf"
    assert detail["evidence"]["failed_jobs_on_worker"] == 4
    assert detail["p_value"] < 0.001
    # The failing-jobs query ran over the analysis window ending at the alarm's state timestamp.
    first = aws.insights.calls[0]
    assert (first["end"] - first["start"]).total_seconds() == 32 * 60


def test_the_same_transition_twice_gives_one_notification(aws: Aws, lambda_context) -> None:  # type: ignore[no-untyped-def]
    aws.insights.responses += [incident_rows(), rooms_rows()]
    first = lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
    second = lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
    assert len(aws.drain(aws.sns_queue)) == 1
    assert len(aws.drain(aws.events_queue)) == 1
    assert [(a["action"], a["outcome"]) for a in first["actions"]] == [("emit-suspect-worker", "done")]
    assert [(a["action"], a["outcome"]) for a in second["actions"]] == [
        ("emit-suspect-worker", "already-done")
    ]
    # The repeat names the message the first delivery sent: nothing new went out.
    assert second["notifications"] == first["notifications"]


def test_two_separate_alarms_of_the_same_alarm_both_act(aws: Aws, lambda_context: Any) -> None:
    """The once-key names the alarm's state timestamp: a later ALARM of the same alarm (it went OK
    in between, or was re-raised) is a new fact; it notifies and hands the worker over again."""
    aws.insights.responses += [incident_rows(), rooms_rows()]
    first = lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
    later = alarm_event(timestamp="2026-09-15T17:43:00.000+0000")
    later["id"] = "0d6f4f2e-9c1b-4d3e-8a7b-1f2e3d4c5b6a"
    second = lambda_handler(later, lambda_context, dependencies=aws.deps)
    assert [(a["action"], a["outcome"]) for a in first["actions"]] == [("emit-suspect-worker", "done")]
    assert [(a["action"], a["outcome"]) for a in second["actions"]] == [("emit-suspect-worker", "done")]
    assert len(aws.drain(aws.events_queue)) == 2
    assert len(aws.drain(aws.sns_queue)) == 2
    assert second["notifications"] != first["notifications"]


def test_ok_sends_one_resolved_notification(aws: Aws, lambda_context) -> None:  # type: ignore[no-untyped-def]
    for _ in range(2):
        report = lambda_handler(alarm_event("OK"), lambda_context, dependencies=aws.deps)
        assert report["status"] == "ok"
    notes = aws.drain(aws.sns_queue)
    assert len(notes) == 1
    assert "resolved" in notes[0]["Subject"]
    assert aws.insights.calls == []


def test_fleet_wide_failure_only_notifies(aws: Aws, lambda_context) -> None:  # type: ignore[no-untyped-def]
    outage = [
        insights_row(
            {"job_id": f"AJ_{i}", "@logStream": f"agent/c/{i % 10:032x}", "responses": 2, "first_frames": 0}
        )
        for i in range(20)
    ]
    aws.insights.responses = [outage, []]
    report = lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
    assert report["summary"]["verdict"] == "fleet-wide"
    assert [c["decision"] for c in report["candidates"]] == ["skip"]
    notes = aws.drain(aws.sns_queue)
    assert len(notes) == 1
    assert "fleet-wide" in notes[0]["Subject"]
    assert aws.drain(aws.events_queue) == []


def test_dry_run_tells_what_it_would_have_done_and_hands_nothing_over(lambda_context) -> None:  # type: ignore[no-untyped-def]
    with mock_aws():
        aws = make_aws(Mode.DRY_RUN)
        report = lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
        assert report["mode"] == "dry-run"
        assert report["candidates"][0]["decision"] == "would-act"
        assert report["summary"]["would_emit"]["task_id"] == "b9238a5f30f04c3a9207df1601ba88bf"
        (note,) = aws.drain(aws.sns_queue)
        assert note["Subject"] == (
            "[prod/agents] DRY RUN - would have sent worker b9238a5f to the drainer "
            "(4 sessions had no TTS audio)"
        )
        assert note["Message"].startswith("DRY RUN — would have sent worker b9238a5f to the drainer")
        assert note["MessageAttributes"]["severity"]["Value"] == "critical"
        assert aws.drain(aws.events_queue) == []


def test_with_the_switch_off_the_analysis_is_still_told(lambda_context) -> None:  # type: ignore[no-untyped-def]
    with mock_aws():
        aws = make_aws(Mode.OFF)
        report = lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
        assert report["mode"] == "off"
        assert report["summary"]["verdict"] == "concentrated"
        (note,) = aws.drain(aws.sns_queue)
        assert note["Subject"] == (
            # SNS takes at most 100 characters: the subject is cut, the message says it all.
            "[prod/agents] remediation is off - 4 sessions had no TTS audio, mostly worker b9238a5f; "
            "drainer n..."
        )
        assert note["Message"].startswith(
            "remediation is off — 4 sessions had no TTS audio, mostly worker b9238a5f"
        )
        assert aws.drain(aws.events_queue) == []


@pytest.mark.parametrize(
    ("event", "code"),
    [
        (alarm_event(name="some-other-alarm"), "UnknownAlarm"),
        ({**alarm_event(), "detail": {"state": {"value": "ALARM"}}}, "InvalidEvent"),
        ({"detail-type": "CloudWatch Alarm State Change", "source": "aws.cloudwatch"}, "InvalidEvent"),
        ({**alarm_event(), "detail-type": "Scheduled Event"}, "UntrustedEvent"),
        (["not", "an", "object"], "InvalidEvent"),
        ({"dry_run": True, "window_minutes": 0}, "InvalidEvent"),
    ],
)
def test_bad_events_are_typed_errors_and_publish_nothing(aws: Aws, lambda_context, event, code) -> None:  # type: ignore[no-untyped-def]
    report = lambda_handler(event, lambda_context, dependencies=aws.deps)
    assert report["status"] == "failed"
    assert [e["code"] for e in report["errors"]] == [code]
    assert aws.drain(aws.sns_queue) == []
    assert aws.drain(aws.events_queue) == []
    assert aws.insights.calls == []


def test_query_deadline_is_a_typed_error(aws: Aws, lambda_context) -> None:  # type: ignore[no-untyped-def]
    aws.insights.exceed_deadline = True
    report = lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
    assert [e["code"] for e in report["errors"]] == ["DeadlineExceeded"]
    assert aws.drain(aws.sns_queue) == []


class BlockingNotifier:
    """Holds the first publish until released, so a second delivery overlaps the first."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.entered = threading.Event()
        self.release = threading.Event()

    def publish(self, subject: str, message: str, attributes: dict[str, str] | None = None) -> str:
        self.entered.set()
        assert self.release.wait(20), "the overlapping delivery never finished"
        return str(self.inner.publish(subject, message, attributes))


def test_concurrent_deliveries_of_one_transition_give_one_notification(aws: Aws, lambda_context) -> None:  # type: ignore[no-untyped-def]
    aws.insights.responses += [incident_rows(), rooms_rows()]
    blocking = BlockingNotifier(aws.deps.notifier)
    aws.deps.notifier = blocking
    reports: dict[str, dict[str, Any]] = {}

    def deliver(name: str) -> None:
        reports[name] = lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)

    first = threading.Thread(target=deliver, args=("first",))
    first.start()
    assert blocking.entered.wait(20), "the first delivery never reached its notification"
    deliver("second")  # runs while the first holds the notification in progress
    blocking.release.set()
    first.join(20)

    assert len(aws.drain(aws.sns_queue)) == 1
    assert len(aws.drain(aws.events_queue)) == 1
    assert reports["first"]["status"] == "ok"
    second = reports["second"]
    assert "ConcurrentAction" in [e["code"] for e in second["errors"]]
    assert second["notifications"] == []


def test_a_1mb_alarm_reason_is_not_echoed(aws: Aws, lambda_context: Any) -> None:
    """CloudWatch caps a state reason at 1,023 characters; a forged event's 1 MB reason is refused at
    the door, and reaches neither the report nor a message."""
    event = alarm_event("OK")
    event["detail"]["state"]["reason"] = "r" * 1_000_000
    aws.deps.mode_switch = FixedModeSwitch(Mode.DRY_RUN)
    report = lambda_handler(event, lambda_context, dependencies=aws.deps)
    serialized = json.dumps(report)
    assert [e["code"] for e in report["errors"]] == ["InvalidEvent"]
    assert "state.reason" in report["errors"][0]["message"]
    assert aws.drain(aws.sns_queue) == []
    assert len(serialized) < 8 * MAX_STRING_CHARS
    assert "r" * (ALARM_REASON_LIMIT + 1) not in serialized


def test_the_report_records_what_the_analysis_found_and_the_event_it_sent(
    aws: Aws, lambda_context: Any
) -> None:
    report = lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
    summary = report["summary"]
    assert summary["state"] == "ALARM"
    assert summary["window"] == {"start": "2026-09-15T17:09:00Z", "end": "2026-09-15T17:41:00Z"}
    assert summary["jobs_with_responses"] == 19
    assert summary["failing_jobs"] == 4
    # 15 healthy jobs x 5 first frames over 15 x 5 + 4 x 3 responses.
    assert summary["reach_in_window"] == round(75 / 87, 4)
    assert summary["alarm_datapoints"] == [0.73, 0.8, 0.8]
    assert summary["verdict"] == "concentrated"
    assert summary["reason"].startswith("concentrated: ")
    assert summary["p_value_exact"] is True
    (candidate,) = report["candidates"]
    assert candidate["resource"] == BAD
    assert candidate["decision"] == "act"
    assert candidate["facts"]["task_id"] == "b9238a5f30f04c3a9207df1601ba88bf"
    assert candidate["facts"]["failed_jobs_on_worker"] == 4
    assert candidate["facts"]["jobs_in_window"] == 19
    (action,) = report["actions"]
    (suspect,) = aws.drain(aws.events_queue)
    assert action == {
        "resource": BAD,
        "action": "emit-suspect-worker",
        "outcome": "done",
        "reason": f"event {suspect['id']}",
    }
    detail = suspect["detail"]
    # Only the suspect worker's own failed jobs, and the incident the page threads under.
    assert detail["evidence"]["failed_job_ids"] == [f"AJ_fail{i}" for i in range(4)]
    ages = responder_event_ages(aws.deps.settings.tts_reach.recheck_minutes)
    door = Door.for_invocation(LocalLambdaContext().invoked_function_arn, aws.deps.clock(), ages)
    _, transition = parse_transition(alarm_event(), aws.deps.settings, door)
    assert detail["incident_id"] == incident_id(transition, aws.deps.settings)
    (page,) = aws.drain(aws.sns_queue)
    assert f"Suspect-worker event sent to the drainer: {suspect['id']}" in page["Message"]


def test_an_alarm_with_no_job_in_its_window_says_so(aws: Aws, lambda_context: Any) -> None:
    aws.insights.responses = [[], []]
    report = lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
    assert report["status"] == "ok", report["errors"]
    assert report["summary"]["jobs_with_responses"] == 0
    assert report["summary"]["reach_in_window"] is None
    assert report["candidates"] == []
    assert report["actions"] == []


def test_a_suspect_event_the_bus_refuses_is_a_failed_action_and_the_page_still_goes(
    aws: Aws, lambda_context: Any
) -> None:
    aws.deps.events = EventBridgePublisher("no-such-bus", boto3.client("events", region_name=REGION))
    report = lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
    (action,) = report["actions"]
    assert (action["resource"], action["action"], action["outcome"]) == (BAD, "emit-suspect-worker", "failed")
    assert action["error"]["code"] == "AwsApiError"
    assert action["reason"] == action["error"]["message"]
    assert "EventBridge" in action["reason"]
    assert report["status"] == "partial"
    assert len(aws.drain(aws.sns_queue)) == 1


def test_without_the_time_to_send_it_the_suspect_event_is_skipped_and_the_page_still_goes(aws: Aws) -> None:
    # 40 s left: the page and the report keep their 29 s; the event needs 22 s of the 11 s left.
    report = lambda_handler(alarm_event(), LocalLambdaContext(remaining_ms=40_000), dependencies=aws.deps)
    assert report["actions"] == [
        {
            "resource": BAD,
            "action": "emit-suspect-worker",
            "outcome": "skipped",
            "reason": "deadline: not enough time left to send it; the notification says what was found",
        }
    ]
    assert aws.drain(aws.events_queue) == []
    assert len(aws.drain(aws.sns_queue)) == 1


def test_a_manual_analysis_in_enforce_sends_its_event_every_time_it_is_asked(
    aws: Aws, lambda_context: Any
) -> None:
    aws.insights.responses += [incident_rows(), rooms_rows()]
    manual = {"dry_run": False, "window_end": "2026-09-15T17:41:00Z"}
    reports = [lambda_handler(manual, lambda_context, dependencies=aws.deps) for _ in range(2)]
    for report in reports:
        assert [(a["action"], a["outcome"]) for a in report["actions"]] == [("emit-suspect-worker", "done")]
    assert len(aws.drain(aws.events_queue)) == 2


# --- the scheduled re-check while the page stays in ALARM --------------------------------------------
def recheck_event() -> dict[str, Any]:
    return schedule_event(
        "lkfr-prod-agents-tts-reach-alarm-recheck", account="123456789012", region=REGION, now=T0
    )


def _with_page(aws: Aws, state: str | None) -> SimulatedAlarmStates:
    """The page's state as DescribeAlarms would give it (moto has no composite alarms: an explicit
    in-memory stand-in behind the responder's ``AlarmStates``)."""
    states = SimulatedAlarmStates()
    if state is not None:
        states.readings[ALARM] = AlarmReading(state, ALARM_AT)
    aws.deps.alarm_states = states
    aws.deps.clock = lambda: T0
    return states


def test_a_recheck_with_the_page_ok_reads_nothing_and_says_nothing(aws: Aws, lambda_context) -> None:  # type: ignore[no-untyped-def]
    _with_page(aws, "OK")
    report = lambda_handler(recheck_event(), lambda_context, dependencies=aws.deps)
    assert report["status"] == "ok", report["errors"]
    assert report["summary"] == {"skipped": f"{ALARM} is OK: no open incident"}
    assert aws.insights.calls == []
    assert aws.drain(aws.sns_queue) == []


def test_a_recheck_names_the_worker_the_first_analysis_could_not_once(aws: Aws, lambda_context) -> None:  # type: ignore[no-untyped-def]
    """The ALARM's own analysis saw too few failed sessions (fleet-wide rows: nobody named); four
    minutes later the re-check sees the worker's sessions and hands it over, in the same incident;
    the next re-check says nothing new."""
    _with_page(aws, "ALARM")
    aws.insights.responses[:] = [[], incident_rows(), rooms_rows(), incident_rows(), rooms_rows()]
    first = lambda_handler(
        alarm_event(timestamp="2026-09-15T17:41:00.000+0000"), lambda_context, dependencies=aws.deps
    )
    assert first["summary"]["verdict"] != "concentrated"
    (alarm_note,) = aws.drain(aws.sns_queue)
    recheck = lambda_handler(recheck_event(), lambda_context, dependencies=aws.deps)
    assert recheck["status"] == "ok", recheck["errors"]
    assert recheck["trigger"]["kind"] == "schedule"
    assert recheck["summary"]["verdict"] == "concentrated"
    # The second look at the incident (4 minutes in, every 2): it tests at alpha x 6 / (pi^2 x 4).
    assert recheck["summary"]["recheck_alpha"] == pytest.approx(0.05 * 6 / (math.pi**2 * 4))
    assert [(a["action"], a["outcome"]) for a in recheck["actions"]] == [("emit-suspect-worker", "done")]
    (suspect,) = aws.drain(aws.events_queue)
    assert suspect["detail"]["task_id"] == "b9238a5f30f04c3a9207df1601ba88bf"
    assert suspect["detail"]["window"]["end"].startswith("2026-09-15T17:45:00")
    (named,) = aws.drain(aws.sns_queue)
    assert "sent to the drainer" in named["Subject"]
    incident = next(line for line in alarm_note["Message"].splitlines() if line.startswith("Incident "))
    assert incident in named["Message"], "the re-check's message threads into the ALARM's incident"
    assert (
        "Re-check of the incident open since 17:41 UTC: its first analysis named no worker"
        in named["Message"]
    )
    again = lambda_handler(recheck_event(), lambda_context, dependencies=aws.deps)
    assert [(a["action"], a["outcome"]) for a in again["actions"]] == [
        ("emit-suspect-worker", "already-done")
    ]
    assert again["summary"]["recheck"] == "nothing new in the open incident: no message"
    assert aws.drain(aws.sns_queue) == []
    assert aws.drain(aws.events_queue) == []


def test_a_recheck_after_the_alarm_named_the_worker_adds_nothing(aws: Aws, lambda_context) -> None:  # type: ignore[no-untyped-def]
    _with_page(aws, "ALARM")
    aws.insights.responses += [incident_rows(), rooms_rows()]
    lambda_handler(
        alarm_event(timestamp="2026-09-15T17:41:00.000+0000"), lambda_context, dependencies=aws.deps
    )
    assert len(aws.drain(aws.sns_queue)) == 1
    assert len(aws.drain(aws.events_queue)) == 1
    recheck = lambda_handler(recheck_event(), lambda_context, dependencies=aws.deps)
    assert recheck["status"] == "ok"
    assert aws.drain(aws.sns_queue) == []
    assert aws.drain(aws.events_queue) == []


OTHER = "agent/ppi-livekit-agent/c0ffee00c0ffee00c0ffee00c0ffee00"


def test_a_recheck_that_names_a_second_worker_hands_it_over_too(aws: Aws, lambda_context: Any) -> None:
    """Two distinct workers in one incident are two hand-overs: the once-key names the worker."""
    _with_page(aws, "ALARM")
    aws.insights.responses[:] = [incident_rows(), rooms_rows(), incident_rows(OTHER), rooms_rows()]
    first = lambda_handler(
        alarm_event(timestamp="2026-09-15T17:41:00.000+0000"), lambda_context, dependencies=aws.deps
    )
    assert [(a["resource"], a["outcome"]) for a in first["actions"]] == [(BAD, "done")]
    recheck = lambda_handler(recheck_event(), lambda_context, dependencies=aws.deps)
    assert [(a["resource"], a["outcome"]) for a in recheck["actions"]] == [(OTHER, "done")]
    assert [s["detail"]["log_stream"] for s in aws.drain(aws.events_queue)] == [BAD, OTHER]
    assert len(aws.drain(aws.sns_queue)) == 2


class MayHaveLanded:
    """A bus whose put may have landed: the reply was lost after a 5xx (``AwsApiError`` unknown)."""

    def __init__(self) -> None:
        self.puts = 0

    def put_suspect_worker(self, detail: Any) -> str:
        self.puts += 1
        raise AwsApiError(
            "EventBridge PutEvents failed: InternalFailure", aws_code="InternalFailure", unknown=True
        )


def test_a_suspect_event_that_may_have_landed_is_unknown_and_never_sent_again(
    aws: Aws, lambda_context: Any
) -> None:
    bus = MayHaveLanded()
    aws.deps.events = bus
    aws.insights.responses += [incident_rows(), rooms_rows()]
    reports = [lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps) for _ in range(2)]
    for report in reports:
        (action,) = report["actions"]
        assert (action["resource"], action["action"], action["outcome"]) == (
            BAD,
            "emit-suspect-worker",
            "unknown",
        )
        assert action["reason"] == "EventBridge PutEvents failed: InternalFailure; not sent again"
    # Lambda's retry of the same transition replays the first run's result: one put in all.
    assert bus.puts == 1
    # The page goes once, and says what was found.
    assert len(aws.drain(aws.sns_queue)) == 1


def test_a_manual_analysis_in_dry_run_previews_its_message_and_sends_nothing(
    aws: Aws, lambda_context: Any
) -> None:
    manual = {"dry_run": True, "window_end": "2026-09-15T17:41:00Z"}
    report = lambda_handler(manual, lambda_context, dependencies=aws.deps)
    preview = report["summary"]["would_publish"]
    assert preview["subject"] == (
        "[prod/agents] DRY RUN - would have sent worker b9238a5f to the drainer (4 sessions had no TTS audio)"
    )
    assert "They concentrate on worker task b9238a5f30f04c3a9207df1601ba88bf" in preview["text"]
    assert report["summary"]["window"] == {"start": "2026-09-15T17:09:00Z", "end": "2026-09-15T17:41:00Z"}
    assert aws.drain(aws.sns_queue) == []
    assert aws.drain(aws.events_queue) == []


def test_a_recheck_without_the_time_to_send_its_event_still_tells_the_worker_it_names(aws: Aws) -> None:
    """The hand-over skipped for time is still news in the incident: the worker is named in a message."""
    _with_page(aws, "ALARM")
    report = lambda_handler(recheck_event(), LocalLambdaContext(remaining_ms=40_000), dependencies=aws.deps)
    assert [(a["resource"], a["outcome"]) for a in report["actions"]] == [(BAD, "skipped")]
    assert "recheck" not in report["summary"]
    (named,) = aws.drain(aws.sns_queue)
    assert "b9238a5f" in named["Subject"]
    assert aws.drain(aws.events_queue) == []


def test_a_recheck_whose_event_the_bus_refuses_still_tells_the_worker_it_names(
    aws: Aws, lambda_context: Any
) -> None:
    _with_page(aws, "ALARM")
    aws.deps.events = EventBridgePublisher("no-such-bus", boto3.client("events", region_name=REGION))
    report = lambda_handler(recheck_event(), lambda_context, dependencies=aws.deps)
    assert [(a["resource"], a["outcome"]) for a in report["actions"]] == [(BAD, "failed")]
    assert "recheck" not in report["summary"]
    (named,) = aws.drain(aws.sns_queue)
    assert "b9238a5f" in named["Subject"]


def test_a_recheck_that_names_no_worker_says_nothing(aws: Aws, lambda_context: Any) -> None:
    _with_page(aws, "ALARM")
    spread = [
        insights_row(
            {"job_id": f"AJ_{i}", "@logStream": f"agent/c/{i % 10:032x}", "responses": 2, "first_frames": 0}
        )
        for i in range(20)
    ]
    aws.insights.responses[:] = [spread, []]
    report = lambda_handler(recheck_event(), lambda_context, dependencies=aws.deps)
    assert report["status"] == "ok", report["errors"]
    assert report["summary"]["verdict"] == "fleet-wide"
    assert report["summary"]["recheck"] == "nothing new in the open incident: no message"
    assert report["actions"] == []
    assert aws.drain(aws.sns_queue) == []


def test_a_recheck_in_dry_run_tells_the_worker_it_would_hand_over(lambda_context: Any) -> None:
    with mock_aws():
        aws = make_aws(Mode.DRY_RUN)
        _with_page(aws, "ALARM")
        report = lambda_handler(recheck_event(), lambda_context, dependencies=aws.deps)
        assert report["status"] == "ok", report["errors"]
        assert report["summary"]["would_emit"]["log_stream"] == BAD
        # The re-check tests at its own, smaller level, not the configured alpha.
        (candidate,) = report["candidates"]
        assert candidate["facts"]["alpha"] == report["summary"]["recheck_alpha"] < 0.05
        assert report["trigger"]["detail"]["tts_alarm"] == "ALARM since 2026-09-15T17:41:00+00:00"
        assert "recheck" not in report["summary"]
        (note,) = aws.drain(aws.sns_queue)
        assert note["Subject"].startswith("[prod/agents] DRY RUN - would have sent worker b9238a5f")
        assert aws.drain(aws.events_queue) == []


def test_the_hand_over_is_journaled_with_its_p_value_before_it_is_sent(
    aws: Aws, lambda_context: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
    journal = [r.journal for r in caplog.records if hasattr(r, "journal")]
    # p = 1 / C(19, 4), to three significant digits.
    assert journal[0] == {"step": 0, "resource": BAD, "action": "emit-suspect-worker", "reason": "p=0.000258"}
    assert journal[1]["outcome"] == "done"


class RecordingBus:
    def __init__(self) -> None:
        self.puts: list[SuspectWorkerDetail] = []

    def put_suspect_worker(self, detail: SuspectWorkerDetail) -> str:
        self.puts.append(detail)
        return f"event-{len(self.puts)}"


def bad_worker_suspect(window: TimeWindow) -> SuspectWorkerDetail:
    """The suspect-worker event naming the bad worker over ``window``, at p = 0.001."""
    return SuspectWorkerDetail(
        environment="prod",
        agent_service="agents",
        log_stream=BAD,
        task_id=BAD.rsplit("/", 1)[1],
        alarm_name=ALARM,
        p_value=0.001,
        window=window,
    )


@pytest.mark.parametrize(
    ("step", "sent"),
    [(-1, False), (0, True), (1, True)],
    ids=["a-step-short", "exactly-enough", "a-step-more"],
)
def test_the_suspect_event_is_sent_with_exactly_the_time_it_needs_left(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, step: int, sent: bool
) -> None:
    now = 1000.0
    monkeypatch.setattr(work, "time", SimpleNamespace(monotonic=lambda: now))
    needed = now + guarded_action_seconds(SUSPECT_EVENT_PUT)
    deadline = needed if step == 0 else math.nextafter(needed, math.inf if step > 0 else -math.inf)
    bus = RecordingBus()
    aws.deps.events = bus
    window = TimeWindow(start=ALARM_AT - timedelta(minutes=32), end=ALARM_AT)
    suspect = bad_worker_suspect(window)
    run = Run(
        aws.deps, Transition("ALARM", window, None), Mode.ENFORCE, ReportBuilder("tts", "edge"), deadline
    )
    handed = ResponderStages().act(run, Look(None), suspect)
    assert bus.puts == ([suspect] if sent else [])
    assert handed.event_id == ("event-1" if sent else None)
    assert [a.outcome for a in run.report.actions] == [Outcome.DONE if sent else Outcome.SKIPPED]


def test_a_recheck_whose_event_may_have_landed_still_tells_the_worker_it_names(
    aws: Aws, lambda_context: Any
) -> None:
    _with_page(aws, "ALARM")
    aws.deps.events = MayHaveLanded()
    report = lambda_handler(recheck_event(), lambda_context, dependencies=aws.deps)
    assert [(a["resource"], a["outcome"]) for a in report["actions"]] == [(BAD, "unknown")]
    assert "recheck" not in report["summary"]
    (named,) = aws.drain(aws.sns_queue)
    assert "b9238a5f" in named["Subject"]


WINDOW = TimeWindow(start=ALARM_AT - timedelta(minutes=32), end=ALARM_AT)
WINDOW_JSON = {"start": "2026-09-15T17:09:00Z", "end": "2026-09-15T17:41:00Z"}


def _findings(**changes: Any) -> Findings:
    jobs = [JobOutcome(f"AJ_f{i}", BAD, 3, 0) for i in range(4)]
    jobs += [JobOutcome(f"AJ_h{i}", f"agent/c/{i:032x}", 3, 3) for i in range(15)]
    failing = [job for job in jobs if job.failed]
    concentration = assess_concentration(jobs, alpha=0.05, min_failed_jobs=2)
    return dataclasses.replace(Findings(jobs, failing, {}, concentration), **changes)


def test_the_summary_is_json_and_names_no_group_facts_or_cut_it_does_not_have() -> None:
    summary = findings_summary(_findings(), Transition("ALARM", WINDOW, None))
    assert summary["window"] == WINDOW_JSON
    assert json.loads(json.dumps(summary)) == summary
    assert {"group_event", "task_facts", "jobs_truncated"}.isdisjoint(summary)


def test_the_summary_names_the_group_event_and_what_ecs_said_of_the_tasks() -> None:
    group = GroupEvent("zone", "eu-west-1a", (BAD,), 3, 1, 16, 0.01)
    plain = _findings()
    grouped = dataclasses.replace(plain.concentration, verdict=Verdict.GROUP, group=group)
    facts = FactsRead(unknown=(BAD,))
    summary = findings_summary(
        _findings(concentration=grouped, facts=facts), Transition("ALARM", WINDOW, None)
    )
    assert summary["group_event"] == group.describe()
    assert (
        summary["task_facts"]
        == "ECS facts of 0 running task(s); unknown for 1 task(s) (ECS does not know them)"
    )


def test_the_summary_of_a_window_cut_at_the_query_limit_says_how_many_jobs_the_test_covers() -> None:
    summary = findings_summary(_findings(truncated=True), Transition("ALARM", WINDOW, None))
    assert summary["jobs_truncated"] == (
        "the window holds more than MAX_JOBS=5000 jobs (Logs Insights returns at most 10,000 rows); "
        "the test covers the 19 the query returned"
    )


# --- under the scan budget: the look a new ALARM triggers, a re-check, a flapping alarm ---------------
GB = 1e9


class MemoryTally:
    def __init__(self, spent: float, *, add_fails: bool = False) -> None:
        self.bytes, self.add_fails = spent, add_fails

    def spent(self, hour: str) -> float:
        return self.bytes

    def add(self, hour: str, scanned: float) -> None:
        if self.add_fails:
            raise AwsApiError("DynamoDB UpdateItem (scan tally) failed: Throttled", aws_code="Throttled")
        self.bytes += scanned


class FixedIncoming:
    def __init__(self, estimate: float) -> None:
        self.bytes = estimate

    def estimate(self, log_group: str, start: datetime, end: datetime) -> float | None:
        return self.bytes


class MemoryGate:
    def __init__(self) -> None:
        self.ran: dict[str, datetime] = {}

    def claim(self, key: str, now: datetime, interval: timedelta) -> datetime | None:
        if key in self.ran and now < self.ran[key] + interval:
            return self.ran[key]
        self.ran[key] = now
        return None


def _incident_answers(query: str, start: datetime, end: datetime) -> list[dict[str, object]]:
    if "room_id" in query:
        return [{"job_id": f"AJ_fail{i}", "room": f"room-{i}", "room_id": f"RM_{i}"} for i in range(4)]
    failed = [
        {"job_id": f"AJ_fail{i}", "@logStream": BAD, "responses": 3, "first_frames": 0} for i in range(4)
    ]
    healthy = [
        {"job_id": f"AJ_ok{i}", "@logStream": f"agent/c/{i:032x}", "responses": 5, "first_frames": 5}
        for i in range(15)
    ]
    return [*failed, *healthy]


def _under_budget(aws: Aws, tally: MemoryTally, estimate: float) -> FakeInsightsClient:
    """10 GB an hour, ``tally`` spent, the window estimated at ``estimate``, one alarm look per 10 min."""
    client = FakeInsightsClient(_incident_answers, running_polls=0)
    budget = ScanBudget(
        10 * GB, tally, FixedIncoming(estimate), MemoryGate(), timedelta(minutes=10), clock=lambda: T0
    )
    inner = CloudWatchLogsInsights(client, poll_interval_seconds=0.001)  # type: ignore[arg-type]
    aws.deps.insights = BudgetedInsights(inner, budget)
    return client


def _budget_skips(report: dict[str, Any]) -> list[str]:
    return [c["reason"] for c in report["candidates"] if c["reason"].startswith("scan budget")]


@pytest.mark.parametrize("recheck", [False, True], ids=["new-alarm", "recheck"])
def test_under_the_scan_budget_only_a_new_alarm_looks_past_its_estimate(
    aws: Aws, lambda_context: Any, recheck: bool
) -> None:
    _with_page(aws, "ALARM")
    client = _under_budget(aws, MemoryTally(8 * GB), estimate=5 * GB)
    report = lambda_handler(
        recheck_event() if recheck else alarm_event(), lambda_context, dependencies=aws.deps
    )
    assert report["status"] == "ok", report["errors"]
    if recheck:
        (skip,) = _budget_skips(report)
        assert "5.00 GB would pass the 2.00 GB left this hour of 10 GB" in skip
        assert client.started == []
    else:
        assert _budget_skips(report) == []
        assert report["summary"]["verdict"] == "concentrated"
        assert len(client.started) == 2


def test_under_the_scan_budget_a_flapping_alarm_gets_one_look_per_interval(
    aws: Aws, lambda_context: Any
) -> None:
    client = _under_budget(aws, MemoryTally(0.0), estimate=0.1 * GB)
    first = lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
    again = alarm_event(timestamp="2026-09-15T17:43:00.000+0000")
    again["id"] = "0d6f4f2e-9c1b-4d3e-8a7b-1f2e3d4c5b6a"
    second = lambda_handler(again, lambda_context, dependencies=aws.deps)
    assert first["summary"]["verdict"] == "concentrated"
    assert len(client.started) == 2, "the second ALARM of the interval starts no query"
    (skip,) = _budget_skips(second)
    assert "flaps; its last look ran at 17:45 UTC and it gets one look per 10 min" in skip
    # A look skipped is told in the report's skips: no message, no error.
    assert (second["status"], second["notifications"]) == ("ok", [])


def test_a_scan_tally_that_takes_no_count_is_an_error_in_the_report(aws: Aws, lambda_context: Any) -> None:
    _under_budget(aws, MemoryTally(0.0, add_fails=True), estimate=0.1 * GB)
    report = lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
    assert report["summary"]["verdict"] == "concentrated"
    messages = [e["message"] for e in report["errors"]]
    assert messages == ["DynamoDB UpdateItem (scan tally) failed: Throttled"] * 2


class UnknownTaskFacts:
    """ECS that could not say: every task's facts unknown, with the error that kept them."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def read(self, streams: Sequence[str], deadline: float) -> FactsRead:
        self.asked.append(list(streams))
        denied = AwsApiError("ECS DescribeTasks failed: AccessDenied", aws_code="AccessDeniedException")
        return FactsRead(unknown=tuple(streams), errors=(denied,))


def test_the_alarm_asks_ecs_of_the_tasks_and_reports_what_it_could_not_learn(
    aws: Aws, lambda_context: Any
) -> None:
    ecs = UnknownTaskFacts()
    aws.deps.task_facts = ecs
    # ECS is asked when a task's first frames timed out (the facts can change the verdict).
    timed_out = [
        insights_row({"job_id": f"AJ_fail{i}", "@logStream": BAD, "responses": 3, "timeouts": 3})
        for i in range(4)
    ]
    aws.insights.responses[:] = [timed_out + incident_rows()[4:], rooms_rows()]
    report = lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
    (asked,) = ecs.asked
    assert BAD in asked
    assert report["summary"]["task_facts"].endswith("(ECS DescribeTasks failed: AccessDenied)")
    assert [e["message"] for e in report["errors"]] == ["ECS DescribeTasks failed: AccessDenied"]


@pytest.mark.parametrize("concentrated", [True, False], ids=["one-worker", "fleet-wide"])
def test_the_alarm_emits_its_failing_jobs_and_whether_one_worker_holds_them(
    aws: Aws, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, concentrated: bool
) -> None:
    emitted: dict[str, float] = {}

    def capture(metric: MetricDefinition, value: float) -> None:
        emitted[metric.name] = value

    monkeypatch.setattr(work, "emit", capture)
    if not concentrated:
        aws.insights.responses[:] = [
            [
                insights_row({"job_id": f"AJ_{i}", "@logStream": f"agent/c/{i % 10:032x}", "responses": 2})
                for i in range(20)
            ],
            [],
        ]
    lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
    expected = (
        {"TtsReachFailingJobs": 4, "TtsReachSuspectWorkers": 1}
        if concentrated
        else {
            "TtsReachFailingJobs": 20,
            "TtsReachSuspectWorkers": 0,
        }
    )
    assert emitted == expected


def test_an_ok_reports_its_state_and_its_window_and_reads_nothing(aws: Aws, lambda_context: Any) -> None:
    report = lambda_handler(alarm_event("OK"), lambda_context, dependencies=aws.deps)
    assert report["summary"] == {"state": "OK", "window": WINDOW_JSON}
    assert report["candidates"] == []
    assert aws.insights.calls == []


def test_an_ok_records_its_summary_as_json(aws: Aws) -> None:
    run = Run(aws.deps, Transition("OK", WINDOW, None), Mode.ENFORCE, ReportBuilder("tts", "ok"), 0.0)
    ResponderStages().record(run, ResponderWork())
    assert run.report.summary == {"state": "OK", "window": WINDOW_JSON}
    assert json.loads(json.dumps(run.report.summary)) == run.report.summary


def test_insufficient_data_reads_nothing_and_says_nothing(aws: Aws, lambda_context: Any) -> None:
    report = lambda_handler(alarm_event("INSUFFICIENT_DATA"), lambda_context, dependencies=aws.deps)
    assert report["status"] == "ok", report["errors"]
    assert report["summary"] == {"skipped": "state INSUFFICIENT_DATA is neither ALARM nor OK: nothing to say"}
    assert aws.insights.calls == []
    assert aws.drain(aws.sns_queue) == []


def test_a_dry_run_that_names_no_worker_would_send_nothing(lambda_context: Any) -> None:
    with mock_aws():
        aws = make_aws(Mode.DRY_RUN)
        aws.insights.responses[:] = [[], []]
        report = lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
        assert report["status"] == "ok", report["errors"]
        assert report["summary"]["verdict"] == "inconclusive"
        assert "would_emit" not in report["summary"]
        assert aws.drain(aws.events_queue) == []


def test_a_retry_of_the_alarm_that_names_no_worker_sends_no_second_message(
    aws: Aws, lambda_context: Any
) -> None:
    """One message per transition, whatever its retry reads: the first run named the worker, the
    retry (later logs) finds the failures spread; the delivery's once-key is the transition's."""
    spread = [
        insights_row(
            {"job_id": f"AJ_{i}", "@logStream": f"agent/c/{i % 10:032x}", "responses": 2, "first_frames": 0}
        )
        for i in range(20)
    ]
    aws.insights.responses += [spread, []]
    first = lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
    retry = lambda_handler(alarm_event(), lambda_context, dependencies=aws.deps)
    assert (first["summary"]["verdict"], retry["summary"]["verdict"]) == ("concentrated", "fleet-wide")
    assert len(aws.drain(aws.sns_queue)) == 1
    assert retry["notifications"] == first["notifications"]


def test_a_dry_run_records_the_event_it_would_send_as_json(aws: Aws) -> None:
    suspect = bad_worker_suspect(WINDOW)
    report = ReportBuilder("tts", "dry")
    report.mode = Mode.DRY_RUN
    run = Run(aws.deps, Transition("ALARM", WINDOW, None), Mode.DRY_RUN, report, 0.0)
    ResponderStages().record(run, ResponderWork(Look(_findings()), suspect))
    assert report.summary["would_emit"]["window"] == WINDOW_JSON
    assert report.summary["would_emit"]["log_stream"] == BAD


def test_two_rechecks_that_name_two_new_workers_both_tell(aws: Aws, lambda_context: Any) -> None:
    """The re-check's message once-key names the worker: a second new worker in the same incident is
    told too, after the first."""
    _with_page(aws, "ALARM")
    aws.insights.responses[:] = [incident_rows(), rooms_rows(), incident_rows(OTHER), rooms_rows()]
    reports = [lambda_handler(recheck_event(), lambda_context, dependencies=aws.deps) for _ in range(2)]
    assert [[a["resource"] for a in r["actions"]] for r in reports] == [[BAD], [OTHER]]
    subjects = [note["Subject"] for note in aws.drain(aws.sns_queue)]
    assert len(subjects) == 2
    assert ("b9238a5f" in subjects[0], "c0ffee00" in subjects[1]) == (True, True)
