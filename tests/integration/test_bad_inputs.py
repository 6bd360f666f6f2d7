"""A corpus of bad inputs, thrown at the three functions' handlers: wrong types, huge strings,
unknown keys, malformed EventBridge envelopes, detail-types a function does not handle, alarm events
for other alarms, events that are not JSON objects, and each function's own manual options; and,
for every EventBridge route of every function, the forgeries of ``tests/door_corpus.py``: foreign
source, account and region, the wrong detail-type or alarm ARN, wrong types, naive, stale and
future times, oversize free text and unknown alarm states.

Every one must end as one report with a typed error (``InvalidEvent`` or a subclass), no
candidate, no action, a report of bounded size (a bad input is quoted as an excerpt, never whole),
and no side effect: the worlds are set up so that a bad input taken for a real run *would* act
(kill switch ``enforce``, rooms past their age, an incident in the logs, a task to drain), and their
state - LiveKit rooms on the real livekit-server, moto's SNS, EventBridge, DynamoDB and ECS - is
compared before and after each invocation. The session ends with the tally (``bad inputs: ...``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.moto_api import state_manager

from devkit.fakes.drainer_world import DrainerWorld, build_world
from devkit.fakes.logs_insights import FakeLogsInsights, insights_row
from devkit.livekit_clients import create_rooms, room_names
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.adapters.idempotency import DynamoDBOnceGuard
from fleet_remediation.adapters.livekit_rooms import LiveKitCredentials, LiveKitRoomService
from fleet_remediation.adapters.notifier import SnsNotifier
from fleet_remediation.contract.naming import (
    EVENT_SOURCE,
    SUSPECT_WORKER_DETAIL_TYPE,
    tts_reach_alarm_name,
    vad_alarm_name,
)
from fleet_remediation.contract.settings import ReaperSettings, TtsReachSettings
from fleet_remediation.core.kill_switch import SsmModeSwitch
from fleet_remediation.core.report_model import Mode
from livekit_fleet_remediation.offline.fixed_mode import FixedModeSwitch
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from tests.bad_input_tally import tally
from tests.door_corpus import Forged, forged
from tts_reach_alarm import handler as tts_handler
from tts_reach_alarm.adapters.event_bus import EventBridgePublisher
from tts_reach_alarm.dependencies import TtsReachDependencies
from zombie_reaper import handler as reaper_handler
from zombie_reaper.dependencies import ReaperDependencies

ENV = "it"
REGION = "eu-west-1"
MEGABYTE = 1_000_000
# The report of a rejected input: the error, the (bounded) trigger, nothing else of size.
MAX_REJECTION_REPORT_BYTES = 4096
REAPER_MODE_PARAMETER = "/livekit-fleet-remediation/corpus/mode"
# The codes of a refused event (the tally counts any of them; each case asserts its own).
REFUSALS = {"InvalidEvent", "UntrustedEvent", "UnknownAlarm"}


# Stands for the world's clock in an event: the corpus's envelopes are fresh, so each is refused for
# what is wrong with it, not for its age.
NOW_TOKEN = "<the world's now>"


@dataclass(frozen=True)
class BadInput:
    name: str
    event: Any
    code: str = "InvalidEvent"


def envelope(detail_type: str, detail: Any, **overrides: Any) -> dict[str, Any]:
    name = detail.get("alarmName") if isinstance(detail, dict) else None
    event: dict[str, Any] = {
        "version": "0",
        "id": "7bf73129-1428-4cd3-a780-95db273d1602",
        "detail-type": detail_type,
        "source": "aws.cloudwatch",
        "account": "123456789012",
        "time": NOW_TOKEN,
        "region": REGION,
        "resources": [f"arn:aws:cloudwatch:eu-west-1:123456789012:alarm:{name}"],
        "detail": detail,
    }
    event.update(overrides)
    return event


def alarm_detail(name: str, **state: Any) -> dict[str, Any]:
    return {
        "alarmName": name,
        "state": {"value": "ALARM", "reason": "crossed", "timestamp": NOW_TOKEN, **state},
        "previousState": {"value": "OK", "reason": "", "timestamp": "2026-09-15T17:00:00.000+0000"},
        "configuration": {},
    }


def at_now(event: Any, now: datetime) -> Any:
    """``event`` with the world's clock for ``NOW_TOKEN``."""
    if isinstance(event, dict):
        return {key: at_now(value, now) for key, value in event.items()}
    if isinstance(event, list):
        return [at_now(value, now) for value in event]
    return now.strftime("%Y-%m-%dT%H:%M:%SZ") if event == NOW_TOKEN else event


def without(mapping: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if k not in keys}


