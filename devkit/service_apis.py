"""Which API call creates each CloudFormation resource type, and where each property goes in it: the map
``devkit.service_models`` checks a template with. A property not routed here goes to the type's create
call under its own name (compared without case: ``LogGroupName`` is ``logGroupName``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from devkit.template_values import json_text


@dataclass(frozen=True)
class Route:
    """Property -> ``call``'s input ``member`` (dotted path; "" is the whole input; None is the
    property's own name), converted first; ``each``: one call per list item."""

    call: str
    member: str | None = None
    convert: Callable[[Any], Any] | None = None
    each: bool = False


@dataclass(frozen=True)
class ResourceApis:
    create: str
    routes: Mapping[str, Route] = field(default_factory=dict)
    # Properties no API receives as a value, each with why.
    not_sent: Mapping[str, str] = field(default_factory=dict)


def tags(key: str = "Key", value: str = "Value", *, as_map: bool = False) -> Callable[[Any], Any]:
    """CloudFormation's tags (a list of Key/Value, or a map) in the API's form."""

    def convert(raw: Any) -> Any:
        pairs = raw.items() if isinstance(raw, dict) else [(tag["Key"], tag["Value"]) for tag in raw]
        return dict(pairs) if as_map else [{key: name, value: text} for name, text in pairs]

    return convert


def attribute_text(raw: Any) -> Any:
    """SNS and SQS attributes are strings: a number or a boolean as CloudFormation sends it."""
    if isinstance(raw, bool):
        return str(raw).lower()
    if isinstance(raw, int | float):
        return str(raw)
    return raw if not isinstance(raw, dict | list) else json_text(raw)


def renamed(**names: str) -> Callable[[Any], Any]:
    def convert(raw: Any) -> Any:
        return {names.get(key, key): item for key, item in raw.items()} if isinstance(raw, dict) else raw

    return convert


def inline_policy(raw: Any) -> Any:
    return {**raw, "PolicyDocument": json_text(raw.get("PolicyDocument", {}))}


def metric_transformations(raw: Any) -> Any:
    """A metric filter's dimensions are a Key/Value list in CloudFormation, a map in the API."""

    def one(item: dict[str, Any]) -> dict[str, Any]:
        if "Dimensions" not in item:
            return item
        return {**item, "Dimensions": {pair["Key"]: pair["Value"] for pair in item["Dimensions"]}}

    return [one(item) for item in raw] if isinstance(raw, list) else raw


def _sqs_attribute(name: str) -> Route:
    return Route("sqs:CreateQueue", f"Attributes.{name}", attribute_text)


def _sns_attribute(name: str) -> Route:
    return Route("sns:CreateTopic", f"Attributes.{name}", attribute_text)


_SQS_ATTRIBUTES = (
    "DelaySeconds",
    "KmsDataKeyReusePeriodSeconds",
    "KmsMasterKeyId",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "SqsManagedSseEnabled",
    "VisibilityTimeout",
    "FifoQueue",
    "ContentBasedDeduplication",
)
_SNS_ATTRIBUTES = ("DisplayName", "KmsMasterKeyId", "FifoTopic", "ContentBasedDeduplication", "TracingConfig")

