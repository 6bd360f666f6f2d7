"""The TTS-reach responder function, its idempotency table, and the route from the TTS-reach alarm."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from fleet_remediation.contract.naming import EVENT_BUS_NAME, FunctionName
from fleet_remediation.contract.settings import TtsReachSettings
from fleet_stack.config import EnvironmentConfig
from fleet_stack.constructs.detection import Detection
from fleet_stack.constructs.kill_switch import KillSwitch
from fleet_stack.constructs.notifications import Notifications
from fleet_stack.constructs.remediation_function import RemediationFunction, deployed_settings
from fleet_stack.constructs.shared_layers import SharedLayers
from fleet_stack.constructs.stack_key import StackKey


class TtsReachResponder(Construct):
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
        detection: Detection,
    ) -> None:
        super().__init__(scope, construct_id)
        # Powertools Idempotency records: one per alarm transition and action, expiring after a day.
        self.idempotency_table = dynamodb.Table(
            self,
            "Idempotency",
            partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute="expiration",
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.settings = deployed_settings(
            TtsReachSettings,
            env_name=env_name,
            config=config,
            notifications=notifications,
            kill_switch=kill_switch,
            aws_region=Stack.of(self).region,
            agent_log_group=config.agent_log_group,
            idempotency_table_name=self.idempotency_table.table_name,
            ecs_cluster=config.ecs_cluster,
            detection=config.detection,
            tts_reach=config.tts_reach,
        )
        self.remediation = RemediationFunction(
            self,
            "Responder",
            function=FunctionName.TTS_REACH_ALARM,
            settings=self.settings,
            description="On the TTS-reach alarm: find silent sessions, blame a worker beyond chance, notify",
            layers=layers,
            notifications=notifications,
            kill_switch=kill_switch,
            key=key,
            log_retention_days=config.log_retention_days,
            # An alarm transition and a scheduled re-check may run side by side (the once-guard keeps
            # them from acting twice); a capped count keeps a burst of events from taking the account's.
            reserved_concurrency=2,
        )
        self.function = self.remediation.function
        self.idempotency_table.grant_read_write_data(self.function)
        stack = Stack.of(self)
        self.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["logs:StartQuery"],
                resources=[detection.log_group.log_group_arn],
            )
        )
        # GetQueryResults and StopQuery take a query id and support no resource-level permissions.
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=["logs:GetQueryResults", "logs:StopQuery"], resources=["*"])
        )
        self.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["events:PutEvents"],
                resources=[
                    stack.format_arn(service="events", resource="event-bus", resource_name=EVENT_BUS_NAME)
                ],
            )
        )
        NagSuppressions.add_resource_suppressions(
            self.remediation.role,
            [
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason="logs:StartQuery is limited to the agents' own log group; the ':*' suffix CDK "
                    "adds to a log group ARN stands for that group's streams, which the query reads.",
                    applies_to=[{"regex": "/^Resource::arn:<AWS::Partition>:logs:.*:log-group:.*:\\*$/g"}],
                )
            ],
            apply_to_children=True,
        )
        self.route = detection.route_alarm(
            "TtsReachAlarmToResponder", detection.tts_reach_alarm, self.function, self.remediation.dlq
        )
        # While the page stays in ALARM, a scheduled re-check may name the worker its first analysis
        # could not (the tick reads the page's state first and does nothing while it is OK).
        self.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["cloudwatch:DescribeAlarms"], resources=[detection.tts_reach_alarm.alarm_arn]
            )
        )
        recheck = config.tts_reach.recheck_minutes
        self.recheck = (
            events.Rule(
                self,
                "Recheck",
                description=f"Re-check an open TTS incident every {recheck} min ({env_name})",
                schedule=events.Schedule.rate(Duration.minutes(recheck)),
                targets=[
                    targets.LambdaFunction(
                        self.function,
                        dead_letter_queue=self.remediation.dlq,
                        retry_attempts=0,  # a missed tick is replaced by the next one
                        max_event_age=Duration.minutes(recheck),
                    )
                ],
            )
            if recheck
            else None
        )