WRONG_DRY_RUNS: tuple[object, ...] = ("false", "no", 0, 1, "true", None, [], {}, 0.0, "False")


def generic_corpus(own_alarm: str, other_alarm: str) -> list[BadInput]:
    """What every function must reject the same way."""
    alarm = "CloudWatch Alarm State Change"
    good_detail = alarm_detail(own_alarm)
    huge = "x" * MEGABYTE
    return [
        # Events that are not JSON objects.
        BadInput("event null", None),
        BadInput("event list", []),
        BadInput("event string", "dry_run"),
        BadInput("event integer", 0),
        BadInput("event float", 1.5),
        BadInput("event boolean", True),
        BadInput("event list of objects", [{"dry_run": False}]),
        # dry_run of the wrong type: never taken for "enforce".
        *(BadInput(f"dry_run {value!r}", {"dry_run": value}) for value in WRONG_DRY_RUNS),
        # Unknown keys.
        BadInput("misspelt dry_run key", {"dryrun": False}),
        BadInput("upper-case DRY_RUN key", {"DRY_RUN": False}),
        BadInput("a 1 MB key", {"dry_run": True, "k" * MEGABYTE: 1}),
        BadInput("empty key", {"": 1}),
        BadInput("nested unknown key", {"dry_run": False, "extra": {"nested": True}}),
        # Huge strings.
        BadInput("1 MB dry_run", {"dry_run": huge}),
        BadInput("1 MB value of an unknown key", {"dry_run": True, "note": huge}),
        # Malformed EventBridge envelopes (of a detail-type the function handles).
        BadInput("envelope without detail", without(envelope(alarm, good_detail), "detail")),
        BadInput("envelope detail a string", envelope(alarm, "ALARM")),
        BadInput("envelope detail null", envelope(alarm, None)),
        BadInput("envelope time not a time", envelope(alarm, good_detail, time="yesterday")),
        BadInput("envelope resources a string", envelope(alarm, good_detail, resources="arn:aws:x")),
        BadInput("envelope without id", without(envelope(alarm, good_detail), "id")),
        BadInput("envelope without account", without(envelope(alarm, good_detail), "account")),
        BadInput("envelope region a number", envelope(alarm, good_detail, region=5)),
        BadInput("envelope without version", without(envelope(alarm, good_detail), "version")),
        # Detail-types the function does not handle.
        BadInput("EC2 detail-type", envelope("EC2 Instance State-change Notification", {})),
        BadInput("empty detail-type", envelope("", {})),
        BadInput("detail-type in other case", envelope("scheduled event", {})),
        BadInput("1 MB detail-type", envelope(huge, {})),
        BadInput("detail-type null", envelope(alarm, good_detail, **{"detail-type": None})),
        # Alarm events for other alarms, or not quite alarm events.
        BadInput("another function's alarm", envelope(alarm, alarm_detail(other_alarm)), "UnknownAlarm"),
        BadInput(
            "the same alarm of another environment",
            envelope(alarm, alarm_detail(own_alarm.replace(f"-{ENV}-", "-prod-"))),
            "UnknownAlarm",
        ),
        BadInput("1 MB alarm name", envelope(alarm, alarm_detail(huge))),
        BadInput("alarm name a number", envelope(alarm, alarm_detail(123))),  # type: ignore[arg-type]
        BadInput("alarm detail without alarmName", envelope(alarm, without(good_detail, "alarmName"))),
        BadInput("alarm detail without state", envelope(alarm, without(good_detail, "state"))),
        BadInput(
            "alarm state without value",
            envelope(alarm, {**good_detail, "state": without(good_detail["state"], "value")}),
        ),
        BadInput(
            "alarm state timestamp not a time", envelope(alarm, alarm_detail(own_alarm, timestamp="soon"))
        ),
        BadInput("1 MB alarm state", envelope(alarm, alarm_detail(own_alarm, value=huge))),
    ]


REAPER_ALARM, TTS_ALARM = vad_alarm_name(ENV, "agents"), tts_reach_alarm_name(ENV, "agents")

REAPER_CORPUS = [
    *generic_corpus(REAPER_ALARM, TTS_ALARM),
    BadInput("max_age_seconds a string", {"dry_run": False, "max_age_seconds": "60"}),
    BadInput("max_age_seconds a float", {"dry_run": False, "max_age_seconds": 60.5}),
    BadInput("max_age_seconds negative", {"dry_run": False, "max_age_seconds": -1}),
    BadInput("max_age_seconds zero", {"dry_run": False, "max_age_seconds": 0}),
    BadInput("max_age_seconds below a minute", {"dry_run": False, "max_age_seconds": 59}),
    BadInput("max_age_seconds a boolean", {"dry_run": False, "max_age_seconds": True}),
    BadInput("max_age_seconds huge", {"dry_run": False, "max_age_seconds": 10**30}),
    BadInput("max_age_seconds not stricter than the policy", {"dry_run": False, "max_age_seconds": 3600}),
    BadInput("suspect-worker event to the reaper", envelope(SUSPECT_WORKER_DETAIL_TYPE, {})),
]