RESOURCE_APIS: dict[str, ResourceApis] = {
    "AWS::Chatbot::CustomAction": ResourceApis(
        "chatbot:CreateCustomAction",
        {"Tags": Route("chatbot:CreateCustomAction", "Tags", tags("TagKey", "TagValue"))},
    ),
    "AWS::Chatbot::SlackChannelConfiguration": ResourceApis(
        "chatbot:CreateSlackChannelConfiguration",
        {
            "SlackWorkspaceId": Route("chatbot:CreateSlackChannelConfiguration", "SlackTeamId"),
            "GuardrailPolicies": Route("chatbot:CreateSlackChannelConfiguration", "GuardrailPolicyArns"),
            "UserRoleRequired": Route("chatbot:CreateSlackChannelConfiguration", "UserAuthorizationRequired"),
            "CustomizationResourceArns": Route("chatbot:AssociateToConfiguration", "Resource", each=True),
            "Tags": Route("chatbot:CreateSlackChannelConfiguration", "Tags", tags("TagKey", "TagValue")),
        },
    ),
    "AWS::CloudWatch::Alarm": ResourceApis(
        "cloudwatch:PutMetricAlarm", {"Tags": Route("cloudwatch:PutMetricAlarm", "Tags", tags())}
    ),
    "AWS::CloudWatch::CompositeAlarm": ResourceApis(
        "cloudwatch:PutCompositeAlarm", {"Tags": Route("cloudwatch:PutCompositeAlarm", "Tags", tags())}
    ),
    "AWS::CloudWatch::Dashboard": ResourceApis("cloudwatch:PutDashboard"),
    "AWS::DynamoDB::Table": ResourceApis(
        "dynamodb:CreateTable",
        {
            "SSESpecification": Route("dynamodb:CreateTable", None, renamed(SSEEnabled="Enabled")),
            "TimeToLiveSpecification": Route("dynamodb:UpdateTimeToLive"),
            "PointInTimeRecoverySpecification": Route("dynamodb:UpdateContinuousBackups"),
            "Tags": Route("dynamodb:CreateTable", "Tags", tags()),
        },
    ),
    "AWS::Events::Rule": ResourceApis(
        "events:PutRule",
        {
            "EventPattern": Route("events:PutRule", None, json_text),
            "Targets": Route("events:PutTargets"),
            "Tags": Route("events:PutRule", "Tags", tags()),
        },
    ),
    # Every property goes to CreateExperimentTemplate under its own name (tags a map in both).
    "AWS::FIS::ExperimentTemplate": ResourceApis("fis:CreateExperimentTemplate"),
    "AWS::IAM::ManagedPolicy": ResourceApis(
        "iam:CreatePolicy",
        {
            "ManagedPolicyName": Route("iam:CreatePolicy", "PolicyName"),
            "PolicyDocument": Route("iam:CreatePolicy", None, json_text),
            "Roles": Route("iam:AttachRolePolicy", "RoleName", each=True),
            "Users": Route("iam:AttachUserPolicy", "UserName", each=True),
            "Groups": Route("iam:AttachGroupPolicy", "GroupName", each=True),
        },
    ),
    "AWS::IAM::Policy": ResourceApis(
        "iam:PutRolePolicy",
        {
            "PolicyDocument": Route("iam:PutRolePolicy", None, json_text),
            "Roles": Route("iam:PutRolePolicy", "RoleName", each=True),
            "Users": Route("iam:PutUserPolicy", "UserName", each=True),
            "Groups": Route("iam:PutGroupPolicy", "GroupName", each=True),
        },
    ),
    "AWS::IAM::Role": ResourceApis(
        "iam:CreateRole",
        {
            "AssumeRolePolicyDocument": Route("iam:CreateRole", None, json_text),
            "ManagedPolicyArns": Route("iam:AttachRolePolicy", "PolicyArn", each=True),
            "Policies": Route("iam:PutRolePolicy", "", inline_policy, each=True),
            "Tags": Route("iam:CreateRole", "Tags", tags()),
        },
    ),
    "AWS::KMS::Key": ResourceApis(
        "kms:CreateKey",
        {
            "KeyPolicy": Route("kms:CreateKey", "Policy", json_text),
            "PendingWindowInDays": Route("kms:ScheduleKeyDeletion"),
            "RotationPeriodInDays": Route("kms:EnableKeyRotation"),
            "Tags": Route("kms:CreateKey", "Tags", tags("TagKey", "TagValue")),
        },
        not_sent={"EnableKeyRotation": "decides whether EnableKeyRotation is called; no member"},
    ),
    "AWS::Lambda::EventInvokeConfig": ResourceApis("lambda:PutFunctionEventInvokeConfig"),
    "AWS::Lambda::Function": ResourceApis(
        "lambda:CreateFunction",
        {
            "ReservedConcurrentExecutions": Route("lambda:PutFunctionConcurrency"),
            "Tags": Route("lambda:CreateFunction", "Tags", tags(as_map=True)),
        },
    ),
    "AWS::Lambda::LayerVersion": ResourceApis("lambda:PublishLayerVersion"),
    "AWS::Lambda::Permission": ResourceApis("lambda:AddPermission"),
    "AWS::Logs::LogGroup": ResourceApis(
        "logs:CreateLogGroup",
        {
            "RetentionInDays": Route("logs:PutRetentionPolicy"),
            "Tags": Route("logs:CreateLogGroup", "tags", tags(as_map=True)),
        },
    ),
    "AWS::Logs::MetricFilter": ResourceApis(
        "logs:PutMetricFilter",
        {"MetricTransformations": Route("logs:PutMetricFilter", None, metric_transformations)},
    ),
    "AWS::Logs::QueryDefinition": ResourceApis("logs:PutQueryDefinition"),
    "AWS::SNS::Subscription": ResourceApis("sns:Subscribe"),
    "AWS::SNS::Topic": ResourceApis(
        "sns:CreateTopic",
        {
            "TopicName": Route("sns:CreateTopic", "Name"),
            "Tags": Route("sns:CreateTopic", "Tags", tags()),
            **{name: _sns_attribute(name) for name in _SNS_ATTRIBUTES},
        },
    ),
    "AWS::SNS::TopicPolicy": ResourceApis(
        "sns:SetTopicAttributes",
        {
            "PolicyDocument": Route("sns:SetTopicAttributes", "AttributeValue", json_text),
            "Topics": Route("sns:SetTopicAttributes", "TopicArn", each=True),
        },
    ),
    "AWS::SQS::Queue": ResourceApis(
        "sqs:CreateQueue",
        {
            "Tags": Route("sqs:CreateQueue", "tags", tags(as_map=True)),
            "RedrivePolicy": Route("sqs:CreateQueue", "Attributes.RedrivePolicy", json_text),
            **{name: _sqs_attribute(name) for name in _SQS_ATTRIBUTES},
        },
    ),
    "AWS::SQS::QueuePolicy": ResourceApis(
        "sqs:SetQueueAttributes",
        {
            "PolicyDocument": Route("sqs:SetQueueAttributes", "Attributes.Policy", json_text),
            "Queues": Route("sqs:SetQueueAttributes", "QueueUrl", each=True),
        },
    ),
    "AWS::SSM::Parameter": ResourceApis(
        "ssm:PutParameter", {"Tags": Route("ssm:AddTagsToResource", "Tags", tags())}
    ),
}
