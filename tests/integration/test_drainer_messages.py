"""The drainer's messages end to end, in the shared model: moto ECS/DynamoDB/SSM/SNS/EventBridge
(an e-mail topic and a chat topic, each read through an SQS subscription), agent logs evaluated
offline, and the real livekit-server.

* one incident, one thread: the TTS-reach ALARM → the responder (its suspect-worker event, taken
  from the EventBridge rule's queue) → the drainer's cordon → the drainer's stop on a later tick →
  the responder's "resolved": every message carries the same incident id; and the same path under
  the service profile's p99 (``offline.service_profile``): CloudWatch's alarm delay, Insights reads
  that take their p99 (on a simulated clock the handlers' deadlines ride), EventBridge delivery and
  a cold start before the drainer, ECS throttling and stale tags after writes (``EcsAsTheProfileSays``),
  and a replacement that takes its p99 to start, which the stop waits for;
* a VAD-alarm ladder (reap, then cordon and stop on schedule ticks) threads under that alarm's
  incident, recorded on the task at its first rung; a hand drain and its undrain share one;
* samples of the drainer's e-mail and chat messages, dry run and enforce (the chat JSON validated
  against the custom-notification schema), written to ``build/samples/``;
* a lost notification fails the invocation after its report; Lambda's retry of it does not act
  again (every step re-reads its task) and delivers the held message to the channel that lost it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import jsonschema
import pytest
from livekit import api

from devkit.fakes.drainer_world import (
    CHAT_TOPIC,
    MODE_PARAMETER,
    TOPIC,
    DrainerWorld,
    alarm_event,
    moto_world,
    schedule_event,
)
from devkit.fakes.ecs_profile import EcsAsTheProfileSays
from devkit.fakes.profiled_logs import ProfiledLogsInsights, ProfiledWorkerLogs
from devkit.fakes.sns_faults import SnsThrottling
from devkit.livekit_local import LocalLiveKit
from devkit.process_work import own_monotonic
from fleet_remediation.adapters.idempotency import DynamoDBOnceGuard
from fleet_remediation.adapters.notifier import SnsNotifier
from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.core.errors import NotificationLostError
from fleet_remediation.core.kill_switch import SsmModeSwitch
from livekit_fleet_remediation.offline.insights import OfflineLogsInsights
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from livekit_fleet_remediation.offline.service_profile import AWS_PROFILE, SimulatedClock
from tests.chat_notification_schema import CHAT_NOTIFICATION_SCHEMA
from tests.message_samples import save_sample
from tts_reach_alarm import handler as responder_handler
from tts_reach_alarm.adapters.event_bus import EventBridgePublisher
from tts_reach_alarm.dependencies import TtsReachDependencies
from worker_drainer.adapters.ledger import LEDGER_ACTIONS
from worker_drainer.adapters.outbox import OUTBOX_ACTIONS
from worker_drainer.decide.task_tags import INCIDENT_TAG, STATE_TAG

pytestmark = pytest.mark.livekit
RESPONDER_ONCE = "it-responder-once"
TTS_ALARM = "livekit-it-agents-tts-reach"


@pytest.fixture
def world(livekit_server: LocalLiveKit) -> Iterator[DrainerWorld]:
    with moto_world(livekit_server) as built:
        yield built


def incident_of(envelope: dict[str, Any]) -> str:
    """The incident a delivered message names: the e-mail's "Incident" line, the chat's thread."""
    if envelope["Message"].startswith("{"):
        return str(json.loads(envelope["Message"])["metadata"]["threadId"])
    line = next(row for row in envelope["Message"].splitlines() if row.startswith("Incident "))
    return line.removeprefix("Incident ")


def delivered(world: DrainerWorld) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(e-mail envelopes, chat envelopes) published since the last call; every chat message is
    checked against the custom-notification schema."""
    emails, chats = world.received(TOPIC), world.received(CHAT_TOPIC)
    for chat in chats:
        jsonschema.validate(json.loads(chat["Message"]), CHAT_NOTIFICATION_SCHEMA)
    return emails, chats


