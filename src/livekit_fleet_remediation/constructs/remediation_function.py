"""One remediation Lambda function with everything it needs to be trusted in production:
its own log group and least-privilege role, the shared layers, a DLQ for failed asynchronous
deliveries, and alarms on itself (errors, DLQ depth, throttles, and a schedule that stopped)."""

from __future__ import annotations

import re
from pathlib import Path

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from fleet_remediation.contract.action_events import ACTION_EVENT_DETAIL_TYPE
from fleet_remediation.contract.events import ASYNC_INVOKE_MAX_EVENT_AGE_SECONDS
from fleet_remediation.contract.naming import (
    EVENT_BUS_NAME,
    EVENT_SOURCE,
    METRICS_NAMESPACE,
    FunctionId,
    function_log_group_name,
    lambda_function_name,
)
from fleet_remediation.contract.settings import (
    FunctionSettings,
    ServiceFunctionSettings,
    SettingsT,
    settings_for_deployment,
)
from livekit_fleet_remediation.assets import asset_roots
from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.constructs.function_alarms import self_monitoring
from livekit_fleet_remediation.constructs.function_parts import function_code, log_retention
from livekit_fleet_remediation.constructs.kill_switch import KillSwitch
from livekit_fleet_remediation.constructs.notifications import Notifications
from livekit_fleet_remediation.constructs.shared_layers import RUNTIME, SharedLayers, acknowledge_runtime
from livekit_fleet_remediation.constructs.stack_key import StackKey
from livekit_fleet_remediation.nag import acknowledge

# How cdk-nag prints an ARN's start: CDK writes the partition as a token, or as a literal when the
# feature flag @aws-cdk/core:enablePartitionLiterals is on.
NAG_ARN_START = "^Resource::arn:(<AWS::Partition>|aws[a-z-]*):"


def deployed_settings(
    model: type[SettingsT],
    *,
    env_name: str,
    config: EnvironmentConfig,
    notifications: Notifications,
    kill_switch: KillSwitch,
    service: str | None = None,
    **values: object,
) -> SettingsT:
    """The function's own settings model, built at synth: what the stack deploys is what the function
    validates at cold start. A problem names the field under ``environments.<env>.``. ``service``:
    the agent service a service's responder or drainer serves (its name and its kill switch)."""
    common: dict[str, object] = {
        "environment_name": env_name,
        "mode_parameter_name": kill_switch.parameter_name,
        "function_mode_parameter_name": kill_switch.function_parameter_name(model.function),
        "notification_topic_arn": notifications.topic.topic_arn,
        "chat_topic_arn": notifications.chat_topic.topic_arn if notifications.chat_topic else None,
        "runbook_base_url": config.runbook_base_url,
        "runbook_links": config.runbook_links,
        # Lambda sets AWS_REGION itself (never deployed): the synth-time model says what it will read.
        "aws_region": config.region,
    }
    if service is not None:
        common["agent_service"] = service
        common["service_mode_parameter_name"] = kill_switch.service_parameter_name(service)
    return settings_for_deployment(model, {**common, **values}, f"environments.{env_name}.")


def _camel(snake: str) -> str:
    return "".join(part.title() for part in snake.split("_"))


