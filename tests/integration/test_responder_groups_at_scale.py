"""The responder at 900 tasks reaches the drainer's verdict with ECS's facts: a bad task-definition
revision on 5 % of the fleet is told as a group event (named in the report and the page, no task
named, no suspect-worker event, so nothing reaches the drainer to drain), a lone silent task is
still named and handed over, and an ECS fact it could not read names nobody and says why.

moto ECS (its tasks, revisions and DescribeTasks; ``EcsTaskPlacement`` adds the zone and start moto
leaves out), SNS, EventBridge and DynamoDB; Logs Insights is the strict ``FakeInsightsClient``
behind the real adapter, at the service profile's p99 on a simulated clock, answering from the
agents' exported lines (six jobs a task in one second: the per-job read is refused, the responder
reads one row per task)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.moto_api import state_manager

from devkit.fakes.drainer_world import alarm_event
from devkit.fakes.ecs_fakes import EcsTaskPlacement, EcsThrottling
from devkit.fakes.logs_insights import FakeInsightsClient, insights_over
from devkit.process_work import own_monotonic
from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.adapters.idempotency import DynamoDBOnceGuard
from fleet_remediation.adapters.notifier import SnsNotifier
from fleet_remediation.contract.budgets import TASK_FACTS_READ
from fleet_remediation.contract.naming import SUSPECT_WORKER_DETAIL_TYPE, tts_reach_alarm_name
from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.core.report_model import Mode
from livekit_fleet_remediation.offline.fixed_mode import FixedModeSwitch
from livekit_fleet_remediation.offline.insights import OfflineLogsInsights
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from livekit_fleet_remediation.offline.log_export import LogEvent
from livekit_fleet_remediation.offline.service_profile import SimulatedClock
from tts_reach_alarm.adapters.event_bus import EventBridgePublisher
from tts_reach_alarm.adapters.task_facts import EcsTaskFacts
from tts_reach_alarm.dependencies import TtsReachDependencies
from tts_reach_alarm.handler import lambda_handler

REGION, CLUSTER = "eu-west-1", "agents"
TASKS, BAD_REVISION_TASKS = 900, 50
ALARM = tts_reach_alarm_name("prod", "agents")
END = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
ZONES = ("eu-west-1a", "eu-west-1b", "eu-west-1c")


@dataclass
class Fleet:
    ecs: Any
    task_ids: list[str]  # the first BAD_REVISION_TASKS run revision agent:2
    notes_queue: str
    suspects_queue: str
    topic: str

    def received(self, queue: str) -> list[dict[str, Any]]:
        sqs = boto3.client("sqs", region_name=REGION)
        found = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        return [json.loads(m["Body"]) for m in found.get("Messages", [])]


def _queue(name: str) -> tuple[str, str]:
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    return url, sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


@pytest.fixture
def fleet() -> Iterator[Fleet]:
    state_manager.set_transition("ecs::task", {"progression": "manual", "times": 1_000_000})
    try:
        with mock_aws():
            ecs = aws_client(TASK_FACTS_READ, region_name=REGION)
            EcsTaskPlacement(ecs, ZONES, END - timedelta(days=1))
            ecs.create_cluster(clusterName=CLUSTER)
            for image in ("agent:1", "agent:2"):
                ecs.register_task_definition(
                    family="agent", containerDefinitions=[{"name": "agent", "image": image, "memory": 512}]
                )
            ids = []
            for start in range(0, TASKS, 10):
                revision = "agent:2" if start < BAD_REVISION_TASKS else "agent:1"
                started = ecs.run_task(
                    cluster=CLUSTER, taskDefinition=revision, count=10, launchType="FARGATE"
                )
                ids += [task["taskArn"].rsplit("/", 1)[-1] for task in started["tasks"]]
            sns = boto3.client("sns", region_name=REGION)
            topic = sns.create_topic(Name="notifications")["TopicArn"]
            notes, notes_arn = _queue("notes")
            sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=notes_arn)
            suspects, suspects_arn = _queue("suspects")
            events = boto3.client("events", region_name=REGION)
            events.put_rule(Name="s", EventPattern=json.dumps({"detail-type": [SUSPECT_WORKER_DETAIL_TYPE]}))
            events.put_targets(Rule="s", Targets=[{"Id": "q", "Arn": suspects_arn}])
            boto3.client("dynamodb", region_name=REGION).create_table(
                TableName="once",
                KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                BillingMode="PAY_PER_REQUEST",
            )
            yield Fleet(ecs, ids, notes, suspects, topic)
    finally:
        state_manager.unset_transition("ecs::task")


def _lines(task_ids: list[str], silent: set[str]) -> list[LogEvent]:
    """Six jobs a task, each one summary line in the same second; a silent task's answers time out."""
    at = END - timedelta(minutes=1)
    events = []
    for task in task_ids:
        stream = f"agent/agent/{task}"
        for job in range(6):
            line = {
                "message": "agent_tts_summary",
                "job_id": f"AJ_{task[:8]}_{job}",
                "tts_endpoint": "tts/eu",
            }
            events.append(
                LogEvent(stream, at, line | {"responses": 2, "first_frames": 0 if task in silent else 2})
            )
            if task in silent:
                timeout = {
                    "message": "tts_first_audio_timeout",
                    "job_id": line["job_id"],
                    "tts_endpoint": "tts/eu",
                }
                events += [LogEvent(stream, at, timeout)] * 2
    return events


