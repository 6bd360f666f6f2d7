"""The documented quotas neither CloudFormation nor the API models check, over a synthesized template.

Each ``Quota`` names its number and the AWS page that documents it; ``docs/development/service-limits.md``
lists them. Deploy-time values count by their literal part (``devkit.template_values``), so a size here is
a lower bound of the deployed one.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from devkit.insights_queries import queries_sent
from devkit.service_models import Finding
from devkit.template_values import Partial, Resolver, json_text, sample


@dataclass(frozen=True)
class Quota:
    name: str
    limit: int
    source: str

    def breach(self, resource: str, resource_type: str, path: str, found: str) -> Finding:
        return Finding(
            resource, resource_type, path, f"{found}, over {self.limit}", f"{self.name}: {self.source}"
        )


LAMBDA_QUOTAS = "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html"
CLOUDWATCH_QUOTAS = "https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_limits.html"
SSM_PUT_PARAMETER = "https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_PutParameter.html"
SQS_ATTRIBUTES = (
    "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html"
)

ENVIRONMENT_SIZE = Quota(
    "Lambda environment variables, all together (bytes of their JSON)", 4096, LAMBDA_QUOTAS
)
FUNCTION_NAME = Quota(
    "Lambda function name (characters)",
    64,
    "https://docs.aws.amazon.com/lambda/latest/api/API_CreateFunction.html",
)
ALARM_METRICS = Quota("Metrics (MetricStat) in a metric-math alarm", 10, CLOUDWATCH_QUOTAS)
ALARM_EXPRESSIONS = Quota(
    "Expressions in a metric-math alarm",
    10,
    "https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_MetricDataQuery.html",
)
COMPOSITE_CHILDREN = Quota(
    "Alarms named in one composite alarm rule",
    100,
    "https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutCompositeAlarm.html",
)
INSIGHTS_QUERY = Quota(
    "Logs Insights query string (characters)",
    10000,
    "https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_StartQuery.html",
)
PARAMETER_NAME = Quota("SSM parameter name with the ARN before it (characters)", 1011, SSM_PUT_PARAMETER)
PARAMETER_DEPTH = Quota("SSM parameter hierarchy depth (levels)", 15, SSM_PUT_PARAMETER)
FILTERS_PER_GROUP = Quota(
    "Metric filters per log group",
    100,
    "https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutMetricFilter.html",
)
REGEX_PER_FILTER = Quota("Regular expressions in one filter pattern", 2, FILTERS_PER_GROUP.source)
REGEX_PER_GROUP = Quota("Regular expressions in filter patterns per log group", 5, FILTERS_PER_GROUP.source)
DASHBOARD_WIDGETS = Quota("Widgets per dashboard", 500, CLOUDWATCH_QUOTAS)
WIDGET_METRICS = Quota("Metrics per dashboard widget", 500, CLOUDWATCH_QUOTAS)
DASHBOARD_METRICS = Quota("Metrics per dashboard", 2500, CLOUDWATCH_QUOTAS)
EVENT_PATTERN = Quota(
    "EventBridge event pattern (characters; the default quota)",
    2048,
    "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html",
)
IAM_QUOTAS = "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html"
ROLE_INLINE_POLICIES = Quota(
    "A role's inline policies, all together (characters but white space)", 10240, IAM_QUOTAS
)
MANAGED_POLICY = Quota("A managed policy (characters but white space)", 6144, IAM_QUOTAS)
TRUST_POLICY = Quota(
    "A role's trust policy (characters but white space; the default quota)", 2048, IAM_QUOTAS
)
ROLE_MANAGED_POLICIES = Quota("Managed policies attached to a role (the default quota)", 10, IAM_QUOTAS)
# SQS attribute -> (least, most), CreateQueue/SetQueueAttributes' documented ranges.
SQS_RANGES = {
    "DelaySeconds": (0, 900),
    "KmsDataKeyReusePeriodSeconds": (60, 86400),
    "MessageRetentionPeriod": (60, 1209600),
    "ReceiveMessageWaitTimeSeconds": (0, 20),
    "VisibilityTimeout": (0, 43200),
}
QUOTAS = (
    ENVIRONMENT_SIZE,
    FUNCTION_NAME,
    ALARM_METRICS,
    ALARM_EXPRESSIONS,
    COMPOSITE_CHILDREN,
    INSIGHTS_QUERY,
    PARAMETER_NAME,
    PARAMETER_DEPTH,
    FILTERS_PER_GROUP,
    REGEX_PER_FILTER,
    REGEX_PER_GROUP,
    DASHBOARD_WIDGETS,
    WIDGET_METRICS,
    DASHBOARD_METRICS,
    EVENT_PATTERN,
    ROLE_INLINE_POLICIES,
    MANAGED_POLICY,
    TRUST_POLICY,
    ROLE_MANAGED_POLICIES,
)
_CHILD_ALARM = re.compile(r"\b(?:ALARM|OK|INSUFFICIENT_DATA)\s*\(")
# A filter pattern's regular expressions sit between percent signs.
_FILTER_REGEX = re.compile(r"%[^%]+%")

Resources = dict[str, Any]
Rule = Callable[[Resources, Resolver], Iterator[Finding]]


def check_quotas(template: Mapping[str, Any], region: str, account: str) -> list[Finding]:
    resources = template.get("Resources", {})
    resolver = Resolver(resources, region, account)
    return [finding for rule in RULES for finding in rule(resources, resolver)]


def _of_type(resources: Resources, resolver: Resolver, kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for logical_id, resource in resources.items():
        if resource["Type"] == kind:
            yield logical_id, resolver.value(resource.get("Properties", {}))


def _functions(resources: Resources, resolver: Resolver) -> Iterator[Finding]:
    kind = "AWS::Lambda::Function"
    for logical_id, properties in _of_type(resources, resolver, kind):
        variables = properties.get("Environment", {}).get("Variables", {})
        size = len(sample(json_text(variables)).encode())
        if size > ENVIRONMENT_SIZE.limit:
            yield ENVIRONMENT_SIZE.breach(logical_id, kind, "Environment.Variables", f"at least {size} bytes")
        name = properties.get("FunctionName")
        if isinstance(name, str) and len(name) > FUNCTION_NAME.limit:
            yield FUNCTION_NAME.breach(logical_id, kind, "FunctionName", f"{len(name)} characters")
        for label, query in queries_sent(variables):
            if len(query) > INSIGHTS_QUERY.limit:
                where = f"Environment.Variables (the {label} query)"
                yield INSIGHTS_QUERY.breach(logical_id, kind, where, f"{len(query)} characters")


def _alarms(resources: Resources, resolver: Resolver) -> Iterator[Finding]:
    kind = "AWS::CloudWatch::Alarm"
    for logical_id, properties in _of_type(resources, resolver, kind):
        queries = properties.get("Metrics", [])
        stats = sum(1 for query in queries if "MetricStat" in query)
        expressions = sum(1 for query in queries if "Expression" in query)
        if stats > ALARM_METRICS.limit:
            yield ALARM_METRICS.breach(logical_id, kind, "Metrics", f"{stats} metrics")
        if expressions > ALARM_EXPRESSIONS.limit:
            yield ALARM_EXPRESSIONS.breach(logical_id, kind, "Metrics", f"{expressions} expressions")
    kind = "AWS::CloudWatch::CompositeAlarm"
    for logical_id, properties in _of_type(resources, resolver, kind):
        children = len(_CHILD_ALARM.findall(sample(properties.get("AlarmRule", ""))))
        if children > COMPOSITE_CHILDREN.limit:
            yield COMPOSITE_CHILDREN.breach(logical_id, kind, "AlarmRule", f"{children} alarms")


def _parameters(resources: Resources, resolver: Resolver) -> Iterator[Finding]:
    kind = "AWS::SSM::Parameter"
    for logical_id, properties in _of_type(resources, resolver, kind):
        name = properties.get("Name")
        if not isinstance(name, str):
            continue  # CloudFormation names it
        arn = (
            f"arn:{resolver.partition}:ssm:{resolver.region}:{resolver.account}:parameter/{name.lstrip('/')}"
        )
        if len(arn) > PARAMETER_NAME.limit:
            yield PARAMETER_NAME.breach(logical_id, kind, "Name", f"{len(arn)} characters with its ARN")
        depth = len([level for level in name.split("/") if level])
        if depth > PARAMETER_DEPTH.limit:
            yield PARAMETER_DEPTH.breach(logical_id, kind, "Name", f"{depth} levels")


def _metric_filters(resources: Resources, resolver: Resolver) -> Iterator[Finding]:
    kind = "AWS::Logs::MetricFilter"
    per_group: Counter[str] = Counter()
    regexes: Counter[str] = Counter()
    first: dict[str, str] = {}
    for logical_id, properties in _of_type(resources, resolver, kind):
        group = sample(properties.get("LogGroupName", ""))
        first.setdefault(group, logical_id)
        per_group[group] += 1
        found = len(_FILTER_REGEX.findall(sample(properties.get("FilterPattern", ""))))
        regexes[group] += found
        if found > REGEX_PER_FILTER.limit:
            yield REGEX_PER_FILTER.breach(logical_id, kind, "FilterPattern", f"{found} regular expressions")
    for group, count in per_group.items():
        if count > FILTERS_PER_GROUP.limit:
            yield FILTERS_PER_GROUP.breach(first[group], kind, "LogGroupName", f"{count} filters on {group}")
        if regexes[group] > REGEX_PER_GROUP.limit:
            counted = f"{regexes[group]} regular expressions on {group}"
            yield REGEX_PER_GROUP.breach(first[group], kind, "FilterPattern", counted)


def _dashboards(resources: Resources, resolver: Resolver) -> Iterator[Finding]:
    kind = "AWS::CloudWatch::Dashboard"
    for logical_id, properties in _of_type(resources, resolver, kind):
        widgets = json.loads(sample(properties.get("DashboardBody", "{}"))).get("widgets", [])
        if len(widgets) > DASHBOARD_WIDGETS.limit:
            yield DASHBOARD_WIDGETS.breach(logical_id, kind, "DashboardBody", f"{len(widgets)} widgets")
        total = 0
        for index, widget in enumerate(widgets):
            widget_properties = widget.get("properties", {})
            metrics = len(widget_properties.get("metrics", []))
            total += metrics
            where = f"DashboardBody.widgets[{index}]"
            if metrics > WIDGET_METRICS.limit:
                yield WIDGET_METRICS.breach(logical_id, kind, where, f"{metrics} metrics")
            query = widget_properties.get("query", "")
            if len(query) > INSIGHTS_QUERY.limit:
                yield INSIGHTS_QUERY.breach(logical_id, kind, f"{where}.query", f"{len(query)} characters")
        if total > DASHBOARD_METRICS.limit:
            yield DASHBOARD_METRICS.breach(logical_id, kind, "DashboardBody", f"{total} metrics")


def _rules(resources: Resources, resolver: Resolver) -> Iterator[Finding]:
    kind = "AWS::Events::Rule"
    for logical_id, properties in _of_type(resources, resolver, kind):
        if "EventPattern" in properties:
            size = len(sample(json_text(properties["EventPattern"])))
            if size > EVENT_PATTERN.limit:
                yield EVENT_PATTERN.breach(logical_id, kind, "EventPattern", f"at least {size} characters")


def _queues(resources: Resources, resolver: Resolver) -> Iterator[Finding]:
    kind = "AWS::SQS::Queue"
    for logical_id, properties in _of_type(resources, resolver, kind):
        for attribute, (least, most) in SQS_RANGES.items():
            value = properties.get(attribute)
            if value is None or isinstance(value, Partial):
                continue
            if not least <= int(value) <= most:
                limit = f"SQS {attribute} {least}..{most}: {SQS_ATTRIBUTES}"
                yield Finding(logical_id, kind, attribute, f"{value} is outside {least}..{most}", limit)


def policy_size(document: Any) -> int:
    """IAM counts a policy's characters but its white space."""
    return len(re.sub(r"\s", "", sample(json_text(document))))