class RemediationFunction(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: FunctionId,
        settings: FunctionSettings,
        description: str,
        layers: SharedLayers,
        notifications: Notifications,
        kill_switch: KillSwitch,
        key: StackKey,
        log_retention_days: int,
        memory_size: int = 256,
        reserved_concurrency: int | None = None,
        expected_invocations_per_hour: int | None = None,
        functions_dir: Path | None = None,
    ) -> None:
        """``functions_dir``: where the function's folder is (the packaged functions, or a team's own)."""
        super().__init__(scope, construct_id)
        functions_dir = functions_dir or asset_roots().functions
        if not (functions_dir / function.value / "handler.py").is_file():
            raise FileNotFoundError(f"{functions_dir}/{function.value}/handler.py does not exist")
        self.functions_dir = functions_dir
        env_name = settings.environment_name
        # A service's responder or drainer: its name carries the agent service's.
        self.service = settings.agent_service if isinstance(settings, ServiceFunctionSettings) else None
        self.log_group = self._log_group(key, env_name, function, log_retention_days)
        self.role = self._role(lambda_function_name(env_name, function, self.service))
        self.dlq = self._dead_letter_queue(key)
        self.function = self._lambda_function(
            function, settings, description, layers, memory_size, reserved_concurrency
        )
        acknowledge_runtime(self.function)
        notifications.grant_publish(self.function)
        kill_switch.grant_read(function, self.function, self.service)
        self._grant_action_events()
        self._suppress_unscoped_service_actions()
        self.alarms = self_monitoring(
            self, self.function, self.dlq, (env_name, function, self.service), expected_invocations_per_hour
        )
        for alarm in self.alarms:
            notifications.notify_on_state_changes(alarm)

    def target(self, *, retry_attempts: int, max_event_age_seconds: int) -> targets.LambdaFunction:
        """This function as an EventBridge target whose undeliverable events park in its DLQ; the
        maximum age is the one the function's door allows (``contract.events``)."""
        return targets.LambdaFunction(
            self.function,
            dead_letter_queue=self.dlq,
            retry_attempts=retry_attempts,
            max_event_age=Duration.seconds(max_event_age_seconds),
        )

    def grant_logs_insights(self, log_group: logs.ILogGroup) -> None:
        """Logs Insights queries over ``log_group`` (the agents' logs) and nothing else."""
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=["logs:StartQuery"], resources=[log_group.log_group_arn])
        )
        # GetQueryResults and StopQuery take a query id and support no resource-level permissions.
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=["logs:GetQueryResults", "logs:StopQuery"], resources=["*"])
        )
        acknowledge(
            self.role,
            "AwsSolutions-IAM5",
            "logs:StartQuery is limited to the agents' own log group; the ':*' suffix CDK adds to a log "
            "group ARN stands for that group's streams, which the query reads.",
            [re.compile(f"{NAG_ARN_START}logs:.*:log-group:.*:\\*$")],
            apply_to_children=True,
        )

    def _grant_action_events(self) -> None:
        """Every function announces its actions and refusals (``contract.action_events``): only
        that detail-type from our source, on the default bus."""
        bus = Stack.of(self).format_arn(service="events", resource="event-bus", resource_name=EVENT_BUS_NAME)
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["events:PutEvents"],
                resources=[bus],
                conditions={
                    "StringEquals": {
                        "events:source": EVENT_SOURCE,
                        "events:detail-type": ACTION_EVENT_DETAIL_TYPE,
                    }
                },
            )
        )

    def _lambda_function(
        self,
        function: FunctionId,
        settings: FunctionSettings,
        description: str,
        layers: SharedLayers,
        memory_size: int,
        reserved_concurrency: int | None,
    ) -> lambda_.Function:
        return lambda_.Function(
            self,
            "Function",
            function_name=lambda_function_name(settings.environment_name, function, self.service),
            description=description,
            runtime=RUNTIME,
            architecture=layers.architecture,
            handler=f"{function.value}.handler.lambda_handler",
            code=function_code(self.functions_dir, function.value),
            layers=layers.all,
            role=self.role,
            timeout=Duration.seconds(settings.timeout_seconds),
            memory_size=memory_size,
            reserved_concurrent_executions=reserved_concurrency,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=self.log_group,
            dead_letter_queue=self.dlq,
            retry_attempts=2,
            max_event_age=Duration.seconds(ASYNC_INVOKE_MAX_EVENT_AGE_SECONDS),
            environment={
                "POWERTOOLS_SERVICE_NAME": function.value,
                "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
                "POWERTOOLS_LOG_LEVEL": "INFO",
                **settings.to_lambda_environment(),
            },
        )

    def _log_group(
        self, key: StackKey, env_name: str, function: FunctionId, retention_days: int
    ) -> logs.LogGroup:
        log_group_name = function_log_group_name(env_name, function, self.service)
        owner = f"{self.service}-{function.value}" if self.service else function.value
        key.allow_log_group(f"{_camel(owner.replace('-', '_'))}Logs", log_group_name)
        return logs.LogGroup(
            self,
            "Logs",
            log_group_name=log_group_name,
            retention=log_retention(retention_days),
            encryption_key=key.key,
            # A fixed name (the functions' messages and the dashboard link to it) must go with the
            # stack, or a deploy after a teardown collides with it; the drainer's ledger keeps the trail.
            removal_policy=RemovalPolicy.DESTROY,
        )

    def _role(self, function_name: str) -> iam.Role:
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{function_name}: least privilege, see the construct that adds each statement",
        )
        # Scoped to this function's own log group instead of the AWSLambdaBasicExecutionRole policy.
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self.log_group.log_group_arn],
            )
        )
        return role

    def _dead_letter_queue(self, key: StackKey) -> sqs.Queue:
        dlq = sqs.Queue(
            self,
            "DeadLetters",
            retention_period=Duration.days(14),
            encryption=sqs.QueueEncryption.KMS,
            encryption_master_key=key.key,
            enforce_ssl=True,
        )
        # Lambda sends an asynchronous delivery that failed with the function's role: SQS then needs the
        # role to be allowed the key (CDK's DLQ wiring grants only sqs:SendMessage). The function's
        # EventBridge rules park undeliverable events here too, as the events service.
        key.key.grant(self.role, "kms:GenerateDataKey", "kms:Decrypt")
        key.allow_rule_dead_letters()
        acknowledge(dlq, "AwsSolutions-SQS3", "This queue is itself a dead-letter queue.")
        return dlq

    def _suppress_unscoped_service_actions(self) -> None:
        acknowledge(
            self.role,
            "AwsSolutions-IAM5",
            "X-Ray PutTraceSegments/PutTelemetryRecords support no resource-level permissions; the KMS "
            "GenerateDataKey*/ReEncrypt* wildcards are CDK's grant on the topic's own key.",
            ["Resource::*", "Action::kms:GenerateDataKey*", "Action::kms:ReEncrypt*"],
            apply_to_children=True,
        )
