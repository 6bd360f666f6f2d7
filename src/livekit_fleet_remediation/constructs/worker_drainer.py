"""One agent service's worker drainer: its function, ledger table, reconcile schedule, the VAD-alarm
and suspect-worker rules, and IAM scoped to that service's cluster tasks and service.

``config`` is the service's view of the environment (``EnvironmentConfig.for_service``)."""

from __future__ import annotations

import re

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from fleet_remediation.contract.drainer_steps import (
    ECS_WRITE_ACTIONS,
    SERVICE_WRITE_ACTIONS,
    TAG_WRITE_ACTIONS,
    TASK_WRITE_ACTIONS,
)
from fleet_remediation.contract.events import DRAINER_EVENT_AGES
from fleet_remediation.contract.naming import (
    ECS_SERVICE_NAME_TAG,
    EVENT_SOURCE,
    SUSPECT_WORKER_DETAIL_TYPE,
    FunctionName,
)
from fleet_remediation.contract.sections import TaskActionScope
from fleet_remediation.contract.settings import DrainerSettings
from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.constructs.detection import Detection
from livekit_fleet_remediation.constructs.function_parts import schedule
from livekit_fleet_remediation.constructs.kill_switch import KillSwitch
from livekit_fleet_remediation.constructs.notifications import Notifications
from livekit_fleet_remediation.constructs.remediation_function import (
    NAG_ARN_START,
    RemediationFunction,
    deployed_settings,
)
from livekit_fleet_remediation.constructs.shared_layers import SharedLayers
from livekit_fleet_remediation.constructs.stack_key import StackKey
from livekit_fleet_remediation.nag import acknowledge
from worker_drainer.adapters.ecs_tasks import (
    ECS_CLUSTER_CONDITION_ACTIONS,
    ECS_SERVICE_ACTIONS,
    ECS_TASK_READ_ACTIONS,
)
from worker_drainer.adapters.ledger import LEDGER_ACTIONS
from worker_drainer.adapters.outbox import OUTBOX_ACTIONS
from worker_drainer.decide.task_tags import WRITTEN_TAGS

# What a Lambda function needs to attach to a VPC; EC2 grants these on "*" only.
VPC_ACCESS_ACTIONS = (
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
)