def tts_alarm(world: DrainerWorld, state: str, previous: str, previous_at: str) -> dict[str, Any]:
    at = world.now.strftime("%Y-%m-%dT%H:%M:%S.000+0000")
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch",
        "account": "123456789012",
        "time": at,
        "region": "eu-west-1",
        "resources": [f"arn:aws:cloudwatch:eu-west-1:123456789012:alarm:{TTS_ALARM}"],
        "detail": {
            "alarmName": TTS_ALARM,
            "state": {"value": state, "reason": "Threshold Crossed", "timestamp": at},
            "previousState": {"value": previous, "reason": "", "timestamp": previous_at},
            "configuration": {"metrics": []},
        },
    }


def responder(world: DrainerWorld) -> TtsReachDependencies:
    """The TTS responder of the same environment, reading the world's agent logs offline and
    publishing to the same topics and the default event bus."""
    sns = boto3.client("sns")
    settings = TtsReachSettings.model_validate(
        {
            "environment_name": "it",
            "mode_parameter_name": MODE_PARAMETER,
            "notification_topic_arn": sns.create_topic(Name=TOPIC)["TopicArn"],
            "chat_topic_arn": sns.create_topic(Name=CHAT_TOPIC)["TopicArn"],
            "runbook_base_url": "https://runbooks.example.com/repo",
            "aws_region": "eu-west-1",
            "agent_log_group": "/ppi/livekit/it/agent",
            "idempotency_table_name": RESPONDER_ONCE,
            "ecs_cluster": "agents",
        }
    )
    boto3.client("dynamodb").create_table(
        TableName=RESPONDER_ONCE,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    events = sorted(world.events, key=lambda event: event.at)
    return TtsReachDependencies(
        settings=settings,
        mode_switch=SsmModeSwitch(MODE_PARAMETER, client=boto3.client("ssm")),
        notifier=SnsNotifier(settings.notification_topic_arn),
        chat_notifier=SnsNotifier(str(settings.chat_topic_arn)),
        events=EventBridgePublisher("default", boto3.client("events")),
        insights=OfflineLogsInsights(events, settings.detection.catalog()),
        once=DynamoDBOnceGuard(RESPONDER_ONCE),
        clock=lambda: world.now,
    )


def suspect_events_queue() -> str:
    """An SQS queue that receives the suspect-worker events, as the drainer's rule would."""
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="suspect-workers")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events = boto3.client("events")
    events.put_rule(Name="suspects", EventPattern=json.dumps({"detail-type": ["LiveKit Suspect Worker"]}))
    events.put_targets(Rule="suspects", Targets=[{"Id": "queue", "Arn": arn}])
    return str(url)


def test_one_tts_incident_is_one_thread_from_alarm_to_drainer_to_resolved(world: DrainerWorld) -> None:
    bad = world.task_ids[1]
    for n in range(4):
        world.tts_job(bad, f"AJ_silent_{n}", reached=False, minutes_ago=6)
    for task_id in (world.task_ids[0], world.task_ids[2], world.task_ids[3]):
        for n in range(5):
            world.tts_job(task_id, f"AJ_ok_{task_id[:4]}_{n}", reached=True, minutes_ago=6)
    queue = suspect_events_queue()
    tts = responder(world)
    opened = world.now.strftime("%Y-%m-%dT%H:%M:%S.000+0000")
    alarm = responder_handler.lambda_handler(
        tts_alarm(world, "ALARM", "OK", "2026-09-15T16:00:00.000+0000"),
        LocalLambdaContext(),
        dependencies=tts,
    )
    assert alarm["status"] == "ok", alarm["errors"]
    (handed,) = boto3.client("sqs").receive_message(QueueUrl=queue)["Messages"]
    # moto's delivery leaves out the envelope's "account", which EventBridge always sets, and stamps
    # the real time, while the world's clock runs ahead: EventBridge stamps the time it was put.
    suspect = {
        **json.loads(handed["Body"]),
        "account": "123456789012",
        "time": f"{world.now:%Y-%m-%dT%H:%M:%SZ}",
    }
    incident = suspect["detail"]["incident_id"]
    assert incident == f"it.{TTS_ALARM}.{world.now:%Y%m%dT%H%M%SZ}"

    cordoned = world.invoke(suspect)
    assert [(a["resource"], a["action"], a["outcome"]) for a in cordoned["actions"]] == [
        (bad, "cordon", "done")
    ]
    assert world.tags(bad)[INCIDENT_TAG] == incident
    world.run_service_scheduler()
    world.now += timedelta(minutes=1)
    stopped = world.invoke(schedule_event(world.now))
    assert [(a["action"], a["outcome"]) for a in stopped["actions"]] == [("stop", "done")]
    world.now += timedelta(minutes=20)
    resolved = responder_handler.lambda_handler(
        tts_alarm(world, "OK", "ALARM", opened), LocalLambdaContext(), dependencies=tts
    )
    assert resolved["status"] == "ok"

    emails, chats = delivered(world)
    assert [e["Subject"] for e in emails] == [
        f"[it/agents] 4 sessions had no TTS audio, mostly worker {bad[:8]}; sent to the drainer",
        f"[it/agents] worker drainer cordoned task {bad[:8]}",
        f"[it/agents] worker drainer stopped task {bad[:8]}",
        f"[it/agents] TTS reach resolved: {TTS_ALARM} is OK",
    ]
    assert len(chats) == 4
    assert {incident_of(message) for message in emails + chats} == {incident}
    assert {e["MessageAttributes"]["incident_id"]["Value"] for e in emails} == {incident}
    save_sample("drainer-tts-suspect-enforce", emails[1], chats[1])


