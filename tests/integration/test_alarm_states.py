"""What each state of each alarm a function listens to does, through its handler: ALARM, OK,
INSUFFICIENT_DATA, and a state CloudWatch does not have (a typed error, nothing done).

- zombie_reaper, the VAD alarm: ALARM reaps; OK and INSUFFICIENT_DATA read nothing, reap nothing.
- worker_drainer, the VAD alarm: ALARM starts a ladder; OK and INSUFFICIENT_DATA only advance the
  ladders in progress (none here: nothing done).
- tts_reach_alarm, the TTS-reach page: ALARM analyses, names the worker and tells; OK tells the
  resolution without a query; INSUFFICIENT_DATA says nothing.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from devkit.fakes.drainer_world import DrainerWorld, alarm_event, moto_world
from devkit.fakes.logs_insights import FakeLogsInsights, insights_row
from devkit.livekit_clients import create_rooms, room_names
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.adapters.idempotency import DynamoDBOnceGuard
from fleet_remediation.adapters.livekit_rooms import LiveKitCredentials, LiveKitRoomService
from fleet_remediation.contract.naming import (
    EVENT_SOURCE,
    SUSPECT_WORKER_DETAIL_TYPE,
    tts_reach_alarm_name,
    vad_alarm_name,
)
from fleet_remediation.contract.settings import ReaperSettings, TtsReachSettings
from fleet_remediation.core.report_model import Mode
from livekit_fleet_remediation.offline.eventbridge_events import alarm_state_change
from livekit_fleet_remediation.offline.fixed_mode import FixedModeSwitch
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from tts_reach_alarm import handler as tts_handler
from tts_reach_alarm.adapters.event_bus import EventBridgePublisher
from tts_reach_alarm.dependencies import TtsReachDependencies
from zombie_reaper import handler as reaper_handler
from zombie_reaper.dependencies import ReaperDependencies

ENV, ACCOUNT, REGION = "it", "123456789012", "eu-west-1"
UNKNOWN_STATE = "PENDING"


class RecordingNotifier:
    """An in-memory notifier: what the function told, in order."""

    def __init__(self) -> None:
        self.subjects: list[str] = []

    def publish(self, subject: str, message: str, attributes: dict[str, str] | None = None) -> str:
        self.subjects.append(subject)
        return f"message-{len(self.subjects)}"


# --- zombie_reaper -----------------------------------------------------------------------------------


def _reap_on(state: str, server: LocalLiveKit) -> tuple[dict[str, Any], set[str], RecordingNotifier]:
    # A room of its own: the server is shared, and the policy manages this room alone.
    rooms = [f"lesson-state-{uuid.uuid4().hex[:8]}"]
    asyncio.run(create_rooms(server, rooms))
    settings = ReaperSettings.model_validate(
        {
            "environment_name": ENV,
            "mode_parameter_name": "/m",
            "notification_topic_arn": f"arn:aws:sns:{REGION}:{ACCOUNT}:t",
            "runbook_base_url": "https://runbooks.example.com/repo",
            "livekit_url": server.http_url,
            "livekit_secret_id": "injected",
            "reaper": {"policy": {"managed_room_pattern": f"^{rooms[0]}$", "max_age_minutes": 60}},
            # Whose VAD alarm the reaper takes.
            "agent_services": [
                {"ecs_cluster": "agents", "ecs_service": "agents", "agent_log_group": "/agents"}
            ],
        }
    )
    credentials = LiveKitCredentials(api_key=server.api_key, api_secret=server.api_secret)
    notifier = RecordingNotifier()
    now = datetime.now(UTC) + timedelta(hours=2)  # the room is past its age
    deps = ReaperDependencies(
        settings=settings,
        mode_switch=FixedModeSwitch(Mode.ENFORCE),
        notifier=notifier,
        room_service_factory=lambda: LiveKitRoomService(server.http_url, credentials, 2.0),
        clock=lambda: now,
    )
    event = alarm_state_change(
        vad_alarm_name(ENV, "agents"), account=ACCOUNT, region=REGION, state=state, now=now
    )
    report = dict(reaper_handler.lambda_handler(event, LocalLambdaContext(), dependencies=deps))
    left = set(rooms) & asyncio.run(room_names(server))
    return report, left, notifier


def test_the_reaper_reaps_on_the_vad_alarms_alarm(livekit_server: LocalLiveKit) -> None:
    report, left, notifier = _reap_on("ALARM", livekit_server)
    assert [a["outcome"] for a in report["actions"]] == ["done"]
    assert left == set()
    assert len(notifier.subjects) == 1


@pytest.mark.parametrize("state", ["OK", "INSUFFICIENT_DATA"])
def test_the_reaper_does_nothing_on_the_vad_alarms_recovery(livekit_server: LocalLiveKit, state: str) -> None:
    report, left, notifier = _reap_on(state, livekit_server)
    assert report["summary"] == {"skipped": f"alarm state {state}: nothing to reap on recovery"}
    assert report["errors"] == report["actions"] == report["candidates"] == []
    assert left
    assert notifier.subjects == []


def test_the_reaper_refuses_a_state_cloudwatch_does_not_have(livekit_server: LocalLiveKit) -> None:
    report, left, notifier = _reap_on(UNKNOWN_STATE, livekit_server)
    assert [e["code"] for e in report["errors"]] == ["InvalidEvent"]
    assert f"unknown alarm state {UNKNOWN_STATE}" in report["errors"][0]["message"]
    assert left
    assert notifier.subjects == []
    assert report["actions"] == []


# --- worker_drainer ----------------------------------------------------------------------------------


@pytest.fixture
def drainer(livekit_server: LocalLiveKit) -> Iterator[DrainerWorld]:
    """A world with one worker slow enough to cordon: a run that may start ladders acts on it."""
    with moto_world(livekit_server) as world:
        world.slow(world.task_ids[0], count=240, minutes=25)
        yield world


def _tasks(world: DrainerWorld) -> Any:
    return {task_id: world.tags(task_id) for task_id in world.task_ids}, world.desired_count()


def test_the_drainer_starts_a_ladder_on_the_vad_alarms_alarm(drainer: DrainerWorld) -> None:
    report = drainer.invoke(alarm_event("ALARM", at=drainer.now))
    assert [(a["resource"], a["action"], a["outcome"]) for a in report["actions"]] == [
        (drainer.task_ids[0], "cordon", "done")
    ]


@pytest.mark.parametrize("state", ["OK", "INSUFFICIENT_DATA"])
def test_the_drainer_starts_nothing_on_the_vad_alarms_recovery(drainer: DrainerWorld, state: str) -> None:
    before = _tasks(drainer)
    report = drainer.invoke(alarm_event(state, at=drainer.now))
    assert report["errors"] == []
    assert report["actions"] == []
    assert report["trigger"]["detail"]["state"] == state
    assert _tasks(drainer) == before


def test_the_drainer_refuses_a_state_cloudwatch_does_not_have(drainer: DrainerWorld) -> None:
    before = _tasks(drainer)
    report = drainer.invoke(alarm_event(UNKNOWN_STATE, at=drainer.now))
    assert [e["code"] for e in report["errors"]] == ["InvalidEvent"]
    assert report["actions"] == []
    assert report["notifications"] == []
    assert _tasks(drainer) == before
    assert drainer.notifications() == []


# --- tts_reach_alarm ---------------------------------------------------------------------------------


@dataclass
class Responder:
    deps: TtsReachDependencies
    insights: FakeLogsInsights
    notifier: RecordingNotifier
    suspects: str

    def on(self, state: str) -> dict[str, Any]:
        now = self.deps.clock()
        event = alarm_state_change(
            tts_reach_alarm_name(ENV, "agents"), account=ACCOUNT, region=REGION, state=state, now=now
        )
        return dict(tts_handler.lambda_handler(event, LocalLambdaContext(), dependencies=self.deps))

    def events_put(self) -> int:
        found = boto3.client("sqs", region_name=REGION).receive_message(QueueUrl=self.suspects)
        return len(found.get("Messages", []))


def _incident() -> list[list[dict[str, str]]]:
    bad = "agent/agent/b9238a5f30f04c3a9207df1601ba88bf"
    failed = [
        insights_row({"job_id": f"AJ_f{i}", "@logStream": bad, "responses": 3, "first_frames": 0})
        for i in range(4)
    ]
    healthy = [
        insights_row(
            {"job_id": f"AJ_ok{i}", "@logStream": f"agent/agent/{i:032x}", "responses": 5, "first_frames": 5}
        )
        for i in range(15)
    ]
    return failed + healthy


@pytest.fixture
def responder() -> Iterator[Responder]:
    with mock_aws():
        sqs, events = boto3.client("sqs", region_name=REGION), boto3.client("events", region_name=REGION)
        suspects = sqs.create_queue(QueueName="suspects")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=suspects, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        pattern = {"source": [EVENT_SOURCE], "detail-type": [SUSPECT_WORKER_DETAIL_TYPE]}
        events.put_rule(Name="suspects", EventPattern=json.dumps(pattern))
        events.put_targets(Rule="suspects", Targets=[{"Id": "queue", "Arn": arn}])
        boto3.client("dynamodb", region_name=REGION).create_table(
            TableName="once",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        settings = TtsReachSettings.model_validate(
            {
                "environment_name": ENV,
                "mode_parameter_name": "/m",
                "notification_topic_arn": f"arn:aws:sns:{REGION}:{ACCOUNT}:t",
                "runbook_base_url": "https://runbooks.example.com/repo",
                "aws_region": REGION,
                "agent_log_group": "/agents",
                "idempotency_table_name": "once",
            }
        )
        insights, notifier = FakeLogsInsights(responses=[_incident(), []]), RecordingNotifier()
        deps = TtsReachDependencies(
            settings=settings,
            mode_switch=FixedModeSwitch(Mode.ENFORCE),
            notifier=notifier,
            events=EventBridgePublisher("default", events),
            insights=insights,
            once=DynamoDBOnceGuard("once"),
        )
        yield Responder(deps, insights, notifier, suspects)


def test_the_responder_analyses_names_the_worker_and_tells_on_the_pages_alarm(responder: Responder) -> None:
    report = responder.on("ALARM")
    assert report["summary"]["verdict"] == "concentrated"
    assert [(a["action"], a["outcome"]) for a in report["actions"]] == [("emit-suspect-worker", "done")]
    assert responder.insights.calls
    assert responder.events_put() == 1
    assert len(responder.notifier.subjects) == 1


def test_the_responder_tells_the_resolution_without_a_query_on_the_pages_ok(responder: Responder) -> None:
    report = responder.on("OK")
    assert report["summary"]["state"] == "OK"
    assert report["actions"] == []
    assert responder.insights.calls == []
    assert responder.events_put() == 0
    assert len(responder.notifier.subjects) == 1


def test_the_responder_says_nothing_on_the_pages_insufficient_data(responder: Responder) -> None:
    report = responder.on("INSUFFICIENT_DATA")
    assert report["summary"] == {"skipped": "state INSUFFICIENT_DATA is neither ALARM nor OK: nothing to say"}
    assert responder.insights.calls == []
    assert responder.events_put() == 0
    assert responder.notifier.subjects == []


def test_the_responder_refuses_a_state_cloudwatch_does_not_have(responder: Responder) -> None:
    report = responder.on(UNKNOWN_STATE)
    assert [e["code"] for e in report["errors"]] == ["InvalidEvent"]
    assert responder.insights.calls == []
    assert responder.events_put() == 0
    assert responder.notifier.subjects == []