TTS_CORPUS = [
    *generic_corpus(TTS_ALARM, REAPER_ALARM),
    BadInput("window_minutes a string", {"dry_run": False, "window_minutes": "30"}),
    BadInput("window_minutes zero", {"dry_run": False, "window_minutes": 0}),
    BadInput("window_minutes huge", {"dry_run": False, "window_minutes": 10**9}),
    BadInput("window_minutes a boolean", {"dry_run": False, "window_minutes": True}),
    BadInput("window_minutes a float", {"dry_run": False, "window_minutes": 30.0}),
    BadInput("window_end a number", {"dry_run": False, "window_end": 1_789_000_000}),
    BadInput("window_end not a time", {"dry_run": False, "window_end": "after lunch"}),
    BadInput("window_end without a zone", {"dry_run": False, "window_end": "2026-09-15T17:50:00"}),
    BadInput("1 MB window_end", {"dry_run": False, "window_end": "2" * MEGABYTE}),
    BadInput("a schedule event from CloudWatch", envelope("Scheduled Event", {}), "UntrustedEvent"),
]

DRAINER_CORPUS = [
    *generic_corpus(REAPER_ALARM, TTS_ALARM),
    BadInput("action unknown", {"dry_run": False, "action": "stop"}),
    BadInput("action upper case", {"dry_run": False, "action": "DRAIN"}),
    BadInput("action a number", {"dry_run": False, "action": 1}),
    BadInput("action null", {"dry_run": False, "action": None}),
    BadInput("task a number", {"dry_run": False, "action": "drain", "task": 123}),
    BadInput("1 MB task", {"dry_run": False, "action": "drain", "task": "t" * MEGABYTE}),
    BadInput("drain without a task", {"dry_run": False, "action": "drain"}),
    BadInput("plan with a task", {"dry_run": False, "action": "plan", "task": "abc"}),
    BadInput(
        "suspect-worker detail empty",
        envelope(SUSPECT_WORKER_DETAIL_TYPE, {}, source=EVENT_SOURCE, resources=[]),
    ),
    BadInput(
        "suspect-worker detail a list",
        envelope(SUSPECT_WORKER_DETAIL_TYPE, [], source=EVENT_SOURCE, resources=[]),
    ),
    BadInput(
        "suspect-worker p-value above 1",
        envelope(
            SUSPECT_WORKER_DETAIL_TYPE,
            {
                "environment": ENV,
                "log_stream": "agent/c/abc",
                "task_id": "abc",
                "alarm_name": TTS_ALARM,
                "p_value": 2,
                "window": {"start": "2026-09-15T17:00:00Z", "end": "2026-09-15T17:30:00Z"},
            },
            source=EVENT_SOURCE,
            resources=[],
        ),
    ),
]


# --- the worlds: each would act on a real run ------------------------------------------------------


@dataclass
class World:
    invoke: Callable[[Any], dict[str, Any]]
    state: Callable[[], Any]
    # The clock the function runs by: the corpus's events are sent at its time.
    now: Callable[[], datetime]
    task_ids: list[str] = field(default_factory=list)


def _queue_for_topic(topic_arn: str, name: str) -> str:
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    boto3.client("sns", region_name=REGION).subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=arn)
    return url


def _queued(url: str) -> int:
    attributes = boto3.client("sqs", region_name=REGION).get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )


def _items(table: str) -> list[dict[str, Any]]:
    return list(boto3.client("dynamodb", region_name=REGION).scan(TableName=table)["Items"])


@pytest.fixture(scope="module")
def aws() -> Iterator[None]:
    """One moto for the module's three worlds (moto's state is per process). ECS tasks stay RUNNING
    (moto otherwise walks them through their life cycle on every read)."""
    state_manager.set_transition("ecs::task", {"progression": "manual", "times": 1_000_000})
    try:
        with mock_aws():
            yield
    finally:
        state_manager.unset_transition("ecs::task")