def _suspect_from(queue: str, put_at: str) -> dict[str, Any]:
    (handed,) = boto3.client("sqs").receive_message(QueueUrl=queue)["Messages"]
    # moto's delivery leaves out the envelope's "account" and stamps the real time (see above).
    return {**json.loads(handed["Body"]), "account": "123456789012", "time": put_at}


def test_the_tts_incident_holds_under_the_service_profile(
    world: DrainerWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile, p99 = AWS_PROFILE, 0.99
    clock = SimulatedClock(real=own_monotonic)
    monkeypatch.setattr(time, "monotonic", clock.monotonic)  # the handlers' deadlines see the waits

    def wait(seconds: float) -> None:
        world.now += timedelta(seconds=seconds)
        clock.sleep(seconds)

    bad = world.task_ids[1]
    for n in range(4):
        world.tts_job(bad, f"AJ_silent_{n}", reached=False, minutes_ago=3)
    for task_id in (world.task_ids[0], world.task_ids[2], world.task_ids[3]):
        for n in range(5):
            world.tts_job(task_id, f"AJ_ok_{task_id[:4]}_{n}", reached=True, minutes_ago=3)
    queue = suspect_events_queue()
    wait(profile.alarm_evaluation_delay_seconds(p99) + profile.event_to_handler_seconds(p99))
    tts = responder(world)
    tts.insights = ProfiledLogsInsights(tts.insights, clock)
    alarm = responder_handler.lambda_handler(
        tts_alarm(world, "ALARM", "OK", "2026-09-15T16:00:00.000+0000"),
        LocalLambdaContext(),
        dependencies=tts,
    )
    assert alarm["status"] == "ok", alarm["errors"]
    suspect = _suspect_from(queue, f"{world.now:%Y-%m-%dT%H:%M:%SZ}")
    wait(profile.event_to_handler_seconds(p99))

    ecs = world.own_ecs_client()
    ecs_profile = EcsAsTheProfileSays(ecs, clock=lambda: world.now.timestamp())
    deps = world.dependencies(ecs_client=ecs)
    deps.worker_logs = ProfiledWorkerLogs(world.events, clock)
    cordoned = world.invoke(suspect, deps)
    assert [(a["resource"], a["action"], a["outcome"]) for a in cordoned["actions"]] == [
        (bad, "cordon", "done")
    ], cordoned
    # A minute on, the replacement is still starting (the profile's p99 is longer): no stop.
    wait(profile.tick_start_seconds(p99) + 30)
    waiting = world.invoke(schedule_event(world.now), deps)
    assert [a["action"] for a in waiting["actions"]] == [], waiting
    assert world.tags(bad)[STATE_TAG] == "draining"
    wait(profile.ecs_task_start_seconds.at(p99))
    world.run_service_scheduler()
    wait(profile.tick_start_seconds(p99))
    stopped = world.invoke(schedule_event(world.now), deps)
    assert [(a["action"], a["outcome"]) for a in stopped["actions"]] == [("stop", "done")], stopped
    assert ecs_profile.throttled == 0  # a cordon and a stop stay well inside ECS's buckets

    emails, _ = delivered(world)
    assert [e["Subject"] for e in emails] == [
        f"[it/agents] 4 sessions had no TTS audio, mostly worker {bad[:8]}; sent to the drainer",
        f"[it/agents] worker drainer cordoned task {bad[:8]}",
        f"[it/agents] worker drainer stopped task {bad[:8]}",
    ]


async def _room(server: LocalLiveKit, name: str) -> str:
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as client:
        return str((await client.room.create_room(api.CreateRoomRequest(name=name))).sid)


def test_a_vad_ladder_threads_under_its_alarm_and_a_hand_drain_under_its_own(world: DrainerWorld) -> None:
    bad, by_hand = world.task_ids[0], world.task_ids[3]
    room = f"lesson-zombie-{uuid.uuid4().hex[:6]}"
    world.job_request(bad, "AJ_zombie", room, asyncio.run(_room(world.livekit, room)), minutes_ago=150)
    world.slow(bad, count=240, minutes=25)
    opened = f"it.livekit-it-agents-vad-slow-inference.{world.now:%Y%m%dT%H%M%SZ}"
    steps = [world.invoke(alarm_event(at=world.now))]  # the first rung: its over-age room is deleted
    assert world.tags(bad)[INCIDENT_TAG] == opened
    world.now += timedelta(minutes=5)
    world.slow(bad, count=30, minutes=4)
    steps.append(world.invoke(schedule_event(world.now)))  # still slow after the grace: cordoned
    world.run_service_scheduler()
    world.now += timedelta(minutes=1)
    steps.append(world.invoke(schedule_event(world.now)))  # no job left: stopped
    assert [[(a["action"], a["outcome"]) for a in s["actions"]] for s in steps] == [
        [("reap", "done")],
        [("cordon", "done")],
        [("stop", "done")],
    ]
    emails, chats = delivered(world)
    assert [incident_of(m) for m in emails] == [opened] * 3
    assert [incident_of(m) for m in chats] == [opened] * 3

    drained = world.invoke({"action": "drain", "task": by_hand, "dry_run": False})
    assert [(a["action"], a["outcome"]) for a in drained["actions"]] == [("cordon", "done")]
    own = world.tags(by_hand)[INCIDENT_TAG]
    assert own.startswith("it.agents-worker-drainer.")  # a run of its own, not the alarm's incident
    world.invoke({"action": "undrain", "task": by_hand, "dry_run": False})
    assert INCIDENT_TAG not in world.tags(by_hand)  # removed with the other marks
    emails, chats = delivered(world)
    save_sample("drainer-hand-drain", emails[0], chats[0])
    save_sample("drainer-undrain", emails[1], chats[1])
    assert [(e["Subject"], incident_of(e)) for e in emails] == [
        (f"[it/agents] worker drainer cordoned task {by_hand[:8]}", own),
        (f"[it/agents] worker drainer un-drained task {by_hand[:8]}", own),
    ]


@pytest.mark.parametrize("mode", ["dry-run", "enforce"])
def test_drainer_message_samples_in_both_renderings(world: DrainerWorld, mode: str) -> None:
    bad = world.task_ids[2]
    world.slow(bad, count=240, minutes=25)
    world.set_mode(mode)
    report = world.invoke(alarm_event(at=world.now))
    ((email,), (chat,)) = delivered(world)
    save_sample(f"drainer-{mode}", email, chat)
    text, note = email["Message"], json.loads(chat["Message"])
    incident = f"it.livekit-it-agents-vad-slow-inference.{world.now:%Y%m%dT%H%M%SZ}"
    assert incident_of(email) == note["metadata"]["threadId"] == incident
    assert email["MessageAttributes"]["severity"]["Value"] == "warning"
    assert email["MessageAttributes"]["notification_kind"]["Value"] == "worker_drainer"
    assert f"cordon {bad}: degraded: resident: 239 warnings" in text
    assert f"/ecs/v2/clusters/agents/tasks/{bad}/configuration?region=eu-west-1" in text
    assert "#alarmsV2:alarm/livekit-it-agents-vad-slow-inference" in text
    if mode == "dry-run":
        assert report["actions"] == []
        assert email["Subject"] == f"[it/agents] DRY RUN - would have cordoned task {bad[:8]}"
        assert (
            note["content"]["title"] == f":warning: [it/agents] DRY RUN — would have cordoned task {bad[:8]}"
        )
        assert "would act 1 · done 0" in text
        assert "livekit-drainer:exclude,value=true" in text
        assert STATE_TAG not in world.tags(bad)
    else:
        assert [(a["action"], a["outcome"]) for a in report["actions"]] == [("cordon", "done")]
        assert email["Subject"] == f"[it/agents] worker drainer cordoned task {bad[:8]}"
        assert "done 1 · already done 0 · refused 0 · failed 0 · unknown 0" in text
        undrain = next(step for step in note["content"]["nextSteps"] if "undrain" in step)
        assert "--cli-binary-format raw-in-base64-out" in undrain


def test_a_lost_message_fails_the_run_and_its_retry_delivers_it_without_acting_again(
    world: DrainerWorld,
) -> None:
    bad = world.task_ids[0]
    world.slow(bad, count=240, minutes=25)
    desired = world.desired_count()
    # Every DynamoDB operation from here on (the ledger, the outbox, the once-keys; the test's own
    # audit reads are Queries): each must be one the stack grants on the ledger table.
    operations: set[str] = set()
    boto3._get_default_session().events.register(
        "before-call.dynamodb", lambda model, **_: operations.add(f"dynamodb:{model.name}")
    )
    sns = boto3.client("sns")
    deps = world.dependencies(sns_client=sns)
    # SNS refuses the first publish (the e-mail) for good; the chat copy goes out.
    refusing = SnsThrottling(sns, times=1, code="AuthorizationError")
    first_attempt = LocalLambdaContext()
    with pytest.raises(NotificationLostError):
        world.invoke(alarm_event(at=world.now), deps, first_attempt)
    assert world.tags(bad)[STATE_TAG] == "draining"
    assert world.desired_count() == desired + 1
    emails, chats = delivered(world)
    assert (emails, len(chats)) == ([], 1)

    # Lambda retries the same event with the same request id: SNS refuses the held e-mail again, so
    # the retry fails too and the message stays held.
    refusing.remaining = 1
    retry = LocalLambdaContext()
    retry.aws_request_id = first_attempt.aws_request_id
    with pytest.raises(NotificationLostError):
        world.invoke(alarm_event(at=world.now), deps, retry)
    assert delivered(world) == ([], [])
    # Lambda's second retry: SNS takes messages again.
    retry = LocalLambdaContext()
    retry.aws_request_id = first_attempt.aws_request_id
    report = world.invoke(alarm_event(at=world.now), dataclasses.replace(deps), retry)
    assert report["status"] == "ok", report["errors"]
    assert report["actions"] == []  # the task is draining already: nothing done twice
    assert report["summary"]["held_notifications"] == "1 of 1 delivered"
    assert world.desired_count() == desired + 1
    assert [e["action"] for e in world.audit(bad)] == ["cordon"]
    emails, chats = delivered(world)
    assert [e["Subject"] for e in emails] == [f"[it/agents] worker drainer cordoned task {bad[:8]}"]
    assert chats == []  # its once-key replays: the chat copy is not sent twice
    # A later retry finds the outbox empty.
    again = LocalLambdaContext()
    again.aws_request_id = first_attempt.aws_request_id
    assert "held_notifications" not in world.invoke(alarm_event(at=world.now), deps, again)["summary"]
    assert {"dynamodb:GetItem", "dynamodb:UpdateItem"} <= operations  # the outbox and once-keys ran
    assert operations <= set(LEDGER_ACTIONS) | set(OUTBOX_ACTIONS)