class WorkerDrainer(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env_name: str,
        config: EnvironmentConfig,
        layers: SharedLayers,
        notifications: Notifications,
        kill_switch: KillSwitch,
        key: StackKey,
        livekit_secret: secretsmanager.ISecret,
        detection: Detection,
    ) -> None:
        super().__init__(scope, construct_id)
        drainer = config.drainer
        self.ledger = self._ledger_table()
        self.scan_budget_table_name = detection.scan_tally.table.table_name
        self.settings = self._settings(env_name, config, notifications, kill_switch)
        self.remediation = RemediationFunction(
            self,
            "Drainer",
            function=FunctionName.WORKER_DRAINER,
            settings=self.settings,
            description="Attributes slow VAD to one ECS task; reaps, cordons, drains, stops or undoes",
            layers=layers,
            notifications=notifications,
            kill_switch=kill_switch,
            key=key,
            log_retention_days=config.log_retention_days,
            # The ledger lease serialises acting invocations; two lets an alarm run beside a tick.
            reserved_concurrency=2,
            expected_invocations_per_hour=60 // drainer.schedule_minutes,
        )
        self.function = self.remediation.function
        livekit_secret.grant_read(self.function)
        self._grant(config, detection)
        detection.scan_tally.grant(self.function)
        if drainer.vpc is not None:
            self._attach_to_vpc(drainer.vpc.subnet_ids, drainer.vpc.security_group_ids)
        self._rules(env_name, config.agent_service.name, drainer.schedule_minutes, detection)

    def _ledger_table(self) -> dynamodb.Table:
        return dynamodb.Table(
            self,
            "Ledger",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute="expires_at",
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            # The audit trail outlives a stack update or a mistaken delete.
            removal_policy=RemovalPolicy.RETAIN,
        )

    def _settings(
        self, env_name: str, config: EnvironmentConfig, notifications: Notifications, kill_switch: KillSwitch
    ) -> DrainerSettings:
        return deployed_settings(
            DrainerSettings,
            env_name=env_name,
            config=config,
            notifications=notifications,
            kill_switch=kill_switch,
            service=config.agent_service.name,
            livekit_url=config.livekit_url,
            livekit_secret_id=config.livekit_secret_name,
            disruption_window=config.disruption_window,
            reaper=config.reaper,
            drainer=config.drainer,
            signals=config.detection.signals,
            tts_reach_alarm=config.detection.tts_reach_alarm,
            ecs_cluster=config.agent_service.ecs_cluster,
            ecs_service=config.agent_service.ecs_service,
            ledger_table_name=self.ledger.table_name,
            agent_log_group=config.agent_service.agent_log_group,
            scan_budget=config.scan_budget,
            scan_budget_table_name=self.scan_budget_table_name,
        )

    def _rules(self, env_name: str, service: str, schedule_minutes: int, detection: Detection) -> None:
        """The reconcile tick, the service's VAD alarm's ALARM and its responder's suspect-worker
        events (another service's never match: the drainer's door refuses them too)."""
        schedule(
            self,
            "Reconcile",
            minutes=schedule_minutes,
            description=f"Advance the drainer's ladders every {schedule_minutes} min ({env_name}/{service})",
            target=self.remediation.target(
                retry_attempts=2, max_event_age_seconds=DRAINER_EVENT_AGES.schedule_seconds
            ),
        )
        detection.route_alarm(
            "VadAlarmToDrainer", detection.vad_alarm, self.function, self.remediation.dlq, states=("ALARM",)
        )
        events.Rule(
            self,
            "SuspectWorker",
            description=f"Suspect workers from tts_reach_alarm to the worker drainer ({env_name}/{service})",
            event_pattern=events.EventPattern(
                source=[EVENT_SOURCE],
                detail_type=[SUSPECT_WORKER_DETAIL_TYPE],
                detail={"environment": [env_name], "agent_service": [service]},
            ),
            # The drainer refuses a suspect-worker event older than this: no use delivering it later.
            targets=[
                self.remediation.target(
                    retry_attempts=2,
                    max_event_age_seconds=DRAINER_EVENT_AGES.suspect_worker_seconds,
                )
            ],
        )

    def _grant(self, config: EnvironmentConfig, detection: Detection) -> None:
        stack = Stack.of(self)
        service = config.agent_service
        cluster_arn = stack.format_arn(service="ecs", resource="cluster", resource_name=service.ecs_cluster)
        service_arn = stack.format_arn(
            service="ecs", resource="service", resource_name=f"{service.ecs_cluster}/{service.ecs_service}"
        )
        statements = [
            *_task_statements(stack, config),
            # Reads the service's desired count and managed-tags setting; changes what the steps change.
            iam.PolicyStatement(
                actions=[*_reads(ECS_SERVICE_ACTIONS), *SERVICE_WRITE_ACTIONS], resources=[service_arn]
            ),
            iam.PolicyStatement(
                actions=list(ECS_CLUSTER_CONDITION_ACTIONS),
                resources=["*"],
                conditions={"ArnEquals": {"ecs:cluster": cluster_arn}},
            ),
            iam.PolicyStatement(
                actions=sorted(set(LEDGER_ACTIONS) | set(OUTBOX_ACTIONS)), resources=[self.ledger.table_arn]
            ),
            iam.PolicyStatement(actions=["logs:StartQuery"], resources=[detection.log_group.log_group_arn]),
            # The reconcile tick reads the VAD alarm's state (worker_drainer/read/vad_alarm_tick.py).
            iam.PolicyStatement(
                actions=["cloudwatch:DescribeAlarms"], resources=[detection.vad_alarm.alarm_arn]
            ),
            # GetQueryResults and StopQuery take a query id and support no resource-level permissions.
            iam.PolicyStatement(actions=["logs:GetQueryResults", "logs:StopQuery"], resources=["*"]),
        ]
        for statement in statements:
            self.function.add_to_role_policy(statement)
        self._suppress_wildcard_findings()

    def _suppress_wildcard_findings(self) -> None:
        acknowledge(
            self.remediation.role,
            "AwsSolutions-IAM5",
            "Task ARNs end in a random id, so ECS task actions name the agents' cluster's tasks "
            "(task/<cluster>/*); the changes (stop, protection, tags) are further limited by "
            "aws:ResourceTag/aws:ecs:serviceName to the agents' service (drainer.task_action_scope) and "
            "the tag writes by aws:TagKeys to the drainer's own keys. ListTasks is authorised on '*' "
            "(container-instance) with an ecs:cluster condition; GetQueryResults/StopQuery support no "
            "resource; StartQuery is limited to the agents' log group and its streams.",
            [
                re.compile(f"{NAG_ARN_START}ecs:.*:task/.*/\\*$"),
                re.compile(f"{NAG_ARN_START}logs:.*:log-group:.*:\\*$"),
            ],
            apply_to_children=True,
        )

    def _attach_to_vpc(self, subnet_ids: tuple[str, ...], security_group_ids: tuple[str, ...]) -> None:
        function = self.function.node.default_child
        assert isinstance(function, lambda_.CfnFunction)
        function.vpc_config = lambda_.CfnFunction.VpcConfigProperty(
            subnet_ids=list(subnet_ids), security_group_ids=list(security_group_ids)
        )
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=list(VPC_ACCESS_ACTIONS), resources=["*"])
        )