def _run(fleet: Fleet, silent: set[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    settings = TtsReachSettings.model_validate(
        {
            "environment_name": "prod",
            "mode_parameter_name": "/lkfr/prod/mode",
            "notification_topic_arn": fleet.topic,
            "runbook_base_url": "https://runbooks.example.com/repo",
            "aws_region": REGION,
            "agent_log_group": "/ppi/livekit/prod/agent",
            "idempotency_table_name": "once",
            "ecs_cluster": CLUSTER,
        }
    )
    clock = SimulatedClock(real=own_monotonic)
    monkeypatch.setattr(time, "monotonic", clock.monotonic)  # the handler's deadline sees the waits
    offline = OfflineLogsInsights(_lines(fleet.task_ids, silent), settings.detection.catalog())
    client = FakeInsightsClient(
        lambda query, start, end: list(offline.run_query("", query, start, end, 0.0).rows),
        clock=clock,
    )
    deps = TtsReachDependencies(
        settings=settings,
        mode_switch=FixedModeSwitch(Mode.ENFORCE),
        notifier=SnsNotifier(fleet.topic, boto3.client("sns", region_name=REGION)),
        events=EventBridgePublisher("default", boto3.client("events", region_name=REGION)),
        insights=insights_over(client),
        once=DynamoDBOnceGuard("once"),
        clock=lambda: END + timedelta(minutes=1),
        task_facts=EcsTaskFacts(CLUSTER, fleet.ecs),
    )
    return lambda_handler(alarm_event("ALARM", ALARM, END), LocalLambdaContext(), dependencies=deps)


def test_a_bad_revision_at_scale_is_a_group_event_and_nothing_goes_to_the_drainer(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = _run(fleet, set(fleet.task_ids[:BAD_REVISION_TASKS]), monkeypatch)
    assert report["status"] == "ok", report["errors"]
    summary = report["summary"]
    assert summary["verdict"] == "group event"
    assert (
        f"{BAD_REVISION_TASKS} of the {BAD_REVISION_TASKS} tasks with task definition agent:2 fail"
        in (summary["group_event"])
    )
    assert summary["task_facts"] == f"ECS facts of {TASKS} running task(s)"
    assert report["candidates"] == []
    assert report["actions"] == []
    (note,) = fleet.received(fleet.notes_queue)
    assert "(group event: task definition=agent:2); nothing drained" in note["Subject"]
    assert "Shared by a group of tasks, not one worker's" in note["Message"]
    assert not any(task in note["Message"] for task in fleet.task_ids)
    assert fleet.received(fleet.suspects_queue) == []


def test_a_lone_silent_task_at_scale_is_still_named_and_handed_to_the_drainer(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    silent = fleet.task_ids[500]
    report = _run(fleet, {silent}, monkeypatch)
    assert report["status"] == "ok", report["errors"]
    assert report["summary"]["verdict"] == "concentrated"
    (suspect,) = fleet.received(fleet.suspects_queue)
    assert suspect["detail"]["task_id"] == silent


def test_an_ecs_fact_it_could_not_read_names_nobody_and_the_page_says_why(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    EcsThrottling(fleet.ecs, "DescribeTasks", times=1)  # the first hundred tasks' facts
    report = _run(fleet, {fleet.task_ids[500]}, monkeypatch)
    (error,) = report["errors"]
    assert "ECS DescribeTasks failed: ThrottlingException" in error["message"]
    summary = report["summary"]
    assert summary["verdict"] == "inconclusive"
    assert summary["task_facts"].startswith(f"ECS facts of {TASKS - 100} running task(s); unknown for 100")
    (note,) = fleet.received(fleet.notes_queue)
    assert "a group by zone, revision or start could not be ruled out" in note["Message"]
    assert fleet.task_ids[500] not in note["Message"]
    assert fleet.received(fleet.suspects_queue) == []
