"""Notifications end to end: the reaper and the TTS responder publishing to moto SNS (an e-mail topic
and a chat topic, read through SQS subscriptions), the reaper against the real livekit-server.

* loud dry run: the scheduled reaper in dry-run says what it would have done, once per set of rooms;
* both renderings: readable text on the e-mail topic, the Amazon Q custom-notification JSON
  (validated against the schema of ``tests/chat_notification_schema.py``) on the chat topic, one
  incident id as the thread;
* delivery that is not lost: one throttled publish among ten concurrent deliveries still arrives
  (``SnsThrottling``: moto never throttles); a message SNS never takes fails the invocation after
  its report, and Lambda's retry of the event re-sends it without acting again.

The rendered samples are written to ``build/samples/`` for people to read.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import jsonschema
import pytest
from livekit import api
from moto import mock_aws

from devkit.fakes.sns_faults import SnsThrottling
from devkit.livekit_clients import create_rooms, room_names
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.adapters.idempotency import DynamoDBOnceGuard
from fleet_remediation.adapters.livekit_rooms import LiveKitCredentials, LiveKitRoomService
from fleet_remediation.adapters.notifier import NotificationDelivery, SnsNotifier
from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.contract.policies import ReaperPolicy
from fleet_remediation.contract.sections import ReaperSection
from fleet_remediation.contract.settings import ReaperSettings
from fleet_remediation.core import messages
from fleet_remediation.core.errors import NotificationLostError
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Mode
from livekit_fleet_remediation.offline.fixed_mode import FixedModeSwitch
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from tests.chat_notification_schema import CHAT_NOTIFICATION_SCHEMA
from tests.message_samples import save_sample
from zombie_reaper import handler as reaper_handler
from zombie_reaper.dependencies import ReaperDependencies

REGION = "eu-west-1"
# The rooms the test creates look this old to the reaper.
AHEAD = timedelta(hours=3)

pytestmark = pytest.mark.livekit


@dataclass
class Topics:
    text_arn: str
    chat_arn: str
    text_queue: str
    chat_queue: str
    sns: Any

    def received(self, queue: str) -> list[dict[str, Any]]:
        sqs = boto3.client("sqs", region_name=REGION)
        found = []
        while True:
            batch = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
            if not batch:
                return found
            for message in batch:
                found.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])


@pytest.fixture
def topics() -> Iterator[Topics]:
    with mock_aws():
        sns = boto3.client("sns", region_name=REGION)
        sqs = boto3.client("sqs", region_name=REGION)
        arns, queues = [], []
        for name in ("notifications", "chat"):
            arn = sns.create_topic(Name=name)["TopicArn"]
            queue = sqs.create_queue(QueueName=f"{name}-inbox")["QueueUrl"]
            queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"][
                "QueueArn"
            ]
            sns.subscribe(TopicArn=arn, Protocol="sqs", Endpoint=queue_arn)
            arns.append(arn)
            queues.append(queue)
        boto3.client("dynamodb", region_name=REGION).create_table(
            TableName="reaper-once",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield Topics(arns[0], arns[1], queues[0], queues[1], sns)


def reaper_deps(server: LocalLiveKit, topics: Topics, mode: Mode) -> ReaperDependencies:
    settings = ReaperSettings.model_validate(
        {
            "environment_name": "prod",
            "mode_parameter_name": "/livekit-fleet-remediation/prod/mode",
            "function_mode_parameter_name": "/livekit-fleet-remediation/prod/zombie-reaper/mode",
            "notification_topic_arn": topics.text_arn,
            "chat_topic_arn": topics.chat_arn,
            "runbook_base_url": "https://runbooks.example.com/repo",
            "aws_region": REGION,
            "livekit_url": server.http_url,
            "livekit_secret_id": "unused: credentials injected",
            "idempotency_table_name": "reaper-once",
            "reaper": ReaperSection(
                livekit_request_timeout_seconds=2,
                policy=ReaperPolicy(managed_room_pattern="^notify-.+$", max_age_minutes=60),
            ),
        }
    )
    credentials = LiveKitCredentials.model_validate(
        {"api_key": server.api_key, "api_secret": server.api_secret}
    )
    return ReaperDependencies(
        settings=settings,
        mode_switch=FixedModeSwitch(mode),
        notifier=SnsNotifier(topics.text_arn, topics.sns),
        chat_notifier=SnsNotifier(topics.chat_arn, topics.sns),
        once=DynamoDBOnceGuard("reaper-once"),
        room_service_factory=lambda: LiveKitRoomService(server.http_url, credentials, 2),
        clock=lambda: datetime.now(UTC) + AHEAD,
    )


def schedule_event(at: datetime) -> dict[str, Any]:
    return {
        "version": "0",
        "id": "e-notify",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [f"arn:aws:events:{REGION}:123456789012:rule/lkfr-prod-reaper"],
        "detail": {},
    }


async def delete_rooms(server: LocalLiveKit, names: list[str]) -> None:
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as lk:
        for name in names:
            await lk.room.delete_room(api.DeleteRoomRequest(room=name))


def incident_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("Incident ")).removeprefix("Incident ")


def test_the_scheduled_reaper_is_loud_in_dry_run_once_per_room_set_and_in_enforce(
    livekit_server: LocalLiveKit, topics: Topics
) -> None:
    asyncio.run(create_rooms(livekit_server, ["notify-zombie-a", "notify-zombie-b"]))
    dry = reaper_deps(livekit_server, topics, Mode.DRY_RUN)
    # Three ticks five minutes apart, the last one now: each is fresh at the door.
    first_tick = dry.clock().replace(microsecond=0) - timedelta(minutes=10)
    report = reaper_handler.lambda_handler(schedule_event(first_tick), LocalLambdaContext(), dependencies=dry)
    assert report["mode"] == "dry-run"
    assert {"notify-zombie-a", "notify-zombie-b"} <= asyncio.run(room_names(livekit_server))
    (text_note,) = topics.received(topics.text_queue)
    (chat_note,) = topics.received(topics.chat_queue)
    save_sample("reaper-dry-run", text_note, chat_note)
    assert text_note["Subject"] == (
        "[prod] DRY RUN - would have deleted 2 over-age room(s) (oldest notify-zombie-a, 3h00m)"
    )
    assert text_note["Message"].startswith("DRY RUN — would have deleted 2 over-age room(s)")
    assert "would act 2 · done 0 · already done 0 · refused 0 · failed 0 · unknown 0" in text_note["Message"]
    chat = json.loads(chat_note["Message"])
    jsonschema.validate(chat, CHAT_NOTIFICATION_SCHEMA)
    assert chat["metadata"]["threadId"] == incident_line(text_note["Message"])
    assert chat["content"]["title"].startswith(":information_source: [prod] DRY RUN — would have deleted 2")
    assert text_note["MessageAttributes"]["severity"]["Value"] == "info"
    assert text_note["MessageAttributes"]["notification_kind"]["Value"] == "zombie_reaper"

    # The next tick sees the same rooms: the same incident, already announced.
    again = reaper_handler.lambda_handler(
        schedule_event(first_tick + timedelta(minutes=5)), LocalLambdaContext(), dependencies=dry
    )
    assert again["notifications"] == report["notifications"]
    assert topics.received(topics.text_queue) == []
    assert topics.received(topics.chat_queue) == []

    enforce = reaper_deps(livekit_server, topics, Mode.ENFORCE)
    done = reaper_handler.lambda_handler(
        schedule_event(first_tick + timedelta(minutes=10)), LocalLambdaContext(), dependencies=enforce
    )
    assert {a["resource"]: a["outcome"] for a in done["actions"]} == {
        "notify-zombie-a": "done",
        "notify-zombie-b": "done",
    }
    (text_note,) = topics.received(topics.text_queue)
    (chat_note,) = topics.received(topics.chat_queue)
    save_sample("reaper-enforce", text_note, chat_note)
    assert text_note["Subject"].startswith("[prod] zombie reaper deleted 2 of 2 over-age room(s)")
    assert "done 2 · already done 0 · refused 0 · failed 0 · unknown 0" in text_note["Message"]
    chat = json.loads(chat_note["Message"])
    jsonschema.validate(chat, CHAT_NOTIFICATION_SCHEMA)
    assert (
        chat["metadata"]["threadId"]
        == incident_line(text_note["Message"])
        == f"prod.zombie-reaper.{first_tick + timedelta(minutes=10):%Y%m%dT%H%M%SZ}"
    )
    assert any("aws ssm put-parameter --overwrite --name" in step for step in chat["content"]["nextSteps"])


def note(index: int) -> messages.Notification:
    return messages.Notification(
        environment="prod",
        function=FunctionName.ZOMBIE_REAPER,
        incident_id=f"prod.zombie-reaper.delivery-{index}",
        severity=messages.Severity.INFO,
        mode=Mode.ENFORCE,
        status="ok",
        headline=f"delivery {index}",
    )


def test_one_throttled_publish_among_ten_concurrent_deliveries_still_arrives(topics: Topics) -> None:
    throttling = SnsThrottling(topics.sns, times=1)
    delivery = NotificationDelivery(SnsNotifier(topics.text_arn, topics.sns))
    reports = [ReportBuilder("zombie_reaper", f"inv-{i}") for i in range(10)]
    threads = [threading.Thread(target=delivery.send, args=(note(i), reports[i])) for i in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert throttling.throttled == 1
    assert throttling.passed == 10  # nine first attempts and the throttled one's retry
    arrived = sorted(n["Subject"] for n in topics.received(topics.text_queue))
    assert arrived == sorted(f"[prod] delivery {i}" for i in range(10))
    assert all(len(r.notifications) == 1 and r.errors == [] for r in reports)


def test_a_notification_sns_never_takes_fails_after_its_budget(topics: Topics) -> None:
    SnsThrottling(topics.sns, times=1000)
    delivery = NotificationDelivery(SnsNotifier(topics.text_arn, topics.sns, budget_seconds=1.0))
    report = ReportBuilder("zombie_reaper", "inv")
    delivery.send(note(0), report)
    (error,) = report.errors
    assert error.code == "NotificationLost"
    assert "Throttling" in error.message
    assert report.failure_after_report is not None
    assert topics.received(topics.text_queue) == []


def test_an_error_retrying_cannot_fix_is_not_retried(topics: Topics) -> None:
    refused = SnsThrottling(topics.sns, times=1000, code="AuthorizationError")
    report = ReportBuilder("zombie_reaper", "inv")
    NotificationDelivery(SnsNotifier(topics.text_arn, topics.sns)).send(note(0), report)
    assert refused.throttled == 1
    assert "after 1 attempt(s)" in report.errors[0].message


def test_a_lost_notification_fails_the_invocation_and_the_retry_resends_it_without_acting_again(
    livekit_server: LocalLiveKit, topics: Topics, caplog: pytest.LogCaptureFixture
) -> None:
    asyncio.run(create_rooms(livekit_server, ["notify-lost-a"]))
    deps = reaper_deps(livekit_server, topics, Mode.ENFORCE)
    deps = replace(deps, notifier=SnsNotifier(topics.text_arn, topics.sns, budget_seconds=0.5))
    outage = SnsThrottling(topics.sns, times=1000)
    event = schedule_event(deps.clock())
    first_attempt = LocalLambdaContext()
    with pytest.raises(NotificationLostError):
        reaper_handler.lambda_handler(event, first_attempt, dependencies=deps)
    (logged,) = [r for r in caplog.records if r.getMessage() == "remediation report"]
    first = logged.report  # type: ignore[attr-defined]
    assert [(a["resource"], a["outcome"]) for a in first["actions"]] == [("notify-lost-a", "done")]
    assert "NotificationLost" in [e["code"] for e in first["errors"]]
    assert "notify-lost-a" not in asyncio.run(room_names(livekit_server))

    # SNS is back. Lambda retries the same event with the same request id; a new over-age room
    # appeared meanwhile: the retry replays the first attempt instead of running again.
    outage.remaining = 0
    asyncio.run(create_rooms(livekit_server, ["notify-lost-b"]))
    retry = LocalLambdaContext()
    retry.aws_request_id = first_attempt.aws_request_id
    report = reaper_handler.lambda_handler(event, retry, dependencies=deps)
    assert report["summary"]["replayed"].startswith("a retry of this event")
    assert [(a["resource"], a["outcome"]) for a in report["actions"]] == [("notify-lost-a", "done")]
    assert "notify-lost-b" in asyncio.run(room_names(livekit_server))
    asyncio.run(delete_rooms(livekit_server, ["notify-lost-b"]))  # the server is shared by the session
    (text_note,) = topics.received(topics.text_queue)
    assert "notify-lost-a" in text_note["Message"]
    # The chat copy went out on the first attempt (its own once-key) and is not sent twice.
    assert len(topics.received(topics.chat_queue)) == 1


BAD_STREAM = "agent/agent-container/b9238a5f30f04c3a9207df1601ba88bf"


def tts_alarm_event(state: str, timestamp: str, previous: tuple[str, str]) -> dict[str, Any]:
    alarm = "livekit-prod-agents-tts-reach"
    return {
        "version": "0",
        "id": "c4c1c1c9-6542-e61b-6ef0-8c4d36933a92",
        "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch",
        "account": "123456789012",
        "time": timestamp,
        "region": REGION,
        "resources": [f"arn:aws:cloudwatch:{REGION}:123456789012:alarm:{alarm}"],
        "detail": {
            "alarmName": alarm,
            "state": {
                "value": state,
                "reason": "Threshold Crossed: 3 out of the last 5 datapoints were less than the threshold.",
                "reasonData": json.dumps({"recentDatapoints": [0.73, 0.8, 0.8]}),
                "timestamp": timestamp,
            },
            "previousState": {"value": previous[0], "reason": "", "timestamp": previous[1]},
            "configuration": {"metrics": []},
        },
    }


def responder(topics: Topics, mode: Mode) -> Any:
    from devkit.fakes.logs_insights import FakeLogsInsights, insights_row
    from fleet_remediation.contract.settings import TtsReachSettings
    from tts_reach_alarm.adapters.event_bus import EventBridgePublisher
    from tts_reach_alarm.dependencies import TtsReachDependencies

    boto3.client("dynamodb", region_name=REGION).create_table(
        TableName=f"responder-once-{mode.value}",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    jobs = [
        insights_row({"job_id": f"AJ_fail{i}", "@logStream": BAD_STREAM, "responses": 3, "first_frames": 0})
        for i in range(4)
    ] + [
        insights_row(
            {
                "job_id": f"AJ_ok{i}",
                "@logStream": f"agent/agent-container/{i:032x}",
                "responses": 5,
                "first_frames": 5,
            }
        )
        for i in range(15)
    ]
    rooms = [
        insights_row({"job_id": f"AJ_fail{i}", "room": f"session-{i}", "room_id": f"RM_{i}"})
        for i in range(4)
    ]
    settings = TtsReachSettings.model_validate(
        {
            "environment_name": "prod",
            "mode_parameter_name": "/livekit-fleet-remediation/prod/mode",
            "notification_topic_arn": topics.text_arn,
            "chat_topic_arn": topics.chat_arn,
            "runbook_base_url": "https://runbooks.example.com/repo",
            "aws_region": REGION,
            "agent_log_group": "/example/livekit/prod/agent",
            "idempotency_table_name": f"responder-once-{mode.value}",
            "ecs_cluster": "agents-prod",
        }
    )
    return TtsReachDependencies(
        settings=settings,
        mode_switch=FixedModeSwitch(mode),
        notifier=SnsNotifier(topics.text_arn, topics.sns),
        chat_notifier=SnsNotifier(topics.chat_arn, topics.sns),
        events=EventBridgePublisher("default", boto3.client("events", region_name=REGION)),
        insights=FakeLogsInsights(responses=[jobs, rooms]),
        once=DynamoDBOnceGuard(f"responder-once-{mode.value}"),
    )


@pytest.mark.parametrize("mode", [Mode.DRY_RUN, Mode.ENFORCE])
def test_one_tts_incident_is_one_thread_from_alarm_to_resolution(topics: Topics, mode: Mode) -> None:
    from tts_reach_alarm.handler import lambda_handler

    events = boto3.client("events", region_name=REGION)
    sqs = boto3.client("sqs", region_name=REGION)
    suspects = sqs.create_queue(QueueName="suspects")["QueueUrl"]
    suspects_arn = sqs.get_queue_attributes(QueueUrl=suspects, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    events.put_rule(Name="suspects", EventPattern=json.dumps({"detail-type": ["LiveKit Suspect Worker"]}))
    events.put_targets(Rule="suspects", Targets=[{"Id": "queue", "Arn": suspects_arn}])
    # 44 minutes after the alarm, 5 after its resolution: both events are fresh at the door.
    deps = replace(responder(topics, mode), clock=lambda: datetime(2026, 9, 15, 18, 25, tzinfo=UTC))
    opened = "2026-09-15T17:41:00.000+0000"
    alarm = lambda_handler(
        tts_alarm_event("ALARM", opened, ("OK", "2026-09-15T16:00:00.000+0000")),
        LocalLambdaContext(),
        dependencies=deps,
    )
    assert alarm["status"] == "ok", alarm["errors"]
    (text_note,) = topics.received(topics.text_queue)
    (chat_note,) = topics.received(topics.chat_queue)
    save_sample(f"tts-alarm-{mode.value}", text_note, chat_note)
    chat = json.loads(chat_note["Message"])
    jsonschema.validate(chat, CHAT_NOTIFICATION_SCHEMA)
    incident = "prod.livekit-prod-agents-tts-reach.20260915T174100Z"
    assert chat["metadata"]["threadId"] == incident_line(text_note["Message"]) == incident
    assert text_note["MessageAttributes"]["severity"]["Value"] == "critical"
    assert "undrain" in text_note["Message"]
    assert "--cli-binary-format raw-in-base64-out" in text_note["Message"]
    assert "/ecs/v2/clusters/agents-prod/tasks/b9238a5f30f04c3a9207df1601ba88bf" in text_note["Message"]
    handed = [json.loads(m["Body"]) for m in sqs.receive_message(QueueUrl=suspects).get("Messages", [])]
    if mode is Mode.ENFORCE:
        (suspect,) = handed
        assert suspect["detail"]["incident_id"] == incident  # the drainer threads under it
    else:
        assert handed == []
        assert text_note["Message"].startswith("DRY RUN — would have sent worker b9238a5f to the drainer")

    resolved = lambda_handler(
        tts_alarm_event("OK", "2026-09-15T18:20:00.000+0000", ("ALARM", opened)),
        LocalLambdaContext(),
        dependencies=deps,
    )
    assert resolved["status"] == "ok"
    (text_ok,) = topics.received(topics.text_queue)
    (chat_ok,) = topics.received(topics.chat_queue)
    save_sample(f"tts-resolved-{mode.value}", text_ok, chat_ok)
    assert json.loads(chat_ok["Message"])["metadata"]["threadId"] == incident
    assert "TTS reach resolved" in text_ok["Subject"]
    assert text_ok["MessageAttributes"]["severity"]["Value"] == "info"
