"""A moto-backed AWS world for the worker drainer: an ECS service with N running tasks (with
``FakeEcsTaskProtection``, as moto lacks task protection), the DynamoDB ledger (with the outbox and
the delivery once-keys), the kill switch in SSM and two SNS topics, e-mail and chat (each with an
SQS queue subscribed, to read what was sent), plus agent logs
evaluated offline (``OfflineWorkerLogs``: moto has no Logs Insights statistics) and the real LiveKit
server. moto does not run a service's scheduler: ``run_service_scheduler`` starts tasks up to the
desired count the way ECS would."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from moto import mock_aws
from moto.moto_api import state_manager

from devkit.fakes.ecs_fakes import EcsManagedTagsSetting, FakeEcsTaskProtection
from devkit.fakes.ecs_profile import EcsAsTheProfileSays
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.adapters.alarm_state import CloudWatchAlarmStates
from fleet_remediation.adapters.livekit_rooms import LiveKitCredentials, LiveKitRoomService, RoomService
from fleet_remediation.adapters.notifier import SnsNotifier
from fleet_remediation.contract.agent_services import DEFAULT_AGENT_SERVICE
from fleet_remediation.contract.naming import EVENT_SOURCE, SUSPECT_WORKER_DETAIL_TYPE, tts_reach_alarm_name
from fleet_remediation.contract.settings import DrainerSettings
from fleet_remediation.contract.signals import SignalCatalog
from fleet_remediation.core.kill_switch import SsmModeSwitch
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from livekit_fleet_remediation.offline.log_export import LogEvent
from livekit_fleet_remediation.offline.worker_logs import OfflineWorkerLogs
from worker_drainer import handler
from worker_drainer.adapters.chat_tokens import DynamoChatTokens
from worker_drainer.adapters.ecs_tasks import BotoEcsTasks, EcsTask, ecs_client_config
from worker_drainer.adapters.ledger import DynamoLedger
from worker_drainer.adapters.outbox import DynamoOutbox, ledger_once_guard
from worker_drainer.adapters.worker_probe import HttpWorkerProbe
from worker_drainer.dependencies import DrainerDependencies

CLUSTER = "agents"
SERVICE = "agent-svc"
STREAM_PREFIX = "agent"
CONTAINER = "ppi-livekit-agent"
MODE_PARAMETER = "/livekit-fleet-remediation/it/mode"
TABLE = "it-drainer-ledger"
TOPIC = "it-notifications"
CHAT_TOPIC = "it-chat"
# moto's account and region: the function's own ARN says where "ours" is.
FUNCTION_ARN = "arn:aws:lambda:eu-west-1:123456789012:function:lkfr-it-agents-worker-drainer"


def offline_settings(environment: str, **drainer: Any) -> DrainerSettings:
    """Settings that name no AWS resource of a world (unit tests): the default drainer section with
    ``drainer`` on top, our cluster and service."""
    return DrainerSettings.model_validate(
        {
            "environment_name": environment,
            "mode_parameter_name": f"/livekit-fleet-remediation/{environment}/mode",
            "notification_topic_arn": "arn:aws:sns:eu-west-1:123456789012:notifications",
            "runbook_base_url": "https://runbooks.example.com/repo",
            "livekit_url": "http://127.0.0.1:7880",
            "livekit_secret_id": "unused",
            "reaper": {},
            "drainer": drainer,
            "ecs_cluster": CLUSTER,
            "ecs_service": SERVICE,
            "ledger_table_name": "ledger",
            "agent_log_group": "/example/agent",
        }
    )


def stream_of(task_id: str) -> str:
    return f"{STREAM_PREFIX}/{CONTAINER}/{task_id}"


def slow_vad_record(delay: float, job_id: str) -> dict[str, Any]:
    return {
        "message": "inference is slower than realtime",
        "level": "WARNING",
        "name": "livekit.plugins.silero",
        "delay": delay,
        "job_id": job_id,
        "pid": 720,
    }


def tts_record(message: str, job_id: str) -> dict[str, Any]:
    return {"message": message, "level": "INFO", "name": "lesson-agent", "job_id": job_id, "pid": 9}


def job_request_record(job_id: str, room: str, room_id: str) -> dict[str, Any]:
    return {
        "message": "received job request",
        "level": "INFO",
        "name": "livekit.agents",
        "job_id": job_id,
        "room": room,
        "room_id": room_id,
        "agent_name": "ppi-agent",
        "pid": 7,
    }


@dataclass
class DrainerWorld:
    ecs_client: Any
    protection: FakeEcsTaskProtection
    managed_tags: EcsManagedTagsSetting
    task_arns: list[str]
    livekit: LocalLiveKit
    now: datetime
    events: list[LogEvent] = field(default_factory=list)
    worker_urls: dict[str, str] = field(default_factory=dict)
    livekit_url: str | None = None
    policy: dict[str, Any] = field(default_factory=dict)
    reaper_policy: dict[str, Any] = field(default_factory=lambda: {"max_age_minutes": 60})
    # More fields of the drainer's cdk.json section (e.g. task_action_scope).
    drainer_section: dict[str, Any] = field(default_factory=dict)
    _drainer_ecs: Any = None

    @property
    def task_ids(self) -> list[str]:
        return [arn.rsplit("/", 1)[1] for arn in self.task_arns]

    def own_ecs_client(self) -> Any:
        """Another ECS client on this world, served by the same fakes (for a fault to hook into),
        and as unkind as the service profile says: throttled at ECS's rates, its DescribeTasks
        showing a task's old tags for a while after a write (``EcsAsTheProfileSays``, on the
        world's clock). The world's own client (what a test reads to assert) sees the truth."""
        client = boto3.client("ecs", config=ecs_client_config(5.0))
        FakeEcsTaskProtection(client, shared_with=self.protection)
        EcsManagedTagsSetting(client, shared_with=self.managed_tags)
        EcsAsTheProfileSays(client, clock=lambda: self.now.timestamp())
        return client

    def drainer_ecs_client(self) -> Any:
        """The drainer's ECS client when a test does not give one: one per world, profiled."""
        if self._drainer_ecs is None:
            self._drainer_ecs = self.own_ecs_client()
        return self._drainer_ecs

    def set_mode(self, mode: str) -> None:
        boto3.client("ssm").put_parameter(Name=MODE_PARAMETER, Value=mode, Type="String", Overwrite=True)

    def slow(
        self, task_id: str, count: int, minutes: float, delay: float = 20.0, job_id: str = "AJ_zombie"
    ) -> None:
        """``count`` slow-inference warnings on the task's stream, spread over the last ``minutes``."""
        for index in range(count):
            at = self.now - timedelta(minutes=minutes) + timedelta(minutes=minutes) * (index + 1) / count
            self.events.append(
                LogEvent(stream_of(task_id), at, slow_vad_record(delay * (index + 1) / count, job_id))
            )

    def tts_job(self, task_id: str, job_id: str, reached: bool, minutes_ago: float) -> None:
        """A job that started a response and did (or did not) reach its first audio frame."""
        at = self.now - timedelta(minutes=minutes_ago)
        self.events.append(LogEvent(stream_of(task_id), at, tts_record("agent_response_started", job_id)))
        if reached:
            frame = tts_record("tts_node_first_audio_frame", job_id)
            self.events.append(LogEvent(stream_of(task_id), at + timedelta(seconds=3), frame))

    def job_request(self, task_id: str, job_id: str, room: str, room_id: str, minutes_ago: float) -> None:
        at = self.now - timedelta(minutes=minutes_ago)
        self.events.append(LogEvent(stream_of(task_id), at, job_request_record(job_id, room, room_id)))

    def settings(self) -> DrainerSettings:
        return DrainerSettings.model_validate(
            {
                "environment_name": "it",
                "mode_parameter_name": MODE_PARAMETER,
                "notification_topic_arn": boto3.client("sns").create_topic(Name=TOPIC)["TopicArn"],
                "chat_topic_arn": boto3.client("sns").create_topic(Name=CHAT_TOPIC)["TopicArn"],
                "runbook_base_url": "https://runbooks.example.com/repo",
                "livekit_url": self.livekit.http_url,
                "livekit_secret_id": "unused-credentials-are-injected",
                "reaper": {"policy": self.reaper_policy},
                "drainer": {
                    "livekit_request_timeout_seconds": 2,
                    "agent_log_stream_prefix": STREAM_PREFIX,
                    "agent_container_name": CONTAINER,
                    "policy": {"min_healthy_tasks": 1, "max_draining_fraction": 0.5, **self.policy},
                    **self.drainer_section,
                },
                "ecs_cluster": CLUSTER,
                "ecs_service": SERVICE,
                "ledger_table_name": TABLE,
                "agent_log_group": "/ppi/livekit/it/agent",
            }
        )

    def dependencies(
        self,
        clock: Callable[[], datetime] | None = None,
        ecs_client: Any = None,
        dynamodb_client: Any = None,
        sns_client: Any = None,
    ) -> DrainerDependencies:
        settings = self.settings()
        url = self.livekit_url or self.livekit.http_url
        credentials = LiveKitCredentials.model_validate(
            {"api_key": self.livekit.api_key, "api_secret": self.livekit.api_secret}
        )

        def rooms() -> RoomService:
            return LiveKitRoomService(url, credentials, settings.drainer.livekit_request_timeout_seconds)

        def endpoint(task: EcsTask) -> str | None:
            return self.worker_urls.get(task.task_id)

        return DrainerDependencies(
            settings=settings,
            mode_switch=SsmModeSwitch(MODE_PARAMETER, client=boto3.client("ssm")),
            notifier=SnsNotifier(settings.notification_topic_arn, sns_client),
            chat_notifier=SnsNotifier(str(settings.chat_topic_arn), sns_client),
            once=ledger_once_guard(TABLE),
            outbox=DynamoOutbox(TABLE),
            ecs=BotoEcsTasks(CLUSTER, SERVICE, client=ecs_client or self.drainer_ecs_client()),
            ledger=DynamoLedger(TABLE, SERVICE, client=dynamodb_client),
            worker_logs=OfflineWorkerLogs(self.events, SignalCatalog.default().slow_vad),
            worker_probe=HttpWorkerProbe(8081, 1.0, endpoint_for=endpoint),
            room_service_factory=rooms,
            # moto's CloudWatch: a test puts the VAD alarm and sets its state.
            alarm_states=CloudWatchAlarmStates(boto3.client("cloudwatch")),
            clock=clock or (lambda: self.now),
            chat_tokens=DynamoChatTokens(TABLE, client=dynamodb_client),
        )

    def invoke(
        self,
        event: dict[str, Any],
        deps: DrainerDependencies | None = None,
        context: LocalLambdaContext | None = None,
    ) -> dict[str, Any]:
        """One invocation; pass the ``context`` of an earlier one to replay Lambda's retry of it
        (the same request id)."""
        context = context or LocalLambdaContext()
        context.invoked_function_arn = FUNCTION_ARN
        return dict(handler.lambda_handler(event, context, dependencies=deps or self.dependencies()))

    def running_task_ids(self) -> list[str]:
        arns = self.ecs_client.list_tasks(cluster=CLUSTER, serviceName=SERVICE, desiredStatus="RUNNING")
        found = (
            self.ecs_client.describe_tasks(cluster=CLUSTER, tasks=arns["taskArns"])["tasks"]
            if arns["taskArns"]
            else []
        )
        return [t["taskArn"].rsplit("/", 1)[1] for t in found if t["lastStatus"] == "RUNNING"]

    def run_service_scheduler(self) -> list[str]:
        """What ECS's service scheduler does on its own: start tasks until the desired count runs."""
        missing = self.desired_count() - len(self.running_task_ids())
        if missing <= 0:
            return []
        started = self.ecs_client.run_task(
            cluster=CLUSTER,
            taskDefinition="agent",
            count=missing,
            launchType="FARGATE",
            group=f"service:{SERVICE}",
        )["tasks"]
        return [t["taskArn"].rsplit("/", 1)[1] for t in started]

    def notifications(self) -> list[tuple[str, str]]:
        """(subject, message) of every e-mail notification published so far, oldest first, read once."""
        return [(envelope.get("Subject", ""), envelope["Message"]) for envelope in self.received(TOPIC)]

    def received(self, topic: str = TOPIC) -> list[dict[str, Any]]:
        """The SNS envelopes (Subject, Message, MessageAttributes) published to ``topic`` so far,
        oldest first, read once."""
        sqs = boto3.client("sqs")
        url = sqs.get_queue_url(QueueName=topic)["QueueUrl"]
        sent: list[dict[str, Any]] = []
        while True:
            batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
            if not batch:
                return sent
            for message in batch:
                sent.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    def task(self, task_id: str) -> dict[str, Any]:
        found = self.ecs_client.describe_tasks(cluster=CLUSTER, tasks=[task_id], include=["TAGS"])["tasks"]
        return dict(found[0])

    def tags(self, task_id: str) -> dict[str, str]:
        return {t["key"]: t["value"] for t in self.task(task_id).get("tags", [])}

    def desired_count(self) -> int:
        return int(
            self.ecs_client.describe_services(cluster=CLUSTER, services=[SERVICE])["services"][0][
                "desiredCount"
            ]
        )

    def audit(self, task_id: str) -> list[dict[str, str]]:
        items = boto3.client("dynamodb").query(
            TableName=TABLE,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :audit)",
            ExpressionAttributeValues={":pk": {"S": f"task#{task_id}"}, ":audit": {"S": "audit#"}},
        )["Items"]
        return [{k: v["S"] for k, v in item.items() if "S" in v} for item in items]