@pytest.fixture(scope="module")
def reaper_world(livekit_server: LocalLiveKit, aws: None) -> World:
    rooms = [f"lesson-corpus-{i}" for i in range(3)]
    asyncio.run(create_rooms(livekit_server, rooms))
    boto3.client("ssm", region_name=REGION).put_parameter(
        Name=REAPER_MODE_PARAMETER, Value="enforce", Type="String"
    )
    topic = boto3.client("sns", region_name=REGION).create_topic(Name="corpus-reaper")["TopicArn"]
    inbox = _queue_for_topic(topic, "corpus-reaper-inbox")
    settings = ReaperSettings.model_validate(
        {
            "environment_name": ENV,
            "mode_parameter_name": REAPER_MODE_PARAMETER,
            "notification_topic_arn": topic,
            "runbook_base_url": "https://runbooks.example.com/repo",
            "livekit_url": livekit_server.http_url,
            "livekit_secret_id": "injected",
            "reaper": {
                "livekit_request_timeout_seconds": 2,
                "policy": {"managed_room_pattern": "^lesson-corpus-.+$", "max_age_minutes": 60},
            },
            # Whose VAD alarm the reaper takes.
            "agent_services": [
                {"ecs_cluster": "agents", "ecs_service": "agents", "agent_log_group": "/agents"}
            ],
        }
    )
    credentials = LiveKitCredentials.model_validate(
        {"api_key": livekit_server.api_key, "api_secret": livekit_server.api_secret}
    )
    deps = ReaperDependencies(
        settings=settings,
        mode_switch=SsmModeSwitch(REAPER_MODE_PARAMETER, client=boto3.client("ssm", region_name=REGION)),
        notifier=SnsNotifier(topic, boto3.client("sns", region_name=REGION)),
        room_service_factory=lambda: LiveKitRoomService(livekit_server.http_url, credentials, 2.0),
        # Two hours on: every corpus room is past its max age, so a run taken for real would reap.
        clock=lambda: datetime.now(UTC) + timedelta(hours=2),
    )

    def invoke(event: Any) -> dict[str, Any]:
        return dict(reaper_handler.lambda_handler(event, LocalLambdaContext(), dependencies=deps))

    def state() -> Any:
        corpus_rooms = {name for name in asyncio.run(room_names(livekit_server)) if "corpus" in name}
        return corpus_rooms, _queued(inbox)

    # Armed: a valid enforcing run deletes the rooms (the module's last test shows it).
    return World(invoke, state, deps.clock)


