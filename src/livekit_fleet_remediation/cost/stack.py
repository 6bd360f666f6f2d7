"""What the synthesized stack bills for, counted from its CloudFormation template, and the EMF metric
series its functions emit (``fleet_remediation.contract.metrics``).

Every resource type in the template is either priced here (``PRICED``) or named free (``FREE``);
``unpriced_types`` lists any other, and a test fails on it, so a new billable resource cannot slip
past the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Tables (on demand) and queues (dead letters) have no charge of their own: their requests are
# priced where the functions make them; a queue only takes messages when deliveries fail.
PRICED = frozenset(
    {
        "AWS::CloudWatch::Alarm",
        "AWS::CloudWatch::CompositeAlarm",
        "AWS::CloudWatch::Dashboard",
        "AWS::DynamoDB::Table",
        "AWS::Events::Rule",
        "AWS::KMS::Key",
        "AWS::Lambda::Function",
        "AWS::Logs::LogGroup",
        "AWS::Logs::MetricFilter",
        "AWS::SNS::Topic",
        "AWS::SNS::Subscription",
        "AWS::SQS::Queue",
    }
)
# No charge of their own: permissions, wiring, standard-tier parameters (standard throughput), layer
# versions (inside Lambda's free code storage), Amazon Q Developer in chat channels (no charge
# of its own: what it delivers is SNS's), saved Logs Insights queries (a query is billed when run)
# and AWS FIS experiment templates (an experiment is billed per action-minute when a drill runs it).
FREE = frozenset(
    {
        "AWS::FIS::ExperimentTemplate",
        "AWS::Logs::QueryDefinition",
        "AWS::Chatbot::CustomAction",
        "AWS::Chatbot::SlackChannelConfiguration",
        "AWS::IAM::ManagedPolicy",
        "AWS::IAM::Policy",
        "AWS::IAM::Role",
        "AWS::Lambda::EventInvokeConfig",
        "AWS::Lambda::LayerVersion",
        "AWS::Lambda::Permission",
        "AWS::SNS::TopicPolicy",
        "AWS::SQS::QueuePolicy",
        "AWS::SSM::Parameter",
        "AWS::CDK::Metadata",
    }
)
_RATE = re.compile(r"rate\((\d+) minutes?\)")
_TOKEN = "TOKEN"


@dataclass(frozen=True)
class FunctionCount:
    name: str
    memory_mb: int
    architecture: str
    # Invocations a month from its schedules (alarm- and event-triggered ones come from the replay).
    scheduled_per_month: float
    log_retention_days: int
    traced: bool = False


@dataclass(frozen=True)
class LogWidget:
    query: str
    agent_logs: bool


@dataclass
class StackCounts:
    region: str
    functions: dict[str, FunctionCount] = field(default_factory=dict)
    alarm_metrics: int = 0
    composite_alarms: int = 0
    dashboards: int = 0
    dashboard_minutes: int = 0
    log_widgets: list[LogWidget] = field(default_factory=list)
    filter_series: int = 0
    keys: int = 0
    rotating_keys: int = 0
    topics: int = 0
    email_subscriptions: int = 0
    types: frozenset[str] = frozenset()


MINUTES_PER_MONTH = 730 * 60


def unpriced_types(types: Iterable[str]) -> list[str]:
    return sorted(set(types) - PRICED - FREE)


def synthesized_template(
    env_name: str, context: dict[str, Any], outdir: str, flags_from: Path | None = None
) -> dict[str, Any]:
    """The environment's stack as the standalone app synthesizes it, with the feature flags of the
    cdk.json ``flags_from`` when it exists (loads the CDK, when called: seconds)."""
    from aws_cdk.assertions import Template

    from livekit_fleet_remediation.standalone import build_app, pinned_context

    flags = pinned_context(flags_from) if flags_from is not None else {}
    _, stack = build_app(env_name, {**flags, **context}, outdir)
    return dict(Template.from_stack(stack).to_json())


def count_stack(template: dict[str, Any], region: str, agent_log_groups: Iterable[str]) -> StackCounts:
    """What ``template`` bills for; ``agent_log_groups``: every agent service's log group."""
    resources: dict[str, Any] = template["Resources"]
    counts = StackCounts(region=region, types=frozenset(r["Type"] for r in resources.values()))
    counts.functions = _functions(resources)
    for resource in resources.values():
        kind, properties = resource["Type"], resource.get("Properties", {})
        if kind == "AWS::CloudWatch::Alarm":
            counts.alarm_metrics += _alarm_metrics(properties)
        elif kind == "AWS::CloudWatch::Dashboard":
            counts.dashboards += 1
            _dashboard(counts, properties["DashboardBody"], frozenset(agent_log_groups))
        elif kind == "AWS::Logs::MetricFilter":
            counts.filter_series += len(properties["MetricTransformations"])
        elif kind == "AWS::SNS::Subscription" and properties.get("Protocol") == "email":
            counts.email_subscriptions += 1
        elif kind == "AWS::KMS::Key":
            counts.keys += 1
            counts.rotating_keys += int(bool(properties.get("EnableKeyRotation")))
        else:
            _tally(counts, kind)
    return counts