# The incident the unit tests replay: the VAD alarm went off at 17:40, the schedule ticked at 17:41.
ALARM_AT = datetime(2026, 9, 15, 17, 40, tzinfo=UTC)
TICK_AT = datetime(2026, 9, 15, 17, 41, tzinfo=UTC)


def _eventbridge_time(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _alarm_time(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000+0000")


def alarm_event(
    state: str = "ALARM", name: str = "livekit-it-agents-vad-slow-inference", at: datetime = ALARM_AT
) -> dict[str, Any]:
    """The VAD alarm's state change at ``at`` (a world's ``now``: the door refuses stale events)."""
    return {
        "version": "0",
        "id": "7bf73129-1428-4cd3-a780-95db273d1602",
        "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch",
        "account": "123456789012",
        "time": _eventbridge_time(at),
        "region": "eu-west-1",
        "resources": [f"arn:aws:cloudwatch:eu-west-1:123456789012:alarm:{name}"],
        "detail": {
            "alarmName": name,
            "state": {"value": state, "reason": "threshold crossed", "timestamp": _alarm_time(at)},
            "previousState": {
                "value": "OK",
                "reason": "",
                "timestamp": _alarm_time(at - timedelta(minutes=40)),
            },
            "configuration": {},
        },
    }


def schedule_event(at: datetime = TICK_AT) -> dict[str, Any]:
    """The reconcile schedule's tick at ``at`` (a world's ``now``: the door refuses stale events)."""
    return {
        "version": "0",
        "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": _eventbridge_time(at),
        "region": "eu-west-1",
        "resources": ["arn:aws:events:eu-west-1:123456789012:rule/it-drainer-reconcile"],
        "detail": {},
    }


def build_world(livekit: LocalLiveKit, now: datetime, tasks: int = 4) -> DrainerWorld:
    """Call inside ``mock_aws()``."""
    ecs = boto3.client("ecs", config=ecs_client_config(5.0))
    ecs.create_cluster(clusterName=CLUSTER)
    ecs.register_task_definition(
        family="agent", containerDefinitions=[{"name": CONTAINER, "image": "agent:1", "memory": 512}]
    )
    managed_tags = EcsManagedTagsSetting(ecs)
    # Managed tags on, as docs/concepts/safety.md asks for the default drainer.task_action_scope (service).
    ecs.create_service(
        cluster=CLUSTER,
        serviceName=SERVICE,
        taskDefinition="agent",
        desiredCount=tasks,
        enableECSManagedTags=True,
    )
    # moto does not start a service's tasks: start them as the service would (group "service:<name>").
    arns = [
        t["taskArn"]
        for t in ecs.run_task(
            cluster=CLUSTER,
            taskDefinition="agent",
            count=tasks,
            launchType="FARGATE",
            group=f"service:{SERVICE}",
        )["tasks"]
    ]
    protection = FakeEcsTaskProtection(ecs, clock=lambda: now)
    ecs.update_task_protection(cluster=CLUSTER, tasks=arns, protectionEnabled=True)
    boto3.client("dynamodb").create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    boto3.client("ssm").put_parameter(Name=MODE_PARAMETER, Value="enforce", Type="String")
    for topic in (TOPIC, CHAT_TOPIC):
        _subscribe_queue(topic)
    world = DrainerWorld(
        ecs_client=ecs,
        protection=protection,
        managed_tags=managed_tags,
        task_arns=arns,
        livekit=livekit,
        now=now,
    )
    protection.set_clock(lambda: world.now)
    return world


def _subscribe_queue(topic: str) -> None:
    """A queue named like the topic, subscribed to it."""
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName=topic)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    topic_arn = boto3.client("sns").create_topic(Name=topic)["TopicArn"]
    boto3.client("sns").subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn)


