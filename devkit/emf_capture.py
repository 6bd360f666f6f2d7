"""Run one function's handler the way Lambda would, so its EMF output can be captured.

``python -m devkit.emf_capture <function>`` is started by a test with the environment variables the
synthesized stack deploys for that function (``POWERTOOLS_SERVICE_NAME``, ``ENVIRONMENT_NAME``, the
settings), the deployed tokens replaced by names the script creates in moto. It builds the
function's dependencies with ``from_environment()`` — the cold-start path — replaces only what moto
lacks (Logs Insights, ECS task protection) and what a local run must (the clock, for the LiveKit
rooms to look old), invokes the handler for a few scenarios and leaves Powertools' EMF lines on
stdout, exactly as CloudWatch Logs would receive them. Never deployed.

Scenarios: the reaper reaps an over-age room on the real livekit-server, then loses a notification
(its topic is gone); the responder analyses a concentrated TTS ALARM, then loses a notification;
the drainer runs a reconcile tick over a moto ECS service, drains a task by hand (its message is
sent), then undrains it and loses that message.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from moto import mock_aws
from moto.moto_api import state_manager

from devkit.fakes.ecs_fakes import EcsManagedTagsSetting, FakeEcsTaskProtection
from devkit.fakes.logs_insights import FakeLogsInsights, insights_row
from devkit.livekit_clients import create_rooms
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.adapters.notifier import SnsNotifier
from fleet_remediation.contract.naming import FunctionName, tts_reach_alarm_name
from fleet_remediation.contract.signals import SignalCatalog
from fleet_remediation.core.errors import NotificationLostError
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from livekit_fleet_remediation.offline.worker_logs import OfflineWorkerLogs

# Rooms created now look this old to the reaper.
CLOCK_AHEAD = timedelta(hours=3)


def _schedule_event(rule: str, at: datetime) -> dict[str, Any]:
    return {
        "version": "0",
        "id": "emf-capture",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": os.environ["AWS_DEFAULT_REGION"],
        "resources": [f"arn:aws:events:{os.environ['AWS_DEFAULT_REGION']}:123456789012:rule/{rule}"],
        "detail": {},
    }


def _alarm_event(alarm_name: str, timestamp: str) -> dict[str, Any]:
    return {
        "version": "0",
        "id": "emf-capture-alarm",
        "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch",
        "account": "123456789012",
        "time": timestamp,
        "region": os.environ["AWS_DEFAULT_REGION"],
        "resources": [
            f"arn:aws:cloudwatch:{os.environ['AWS_DEFAULT_REGION']}:123456789012:alarm:{alarm_name}"
        ],
        "detail": {
            "alarmName": alarm_name,
            "state": {"value": "ALARM", "reason": "Threshold Crossed", "timestamp": timestamp},
            "previousState": {"value": "OK", "reason": "", "timestamp": "2026-09-15T16:00:00.000+0000"},
            "configuration": {},
        },
    }


def _common_aws() -> None:
    """The topics, the kill switches (enforce) and the idempotency table the deployed names point to."""
    for variable in ("NOTIFICATION_TOPIC_ARN", "CHAT_TOPIC_ARN"):
        if os.environ.get(variable):
            boto3.client("sns").create_topic(Name=os.environ[variable].rsplit(":", 1)[1])
    ssm = boto3.client("ssm")
    for variable in ("MODE_PARAMETER_NAME", "FUNCTION_MODE_PARAMETER_NAME"):
        ssm.put_parameter(Name=os.environ[variable], Value="enforce", Type="String")
    table = os.environ.get("IDEMPOTENCY_TABLE_NAME")
    if table:
        boto3.client("dynamodb").create_table(
            TableName=table,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )


def _livekit_secret(server: LocalLiveKit) -> None:
    boto3.client("secretsmanager").create_secret(
        Name=os.environ["LIVEKIT_SECRET_ID"],
        SecretString=json.dumps({"api_key": server.api_key, "api_secret": server.api_secret}),
    )


def _invoke(handler: Any, event: dict[str, Any], deps: Any) -> None:
    # A lost notification is raised after the report and the EMF flush, as Lambda would see it.
    with contextlib.suppress(NotificationLostError):
        handler.lambda_handler(event, LocalLambdaContext(), dependencies=deps)


def _missing_topic() -> SnsNotifier:
    region = os.environ["AWS_DEFAULT_REGION"]
    return SnsNotifier(f"arn:aws:sns:{region}:123456789012:deleted-topic", budget_seconds=0.5)


def capture_reaper(server: LocalLiveKit) -> None:
    from zombie_reaper import handler
    from zombie_reaper.dependencies import ReaperDependencies

    _livekit_secret(server)
    asyncio.run(create_rooms(server, ["lesson-emf-capture-1"]))
    deps = dataclasses.replace(
        ReaperDependencies.from_environment(), clock=lambda: datetime.now(UTC) + CLOCK_AHEAD
    )
    # The agent services the reaper reads for a deployment in progress (none is: it acts).
    ecs = boto3.client("ecs")
    ecs.register_task_definition(
        family="agent", containerDefinitions=[{"name": "agent", "image": "agent:1", "memory": 512}]
    )
    for service in deps.settings.agent_services:
        ecs.create_cluster(clusterName=service.ecs_cluster)
        ecs.create_service(
            cluster=service.ecs_cluster,
            serviceName=service.ecs_service,
            taskDefinition="agent",
            desiredCount=0,
        )
    # Two ticks five minutes apart, the last one at the run's clock: both are fresh at the door.
    now = deps.clock()
    _invoke(handler, _schedule_event("reaper-schedule", now - timedelta(minutes=5)), deps)
    asyncio.run(create_rooms(server, ["lesson-emf-capture-2"]))
    lost = dataclasses.replace(deps, notifier=_missing_topic())
    # The next tick: another scheduled event, so another incident with its own once-keys.
    _invoke(handler, _schedule_event("reaper-schedule", now), lost)


def capture_tts_reach() -> None:
    from tts_reach_alarm import handler
    from tts_reach_alarm.dependencies import TtsReachDependencies

    bad = "agent/agent/b9238a5f30f04c3a9207df1601ba88bf"
    jobs = [
        insights_row({"job_id": f"AJ_fail{i}", "@logStream": bad, "responses": 3, "first_frames": 0})
        for i in range(4)
    ] + [
        insights_row(
            {"job_id": f"AJ_ok{i}", "@logStream": f"agent/agent/{i:032x}", "responses": 5, "first_frames": 5}
        )
        for i in range(15)
    ]
    rooms = [
        insights_row({"job_id": f"AJ_fail{i}", "room": f"room-{i}", "room_id": f"RM_{i}"}) for i in range(4)
    ]
    insights = FakeLogsInsights(responses=[jobs, rooms, jobs, rooms])
    # Two alarms half an hour apart, the run's clock just after the second: both fresh at the door.
    deps = dataclasses.replace(
        TtsReachDependencies.from_environment(),
        insights=insights,
        clock=lambda: datetime(2026, 9, 15, 18, 15, tzinfo=UTC),
    )
    alarm = tts_reach_alarm_name(os.environ["ENVIRONMENT_NAME"], os.environ["AGENT_SERVICE"])
    _invoke(handler, _alarm_event(alarm, "2026-09-15T17:41:00.000+0000"), deps)
    lost = dataclasses.replace(deps, notifier=_missing_topic())
    _invoke(handler, _alarm_event(alarm, "2026-09-15T18:11:00.000+0000"), lost)


def capture_worker_drainer() -> None:
    from worker_drainer import handler
    from worker_drainer.adapters.ecs_tasks import BotoEcsTasks, ecs_client_config
    from worker_drainer.dependencies import DrainerDependencies

    settings = DrainerDependencies.from_environment().settings
    ecs = boto3.client("ecs", config=ecs_client_config(5.0))
    ecs.create_cluster(clusterName=settings.ecs_cluster)
    container = settings.agent_container_name
    ecs.register_task_definition(
        family="agent", containerDefinitions=[{"name": container, "image": "agent:1", "memory": 512}]
    )
    EcsManagedTagsSetting(ecs)
    # Five tasks: enough for the guardrails (max_draining_fraction) to allow one drain. Managed tags on,
    # as the default drainer.task_action_scope (service) needs.
    ecs.create_service(
        cluster=settings.ecs_cluster,
        serviceName=settings.ecs_service,
        taskDefinition="agent",
        desiredCount=5,
        enableECSManagedTags=True,
    )
    started = ecs.run_task(
        cluster=settings.ecs_cluster,
        taskDefinition="agent",
        count=5,
        launchType="FARGATE",
        group=f"service:{settings.ecs_service}",
    )["tasks"]
    FakeEcsTaskProtection(ecs)
    boto3.client("dynamodb").create_table(
        TableName=settings.ledger_table_name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    deps = dataclasses.replace(
        DrainerDependencies.from_environment(),
        ecs=BotoEcsTasks(settings.ecs_cluster, settings.ecs_service, client=ecs),
        worker_logs=OfflineWorkerLogs([], SignalCatalog.from_settings(settings.signals).slow_vad),
    )
    _invoke(handler, _schedule_event("drainer-reconcile", datetime.now(UTC)), deps)
    task_id = started[0]["taskArn"].rsplit("/", 1)[1]
    _invoke(handler, {"action": "drain", "task": task_id, "dry_run": False}, deps)
    lost = dataclasses.replace(deps, notifier=_missing_topic())
    _invoke(handler, {"action": "undrain", "task": task_id, "dry_run": False}, lost)


def main(argv: list[str]) -> int:
    function = FunctionName(argv[1])
    # moto moves a described task one lifecycle step per DescribeTasks by default; keep them RUNNING.
    state_manager.set_transition("ecs::task", {"progression": "manual", "times": 1_000_000})
    with mock_aws():
        _common_aws()
        if function is FunctionName.ZOMBIE_REAPER:
            capture_reaper(LocalLiveKit(port=int(argv[2])))
        elif function is FunctionName.TTS_REACH_ALARM:
            capture_tts_reach()
        else:
            capture_worker_drainer()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