@pytest.fixture(scope="module")
def tts_world(aws: None) -> World:
    sns = boto3.client("sns", region_name=REGION)
    events = boto3.client("events", region_name=REGION)
    sqs = boto3.client("sqs", region_name=REGION)
    topic = sns.create_topic(Name="corpus-tts")["TopicArn"]
    inbox = _queue_for_topic(topic, "corpus-tts-inbox")
    suspects = sqs.create_queue(QueueName="corpus-suspects")["QueueUrl"]
    suspects_arn = sqs.get_queue_attributes(QueueUrl=suspects, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    events.put_rule(
        Name="corpus-suspects",
        EventPattern=json.dumps({"source": [EVENT_SOURCE], "detail-type": [SUSPECT_WORKER_DETAIL_TYPE]}),
    )
    events.put_targets(Rule="corpus-suspects", Targets=[{"Id": "queue", "Arn": suspects_arn}])
    boto3.client("dynamodb", region_name=REGION).create_table(
        TableName="corpus-once",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    settings = TtsReachSettings.model_validate(
        {
            "environment_name": ENV,
            "mode_parameter_name": REAPER_MODE_PARAMETER,
            "notification_topic_arn": topic,
            "runbook_base_url": "https://runbooks.example.com/repo",
            "aws_region": REGION,
            "agent_log_group": "/ppi/livekit/it/agent",
            "idempotency_table_name": "corpus-once",
        }
    )
    bad = "agent/agent/b9238a5f30f04c3a9207df1601ba88bf"
    incident = [
        insights_row({"job_id": f"AJ_f{i}", "@logStream": bad, "responses": 3, "first_frames": 0})
        for i in range(4)
    ] + [
        insights_row(
            {
                "job_id": f"AJ_ok{i}",
                "@logStream": f"agent/agent/{i:032x}",
                "responses": 5,
                "first_frames": 5,
            }
        )
        for i in range(15)
    ]
    insights = FakeLogsInsights(responses=[incident] * 1000)
    deps = TtsReachDependencies(
        settings=settings,
        mode_switch=FixedModeSwitch(Mode.ENFORCE),
        notifier=SnsNotifier(topic, sns),
        events=EventBridgePublisher("default", events),
        insights=insights,
        once=DynamoDBOnceGuard("corpus-once"),
    )

    def invoke(event: Any) -> dict[str, Any]:
        return dict(tts_handler.lambda_handler(event, LocalLambdaContext(), dependencies=deps))

    def state() -> Any:
        return _queued(inbox), _queued(suspects), len(_items("corpus-once")), len(insights.calls)

    return World(invoke, state, deps.clock)


@pytest.fixture(scope="module")
def drainer_world(livekit_server: LocalLiveKit, aws: None) -> World:
    world: DrainerWorld = build_world(livekit_server, datetime.now(UTC))
    deps = world.dependencies()
    inbox = _queue_for_topic(deps.settings.notification_topic_arn, "corpus-drainer-inbox")

    def invoke(event: Any) -> dict[str, Any]:
        return world.invoke(event, deps)

    def state() -> Any:
        tasks = {
            task_id: (world.task(task_id)["lastStatus"], world.tags(task_id)) for task_id in world.task_ids
        }
        return tasks, world.desired_count(), _items("it-drainer-ledger"), _queued(inbox)

    return World(invoke, state, lambda: world.now, world.task_ids)


def _check(world: World, event: Any, code: str, request: pytest.FixtureRequest) -> None:
    before = world.state()
    report = world.invoke(event)
    after = world.state()
    codes = [error["code"] for error in report.get("errors", [])]
    refused = report.get("status") == "failed" and bool(codes) and set(codes) <= REFUSALS
    quiet = after == before and not (report["actions"] or report["notifications"])
    tally(request.config).record(request.node.nodeid, refused, quiet)
    assert report["status"] == "failed", report
    assert [error["code"] for error in report["errors"]] == [code], report["errors"]
    assert report["candidates"] == []
    assert report["actions"] == []
    assert report["notifications"] == []
    size = len(json.dumps(report))
    assert size <= MAX_REJECTION_REPORT_BYTES, f"a {size}-byte report echoes the bad input"
    assert after == before, "a rejected input changed something"


def _check_input(world: World, case: BadInput, request: pytest.FixtureRequest) -> None:
    _check(world, at_now(case.event, world.now()), case.code, request)


@pytest.mark.parametrize("case", REAPER_CORPUS, ids=[c.name for c in REAPER_CORPUS])
def test_the_reaper_rejects(case: BadInput, reaper_world: World, request: pytest.FixtureRequest) -> None:
    _check_input(reaper_world, case, request)


@pytest.mark.parametrize("case", TTS_CORPUS, ids=[c.name for c in TTS_CORPUS])
def test_the_tts_responder_rejects(case: BadInput, tts_world: World, request: pytest.FixtureRequest) -> None:
    _check_input(tts_world, case, request)


@pytest.mark.parametrize("case", DRAINER_CORPUS, ids=[c.name for c in DRAINER_CORPUS])
def test_the_drainer_rejects(case: BadInput, drainer_world: World, request: pytest.FixtureRequest) -> None:
    _check_input(drainer_world, case, request)


@pytest.mark.parametrize("case", [c.param() for c in forged("zombie_reaper")])
def test_the_reaper_refuses_forged_events(
    case: Forged, reaper_world: World, request: pytest.FixtureRequest
) -> None:
    _check(reaper_world, case.event(reaper_world.now()), case.code, request)


@pytest.mark.parametrize("case", [c.param() for c in forged("tts_reach_alarm")])
def test_the_tts_responder_refuses_forged_events(
    case: Forged, tts_world: World, request: pytest.FixtureRequest
) -> None:
    _check(tts_world, case.event(tts_world.now()), case.code, request)


@pytest.mark.parametrize("case", [c.param() for c in forged("worker_drainer")])
def test_the_drainer_refuses_forged_events(
    case: Forged, drainer_world: World, request: pytest.FixtureRequest
) -> None:
    _check(drainer_world, case.event(drainer_world.now()), case.code, request)


def test_the_worlds_are_armed(reaper_world: World, tts_world: World, drainer_world: World) -> None:
    """The same worlds act on a valid input: the corpus's "no side effect" is not for want of any."""
    before = tts_world.state()
    report = tts_world.invoke({"dry_run": False})
    assert report["status"] == "ok", report
    assert tts_world.state() != before
    before = drainer_world.state()
    report = drainer_world.invoke({"dry_run": False, "action": "drain", "task": drainer_world.task_ids[0]})
    assert report["mode"] == "enforce", report
    assert drainer_world.state() != before
    rooms_before, _ = reaper_world.state()
    report = reaper_world.invoke({"dry_run": False})
    assert report["mode"] == "enforce"
    rooms_after, notified = reaper_world.state()
    assert not rooms_after, f"an enforcing run left {rooms_after}"
    assert rooms_before
    assert notified == 1