def suspect_event(task_id: str, window_end: datetime, service: str = DEFAULT_AGENT_SERVICE) -> dict[str, Any]:
    """The event ``service``'s tts_reach_alarm puts on EventBridge when failing lessons concentrate
    on one worker (its window ends at ``window_end``, e.g. the world's clock: the drainer refuses
    stale ones), without an ``incident_id`` (the drainer then derives one)."""
    start = window_end - timedelta(minutes=32)
    return {
        "version": "0",
        "id": "0e2ab2a4-0d3c-4d8a-9a43-0d1c1e4b5f77",
        "detail-type": SUSPECT_WORKER_DETAIL_TYPE,
        "source": EVENT_SOURCE,
        "account": "123456789012",
        "time": window_end.isoformat(),
        "region": "eu-west-1",
        "resources": [],
        "detail": {
            "environment": "it",
            "agent_service": service,
            "log_stream": stream_of(task_id),
            "task_id": task_id,
            "alarm_name": tts_reach_alarm_name("it", service),
            "p_value": 0.000258,
            "window": {"start": start.isoformat(), "end": window_end.isoformat()},
            "evidence": {"failed_jobs_on_worker": 4, "jobs_on_worker": 4},
        },
    }


@contextmanager
def moto_world(
    livekit: LocalLiveKit, tasks: int = 4, ahead: timedelta = timedelta(hours=2)
) -> Iterator[DrainerWorld]:
    """A world inside ``mock_aws()``, its clock ``ahead`` of the wall clock (so LiveKit rooms created
    now look that old). moto moves a described task one lifecycle step per DescribeTasks by default:
    the world keeps its tasks RUNNING."""
    state_manager.set_transition("ecs::task", {"progression": "manual", "times": 1_000_000})
    try:
        with mock_aws():
            yield build_world(livekit, datetime.now(UTC) + ahead, tasks=tasks)
    finally:
        state_manager.unset_transition("ecs::task")


def put_page_stand_in(client: Any, name: str) -> None:
    """A metric alarm named like a page, whose state a test sets (``set_alarm_state``): moto has no
    composite alarms, and ``CloudWatchAlarmStates`` reads either kind by name."""
    client.put_metric_alarm(
        AlarmName=name,
        Namespace="LiveKitAgents/it",
        MetricName="SlowVadInference",
        Statistic="Sum",
        Period=60,
        EvaluationPeriods=5,
        DatapointsToAlarm=3,
        Threshold=1,
        ComparisonOperator="GreaterThanOrEqualToThreshold",
    )