def _task_statements(stack: Stack, config: EnvironmentConfig) -> list[iam.PolicyStatement]:
    """Reads on the cluster's tasks; changes and tags only on our service's tasks (unless the
    environment opts out with ``drainer.task_action_scope = cluster``); tags only the drainer's keys.

    Condition keys per the Service Authorization Reference (Amazon ECS): StopTask and
    UpdateTaskProtection support aws:ResourceTag/${TagKey} and ecs:cluster; TagResource and
    UntagResource support aws:ResourceTag/${TagKey} and aws:TagKeys (not ecs:cluster); none supports
    ecs:service. ECS sets the tag aws:ecs:serviceName on a service's tasks when the service has ECS
    managed tags on; the drainer checks that before it acts (worker_drainer/act/task_scope_check.py).
    """
    tasks = [
        stack.format_arn(
            service="ecs", resource="task", resource_name=f"{config.agent_service.ecs_cluster}/*"
        )
    ]
    ours: dict[str, dict[str, object]] = {}
    if config.drainer.task_action_scope is TaskActionScope.SERVICE:
        ours = {"StringEquals": {f"aws:ResourceTag/{ECS_SERVICE_NAME_TAG}": config.agent_service.ecs_service}}
    own_tag_keys = {"ForAllValues:StringEquals": {"aws:TagKeys": list(WRITTEN_TAGS)}}
    # The changes are the step table's task actions: tag writes apart, as they take aws:TagKeys.
    changes = [action for action in TASK_WRITE_ACTIONS if action not in TAG_WRITE_ACTIONS]
    tagging = [action for action in TASK_WRITE_ACTIONS if action in TAG_WRITE_ACTIONS]
    return [
        iam.PolicyStatement(actions=list(ECS_TASK_READ_ACTIONS), resources=tasks),
        iam.PolicyStatement(actions=changes, resources=tasks, conditions=ours or None),
        iam.PolicyStatement(actions=tagging, resources=tasks, conditions={**ours, **own_tag_keys}),
    ]


def _reads(actions: tuple[str, ...]) -> list[str]:
    """The adapter's actions that change nothing: what a step changes is granted from its row only."""
    return [action for action in actions if action not in ECS_WRITE_ACTIONS]
