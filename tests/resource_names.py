"""The physical name each resource type the construct creates may carry, for the collision and
retention checks. A type missing here fails those checks, so a new kind of resource gets a decision."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# Type -> the property that names it in the account (None: the type has no name of its own there).
PHYSICAL_NAME = {
    "AWS::Lambda::Function": "FunctionName",
    "AWS::Lambda::LayerVersion": "LayerName",
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::Logs::MetricFilter": "FilterName",
    "AWS::Logs::QueryDefinition": "Name",
    "AWS::CloudWatch::Alarm": "AlarmName",
    "AWS::CloudWatch::CompositeAlarm": "AlarmName",
    "AWS::CloudWatch::Dashboard": "DashboardName",
    "AWS::SSM::Parameter": "Name",
    "AWS::Events::Rule": "Name",
    "AWS::SQS::Queue": "QueueName",
    "AWS::DynamoDB::Table": "TableName",
    "AWS::KMS::Key": None,
    "AWS::KMS::Alias": "AliasName",
    "AWS::SNS::Topic": "TopicName",
    "AWS::IAM::Role": "RoleName",
    "AWS::IAM::ManagedPolicy": "ManagedPolicyName",
    "AWS::Chatbot::SlackChannelConfiguration": "ConfigurationName",
    "AWS::Chatbot::CustomAction": "ActionName",
    # Named only inside their parent (a role's inline policy, a topic's or queue's policy) or not at all.
    "AWS::IAM::Policy": None,
    "AWS::SNS::TopicPolicy": None,
    "AWS::SNS::Subscription": None,
    "AWS::SQS::QueuePolicy": None,
    "AWS::Lambda::Permission": None,
    "AWS::Lambda::EventInvokeConfig": None,
}
RETAINING = {"Retain", "RetainExceptOnCreate", "Snapshot"}


def physical_name(resource: Mapping[str, Any]) -> str | None:
    """The resource's name in the account as the template fixes it (JSON for a computed one), or None
    when CloudFormation generates it."""
    kind = resource["Type"]
    assert kind in PHYSICAL_NAME, f"{kind}: add it to tests/resource_names.py (which property names it?)"
    field = PHYSICAL_NAME[kind]
    value = resource.get("Properties", {}).get(field) if field else None
    if value is None:
        return None
    return f"{kind} {value if isinstance(value, str) else json.dumps(value, sort_keys=True)}"


def named_resources(template: Mapping[str, Any]) -> dict[str, str]:
    """Logical id -> fixed physical name, for every resource of the template that has one."""
    names = {logical_id: physical_name(resource) for logical_id, resource in template["Resources"].items()}
    return {logical_id: name for logical_id, name in names.items() if name is not None}


def retained_with_fixed_names(template: Mapping[str, Any]) -> list[str]:
    """Resources CloudFormation keeps on delete or replacement that also carry a fixed name: a
    deploy after a teardown (or a replacement) would collide with the one left behind."""
    return [
        f"{logical_id}: {name}"
        for logical_id, name in named_resources(template).items()
        if {
            template["Resources"][logical_id].get("DeletionPolicy"),
            template["Resources"][logical_id].get("UpdateReplacePolicy"),
        }
        & RETAINING
    ]
