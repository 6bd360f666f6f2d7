"""The environment's encrypted notification topic (on-call e-mail, chat integrations)."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from fleet_stack.config import EnvironmentConfig


class Notifications(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, env_name: str, config: EnvironmentConfig
    ) -> None:
        super().__init__(scope, construct_id)
        self.key = kms.Key(
            self,
            "TopicKey",
            description=f"LiveKit Fleet Remediation {env_name}: notification topic encryption",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        # CloudWatch alarms publish to the topic, so they must be able to use its key.
        self.key.grant(
            iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*"
        )
        self.topic = sns.Topic(
            self,
            "Topic",
            display_name=f"LiveKit Fleet Remediation ({env_name})",
            master_key=self.key,
            enforce_ssl=True,
        )
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                actions=["sns:Publish"],
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                resources=[self.topic.topic_arn],
            )
        )
        for address in config.notifications.emails:
            self.topic.add_subscription(subscriptions.EmailSubscription(address))