def _tally(counts: StackCounts, kind: str) -> None:
    fields = {
        "AWS::CloudWatch::CompositeAlarm": "composite_alarms",
        "AWS::SNS::Topic": "topics",
    }
    if kind in fields:
        setattr(counts, fields[kind], getattr(counts, fields[kind]) + 1)


def _alarm_metrics(properties: dict[str, Any]) -> int:
    """An alarm is billed per metric it reads; metric math over them is not a metric."""
    if "Metrics" in properties:
        return sum(1 for query in properties["Metrics"] if "MetricStat" in query)
    return 1


def _functions(resources: dict[str, Any]) -> dict[str, FunctionCount]:
    per_month: dict[str, float] = {}
    for resource in resources.values():
        properties = resource.get("Properties", {})
        found = _RATE.fullmatch(str(properties.get("ScheduleExpression", "")))
        if resource["Type"] != "AWS::Events::Rule" or not found or properties.get("State") == "DISABLED":
            continue
        for target in properties.get("Targets", []):
            logical_id = target["Arn"]["Fn::GetAtt"][0]
            per_month[logical_id] = per_month.get(logical_id, 0.0) + MINUTES_PER_MONTH / int(found.group(1))
    retention = {
        r["Properties"]["LogGroupName"]: int(r["Properties"].get("RetentionInDays", 0))
        for r in resources.values()
        if r["Type"] == "AWS::Logs::LogGroup"
    }
    functions = {}
    for logical_id, resource in resources.items():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        properties = resource["Properties"]
        name = str(properties["FunctionName"])
        functions[name] = FunctionCount(
            name=name,
            memory_mb=int(properties.get("MemorySize", 128)),
            architecture=str(properties.get("Architectures", ["x86_64"])[0]),
            scheduled_per_month=per_month.get(logical_id, 0.0),
            log_retention_days=retention.get(f"/aws/lambda/{name}", 0),
            traced=properties.get("TracingConfig", {}).get("Mode") == "Active",
        )
    return functions


def _dashboard(counts: StackCounts, body: Any, agent_log_groups: frozenset[str]) -> None:
    """The dashboard's Logs Insights widgets (each runs its query on every load) and its time range."""
    parts = body["Fn::Join"][1] if isinstance(body, dict) else [body]
    document = json.loads("".join(p if isinstance(p, str) else _TOKEN for p in parts))
    counts.dashboard_minutes = _iso_minutes(document.get("start", "-PT3H"))
    for widget in document["widgets"]:
        if widget["type"] == "log":
            query = widget["properties"]["query"]
            agent_logs = any(f"'{group}'" in query for group in agent_log_groups)
            counts.log_widgets.append(LogWidget(query, agent_logs=agent_logs))


def _iso_minutes(start: str) -> int:
    found = re.fullmatch(r"-PT(?:(\d+)H)?(?:(\d+)M)?", start)
    if not found:
        raise ValueError(f"dashboard start {start!r} is not -PTnHnM")
    return int(found.group(1) or 0) * 60 + int(found.group(2) or 0)
