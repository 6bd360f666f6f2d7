"""A template the service APIs accept: every value each synthesized stack (every environment of the
example configuration, and the consumer app) hands to an AWS API is checked against botocore's model of
the call that creates the resource (``devkit.service_models``), and the documented quotas neither
CloudFormation nor the models check hold (``devkit.service_quotas``). The checks themselves are shown
failing on a synthetic template for each kind of breach, naming the resource, the property and the limit.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from devkit.service_apis import RESOURCE_APIS
from devkit.service_models import Finding, check_template
from devkit.service_quotas import QUOTAS, check_quotas
from devkit.template_values import Partial, Resolver
from tests.example_environments import EXAMPLE_CONFIG, REPO

ENVIRONMENTS = sorted(json.loads(EXAMPLE_CONFIG.read_text())["environments"])
STACKS = [*ENVIRONMENTS, "consumer app"]
REGION, ACCOUNT = "eu-west-1", "123456789012"
DOCS = REPO / "docs" / "development" / "service-limits.md"


def _report(findings: list[Finding]) -> str:
    return "\n".join(str(finding) for finding in findings)


@pytest.mark.parametrize("name", STACKS)
def test_the_apis_accept_every_value_the_template_hands_them(
    name: str, stack_templates: dict[str, Any]
) -> None:
    findings = check_template(*stack_templates[name])
    assert findings == [], _report(findings)


@pytest.mark.parametrize("name", STACKS)
def test_the_documented_quotas_hold(name: str, stack_templates: dict[str, Any]) -> None:
    findings = check_quotas(*stack_templates[name])
    assert findings == [], _report(findings)


def test_the_docs_list_every_mapped_type_and_every_quota() -> None:
    page = DOCS.read_text()
    listed = set(re.findall(r"`(AWS::[A-Za-z0-9]+::[A-Za-z0-9]+)`", page))
    assert listed == set(RESOURCE_APIS)
    for quota in QUOTAS:
        assert quota.source in page, quota.name
        assert f"{quota.limit:,}" in page, quota.name


# --- the checks, failing -------------------------------------------------------------------------------


def _one(resource_type: str, properties: dict[str, Any], **others: Any) -> dict[str, Any]:
    return {"Resources": {"Subject": {"Type": resource_type, "Properties": properties}, **others}}


def _custom_action(command: Any) -> dict[str, Any]:
    return _one(
        "AWS::Chatbot::CustomAction",
        {"ActionName": "lkfr-undo", "Definition": {"CommandText": command}},
        Role={"Type": "AWS::IAM::Role", "Properties": {}},
    )


def test_a_101_character_command_is_refused_naming_the_property_and_the_limit() -> None:
    assert check_template(_custom_action("x" * 100), REGION, ACCOUNT) == []
    (finding,) = check_template(_custom_action("x" * 101), REGION, ACCOUNT)
    assert (finding.resource, finding.resource_type) == ("Subject", "AWS::Chatbot::CustomAction")
    assert finding.path == "Definition.CommandText"
    assert "101 characters, over the maximum 100" in finding.problem
    assert "chatbot:CreateCustomAction" in finding.limit
    assert "CustomActionDefinitionCommandTextString max 100" in finding.limit


def test_a_joined_command_counts_its_literal_part_as_a_lower_bound() -> None:
    def joined(literal: int) -> dict[str, Any]:
        return {"Fn::Join": ["", ["x" * literal, {"Fn::GetAtt": ["Role", "Arn"]}]]}

    assert check_template(_custom_action(joined(100)), REGION, ACCOUNT) == []
    (finding,) = check_template(_custom_action(joined(101)), REGION, ACCOUNT)
    assert "at least 101 characters (its literal part)" in finding.problem


def test_a_value_outside_an_enum_is_refused() -> None:
    alarm = {"AlarmName": "a", "ComparisonOperator": "AboveThreshold", "EvaluationPeriods": 1}
    (finding,) = check_template(_one("AWS::CloudWatch::Alarm", alarm), REGION, ACCOUNT)
    assert finding.path == "ComparisonOperator"
    assert "'AboveThreshold' is not one of the allowed values" in finding.problem
    assert "cloudwatch:PutMetricAlarm: ComparisonOperator enum" in finding.limit


def test_a_pattern_a_number_and_a_nested_call_are_checked() -> None:
    rule = {
        "Name": "bad name",
        "ScheduleExpression": "rate(5 minutes)",
        "Targets": [{"Arn": "arn:aws:sqs:eu-west-1:123456789012:q", "Id": "t" * 65}],
    }
    findings = check_template(_one("AWS::Events::Rule", rule), REGION, ACCOUNT)
    assert {(f.path, f.limit.split(":")[1]) for f in findings} == {
        ("Name", "PutRule"),
        ("Targets[0].Id", "PutTargets"),
    }
    function = {
        "FunctionName": "f",
        "Timeout": 0,
        "Runtime": "python3.13",
        "Role": f"arn:aws:iam::{ACCOUNT}:role/r",
    }
    (finding,) = check_template(_one("AWS::Lambda::Function", function), REGION, ACCOUNT)
    assert (finding.path, finding.problem) == ("Timeout", "0 is under the minimum 1")


def test_a_type_or_a_property_with_no_mapping_fails() -> None:
    (finding,) = check_template(_one("AWS::Scheduler::Schedule", {}), REGION, ACCOUNT)
    assert (finding.path, finding.problem) == ("Type", "no API mapping")
    (finding,) = check_template(_one("AWS::SNS::Topic", {"Colour": "red"}), REGION, ACCOUNT)
    assert finding.path == "Colour"
    assert "no API member 'Colour'" in finding.problem


def test_a_composite_rule_is_measured_with_its_children_arns_resolved() -> None:
    children = {
        f"Child{index}": {
            "Type": "AWS::CloudWatch::Alarm",
            "Properties": {"AlarmName": f"{index:03d}" + "c" * 250},
        }
        for index in range(40)
    }
    parts: list[Any] = []
    for child in children:
        parts += ['ALARM("', {"Fn::GetAtt": [child, "Arn"]}, '") OR ']
    rule = {"AlarmName": "page", "AlarmRule": {"Fn::Join": ["", [*parts, "FALSE"]]}}
    (finding,) = check_template(_one("AWS::CloudWatch::CompositeAlarm", rule, **children), REGION, ACCOUNT)
    assert finding.path == "AlarmRule"
    assert "over the maximum 10240" in finding.problem


def _quota_breaches(template: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (finding.path, finding.limit.split(":")[0]) for finding in check_quotas(template, REGION, ACCOUNT)
    ]


def test_the_quota_checks_name_what_breaks_them() -> None:
    big = {"Variables": {"SETTINGS": "v" * 4100}}
    assert _quota_breaches(_one("AWS::Lambda::Function", {"FunctionName": "f" * 65, "Environment": big})) == [
        ("Environment.Variables", "Lambda environment variables, all together (bytes of their JSON)"),
        ("FunctionName", "Lambda function name (characters)"),
    ]
    deep = "/" + "/".join(["level"] * 16)
    assert _quota_breaches(_one("AWS::SSM::Parameter", {"Name": deep, "Type": "String", "Value": "v"})) == [
        ("Name", "SSM parameter hierarchy depth (levels)")
    ]
    metrics = [{"Id": f"m{index}", "MetricStat": {}} for index in range(11)]
    assert _quota_breaches(_one("AWS::CloudWatch::Alarm", {"Metrics": metrics})) == [
        ("Metrics", "Metrics (MetricStat) in a metric-math alarm")
    ]
    pattern = {"source": ["livekit." + "x" * 2100]}
    assert _quota_breaches(_one("AWS::Events::Rule", {"EventPattern": pattern})) == [
        ("EventPattern", "EventBridge event pattern (characters; the default quota)")
    ]
    body = json.dumps({"widgets": [{"type": "log", "properties": {"query": "fields @message\n" * 700}}]})
    assert _quota_breaches(_one("AWS::CloudWatch::Dashboard", {"DashboardBody": body})) == [
        ("DashboardBody.widgets[0].query", "Logs Insights query string (characters)")
    ]


def test_a_role_s_inline_policies_are_measured_together() -> None:
    statement = {
        "Effect": "Allow",
        "Action": "sqs:SendMessage",
        "Resource": "arn:aws:sqs:eu-west-1:1:" + "q" * 80,
    }
    document = {"Version": "2012-10-17", "Statement": [statement] * 50}
    policy = {"PolicyDocument": document, "Roles": [{"Ref": "Subject"}]}
    template = _one("AWS::IAM::Role", {"AssumeRolePolicyDocument": {}})
    template["Resources"]["Half"] = {"Type": "AWS::IAM::Policy", "Properties": policy}
    assert _quota_breaches(template) == []
    template["Resources"]["Other half"] = {"Type": "AWS::IAM::Policy", "Properties": policy}
    assert _quota_breaches(template) == [
        ("inline policies", "A role's inline policies, all together (characters but white space)")
    ]


def test_metric_filters_are_counted_per_log_group() -> None:
    template = _one("AWS::Logs::MetricFilter", {"LogGroupName": "/agents", "FilterPattern": "x"})
    base = template["Resources"]["Subject"]
    for index in range(100):
        template["Resources"][f"Filter{index}"] = copy.deepcopy(base)
    (breach,) = _quota_breaches(template)
    assert breach == ("LogGroupName", "Metric filters per log group")


def test_intrinsics_resolve_to_what_the_template_fixes_and_the_rest_to_their_literal_part() -> None:
    resources = {
        "Fn": {"Type": "AWS::Lambda::Function", "Properties": {"FunctionName": "lkfr-f"}},
        "Topic": {"Type": "AWS::SNS::Topic", "Properties": {}},
    }
    resolver = Resolver(resources, REGION, ACCOUNT)
    assert resolver.value({"Fn::Sub": "${Fn.Arn}/${AWS::Region}"}) == (
        f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:lkfr-f/{REGION}"
    )
    assert resolver.value({"Ref": "Fn"}) == "lkfr-f"
    assert resolver.value({"Fn::Join": [":", ["a", {"Ref": "Topic"}, "b"]]}) == Partial("a::b")
    assert resolver.value({"Fn::Select": [0, ["x"]]}) == Partial("")