def _roles(resources: Resources, resolver: Resolver) -> Iterator[Finding]:
    inline: Counter[str] = Counter()
    attached: Counter[str] = Counter()
    for logical_id, properties in _of_type(resources, resolver, "AWS::IAM::Role"):
        inline[logical_id] += sum(
            policy_size(policy["PolicyDocument"]) for policy in properties.get("Policies", [])
        )
        attached[logical_id] += len(properties.get("ManagedPolicyArns", []))
        trust = policy_size(properties.get("AssumeRolePolicyDocument", {}))
        if trust > TRUST_POLICY.limit:
            yield TRUST_POLICY.breach(
                logical_id, "AWS::IAM::Role", "AssumeRolePolicyDocument", f"{trust} characters"
            )
    for kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
        for logical_id, properties in _of_type(resources, resolver, kind):
            size = policy_size(properties["PolicyDocument"])
            roles = [str(role.get("Ref")) for role in resources[logical_id]["Properties"].get("Roles", [])]
            if kind == "AWS::IAM::ManagedPolicy":
                attached.update(roles)
                if size > MANAGED_POLICY.limit:
                    yield MANAGED_POLICY.breach(
                        logical_id, kind, "PolicyDocument", f"at least {size} characters"
                    )
            else:
                inline.update(dict.fromkeys(roles, size))
    for role, size in inline.items():
        if size > ROLE_INLINE_POLICIES.limit:
            yield ROLE_INLINE_POLICIES.breach(
                role, "AWS::IAM::Role", "inline policies", f"at least {size} characters"
            )
    for role, count in attached.items():
        if count > ROLE_MANAGED_POLICIES.limit:
            yield ROLE_MANAGED_POLICIES.breach(
                role, "AWS::IAM::Role", "ManagedPolicyArns", f"{count} policies"
            )


RULES: tuple[Rule, ...] = (
    _functions,
    _alarms,
    _parameters,
    _metric_filters,
    _dashboards,
    _rules,
    _queues,
    _roles,
)
