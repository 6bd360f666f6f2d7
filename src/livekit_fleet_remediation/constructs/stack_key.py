"""The stack's one customer managed KMS key: the notification topics it creates, the functions'
dead-letter queues and the functions' log groups are encrypted with it.

Each AWS service that uses the key on our behalf is named in the key policy with conditions that bind
it to this account's own resources (a confused deputy in another account gets nothing):

* CloudWatch alarms publishing to an encrypted topic: ``aws:SourceAccount`` and ``aws:SourceArn``
  (this account's alarms).
* EventBridge rules parking an undeliverable event in an encrypted DLQ: ``aws:SourceAccount`` and
  ``aws:SourceArn`` (this account's rules in this region). Not the rules' own ARNs: the queue names the
  key, the rule names the queue, so a key policy naming the rules would be a dependency cycle.
* CloudWatch Logs, per log group: ``kms:EncryptionContext:aws:logs:arn`` equal to that log group's
  ARN, the condition CloudWatch Logs documents for a customer managed key (its requests carry the
  log group's ARN as encryption context; AWS documents no ``aws:SourceArn`` for them).

The Lambda functions' own use (sending to their DLQ, publishing to the topics) is granted on their
roles by CDK's grants; the key policy trusts the account for that, as every KMS key does by default.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct


class StackKey(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, env_name: str) -> None:
        super().__init__(scope, construct_id)
        self.key = kms.Key(
            self,
            "Key",
            description=f"LiveKit Fleet Remediation {env_name}: notification topics, dead-letter queues "
            "and function logs",
            enable_key_rotation=True,
            # What it encrypts (topics, queues, the functions' log groups) goes with the stack; KMS
            # still waits out the pending window before it deletes the key.
            removal_policy=RemovalPolicy.DESTROY,
        )
        self._alarms_allowed = False
        self._rules_allowed = False

    def allow_alarms(self) -> None:
        """CloudWatch alarms of this account may publish to a topic encrypted with the key."""
        if self._alarms_allowed:
            return
        self._alarms_allowed = True
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsOfThisAccount",
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                resources=["*"],
                conditions=from_our(self, "cloudwatch", "alarm", ArnFormat.COLON_RESOURCE_NAME),
            )
        )

    def allow_rule_dead_letters(self) -> None:
        """EventBridge rules of this account may send to a dead-letter queue encrypted with the key."""
        if self._rules_allowed:
            return
        self._rules_allowed = True
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="EventBridgeRulesOfThisAccount",
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                principals=[iam.ServicePrincipal("events.amazonaws.com")],
                resources=["*"],
                conditions=from_our(self, "events", "rule", ArnFormat.SLASH_RESOURCE_NAME),
            )
        )

    def allow_log_group(self, statement_id: str, log_group_name: str) -> None:
        """CloudWatch Logs may encrypt and decrypt the events of this one log group with the key."""
        stack = Stack.of(self)
        log_group_arn = stack.format_arn(
            service="logs",
            resource="log-group",
            resource_name=log_group_name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid=statement_id,
                actions=[
                    "kms:Encrypt*",
                    "kms:Decrypt*",
                    "kms:ReEncrypt*",
                    "kms:GenerateDataKey*",
                    "kms:Describe*",
                ],
                principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
                resources=["*"],
                conditions={"ArnEquals": {"kms:EncryptionContext:aws:logs:arn": log_group_arn}},
            )
        )


def from_our(
    scope: Construct, service: str, resource: str, arn_format: ArnFormat
) -> dict[str, dict[str, str]]:
    """Conditions for a service principal: acting for this account's ``resource``s of ``service``."""
    stack = Stack.of(scope)
    ours = stack.format_arn(service=service, resource=resource, resource_name="*", arn_format=arn_format)
    return {"StringEquals": {"aws:SourceAccount": stack.account}, "ArnLike": {"aws:SourceArn": ours}}
