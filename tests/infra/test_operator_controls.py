"""Template assertions for what operators rely on: every alarm notifies ALARM and OK, the delivery
options in cdk.json (e-mail, chat topic, an existing topic, pagers), the per-function kill
switches, one stack per environment, and a dashboard that shows the functions' health."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import assertions

from fleet_remediation.contract.naming import PER_SERVICE_FUNCTIONS, FunctionName, lambda_function_name
from livekit_fleet_remediation.config import ConfigError
from livekit_fleet_remediation.standalone import build_stacks
from tests.dashboard_body import dashboard_json
from tests.example_environments import example_context
from tests.infra.conftest import Synthesized

Match = assertions.Match
STAGING_TOPIC = "arn:aws:sns:ap-northeast-2:111111111111:oncall"


def staging_with(**notifications: Any) -> dict[str, Any]:
    context = copy.deepcopy(example_context())
    context["environments"]["staging"]["notifications"] = notifications
    return context


def alarms(synthesized: Synthesized) -> list[dict[str, Any]]:
    """Every alarm that pages: the composite ones and the metric alarms that are not part of one
    (a composite's metric alarms page only through it)."""
    composites = synthesized.template.find_resources("AWS::CloudWatch::CompositeAlarm")
    rules = json.dumps([resource["Properties"]["AlarmRule"] for resource in composites.values()])
    metric_alarms = synthesized.template.find_resources("AWS::CloudWatch::Alarm")
    standalone = [r["Properties"] for logical_id, r in metric_alarms.items() if logical_id not in rules]
    assert len(standalone) < len(metric_alarms), "the TTS page's windows are part of its composite"
    return standalone + [resource["Properties"] for resource in composites.values()]


def _listed(value: Any) -> list[Any]:
    """A policy statement's Action or Resource: one value or a list of them."""
    return value if isinstance(value, list) else [value]


def refs(actions: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(action, sort_keys=True) for action in actions)


def test_every_alarm_notifies_alarm_and_ok_to_the_topic(staging: Synthesized) -> None:
    found = alarms(staging)
    # Two detection alarms, five self-monitoring alarms for each scheduled function, four for the responder.
    assert len(found) == 2 + 5 + 4 + 5
    for alarm in found:
        assert alarm.get("AlarmActions"), alarm["AlarmName"]
        assert refs(alarm["AlarmActions"]) == refs(alarm["OKActions"]), alarm["AlarmName"]


def test_a_chat_topic_gets_every_alarm_and_its_arn_reaches_the_functions(
    synth: Callable[..., Synthesized],
) -> None:
    chat = synth("staging", staging_with(emails=["oncall@example.com"], chat={}))
    topics = chat.template.find_resources("AWS::SNS::Topic")
    assert len(topics) == 2
    chat_topic = next(name for name in topics if name.startswith("NotificationsChatTopic"))
    for alarm in alarms(chat):
        assert {"Ref": chat_topic} in alarm["AlarmActions"]
        assert {"Ref": chat_topic} in alarm["OKActions"]
    for function in chat.template.find_resources("AWS::Lambda::Function").values():
        variables = function["Properties"].get("Environment", {}).get("Variables", {})
        if "ENVIRONMENT_NAME" in variables:
            assert variables["CHAT_TOPIC_ARN"] == {"Ref": chat_topic}
    chat.template.has_output("*", {"Value": {"Ref": chat_topic}})


def test_a_slack_channel_is_mapped_to_the_chat_topic_with_the_undo_guardrail_only(
    synth: Callable[..., Synthesized],
) -> None:
    slack = synth(
        "staging", staging_with(chat={"slack": {"workspace_id": "T0123ABCD", "channel_id": "C0456EFGH"}})
    )
    slack.template.has_resource_properties(
        "AWS::Chatbot::SlackChannelConfiguration",
        {
            "SlackWorkspaceId": "T0123ABCD",
            "SlackChannelId": "C0456EFGH",
            "SnsTopicArns": [{"Ref": Match.string_like_regexp("NotificationsChatTopic")}],
        },
    )
    (configuration,) = slack.template.find_resources("AWS::Chatbot::SlackChannelConfiguration").values()
    (guardrail,) = configuration["Properties"]["GuardrailPolicies"]
    assert guardrail["Ref"].startswith("NotificationsChatActionsGuardrail")


def test_an_existing_topic_replaces_the_new_one(synth: Callable[..., Synthesized]) -> None:
    existing = synth("staging", staging_with(topic_arn=STAGING_TOPIC))
    existing.template.resource_count_is("AWS::SNS::Topic", 0)
    for alarm in alarms(existing):
        assert alarm["AlarmActions"] == [STAGING_TOPIC] == alarm["OKActions"]
    statements = [
        statement
        for policy in existing.template.find_resources("AWS::IAM::Policy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement["Action"] == "sns:Publish"
    ]
    assert len(statements) == 3  # one per function
    assert all(statement["Resource"] == STAGING_TOPIC for statement in statements)


def test_a_pager_receives_only_cloudwatchs_own_alarm_notifications(synth: Callable[..., Synthesized]) -> None:
    paged = synth(
        "staging",
        staging_with(pagers=[{"protocol": "https", "endpoint": "https://events.example.com/integration/x"}]),
    )
    paged.template.has_resource_properties(
        "AWS::SNS::Subscription",
        {
            "Protocol": "https",
            "Endpoint": "https://events.example.com/integration/x",
            "FilterPolicy": {"notification_kind": [{"exists": False}]},
        },
    )


@pytest.mark.parametrize(
    ("notifications", "named"),
    [
        ({"topic_arn": "arn:aws:sqs:ap-northeast-2:111111111111:q"}, "notifications.topic_arn"),
        (
            {"topic_arn": "arn:aws:sns:eu-west-1:111111111111:oncall"},
            "notifications.topic_arn: topic is in eu-west-1",
        ),
        (
            {"topic_arn": "arn:aws:sns:ap-northeast-2:999999999999:oncall"},
            "notifications.topic_arn: topic is in account 999999999999",
        ),
        ({"chat": {"topic_arn": "oncall"}}, "notifications.chat.topic_arn"),
        (
            {"chat": {"slack": {"workspace_id": "T1", "channel_id": ""}}},
            "notifications.chat.slack.channel_id",
        ),
        ({"pagers": [{"protocol": "https", "endpoint": "http://insecure"}]}, "notifications.pagers.0"),
    ],
)
def test_invalid_delivery_options_fail_at_synth_naming_the_field(
    synth: Callable[..., Synthesized], notifications: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        synth("staging", staging_with(**notifications))
    # A field's own check names its path; a check across fields names the environment and the field.
    assert re.search(rf"environments\.staging(\.|: Value error, ){re.escape(named)}", str(raised.value))


def test_each_function_has_its_own_switch_under_the_environments(staging: Synthesized) -> None:
    service_switch = "/livekit-fleet-remediation/staging/services/agents/mode"
    for function in FunctionName:
        name = f"/livekit-fleet-remediation/staging/{function.slug}/mode"
        per_service = function in PER_SERVICE_FUNCTIONS
        staging.template.has_resource_properties(
            "AWS::SSM::Parameter",
            {"Name": name, "Value": "enforce", "AllowedPattern": "^(enforce|dry-run|off)$"},
        )
        (function_resource,) = staging.template.find_resources(
            "AWS::Lambda::Function",
            {
                "Properties": {
                    "FunctionName": lambda_function_name(
                        "staging", function, "agents" if per_service else None
                    )
                }
            },
        ).values()
        variables = function_resource["Properties"]["Environment"]["Variables"]
        assert variables["FUNCTION_MODE_PARAMETER_NAME"] == name
        assert variables.get("SERVICE_MODE_PARAMETER_NAME") == (service_switch if per_service else None)
        assert variables["MODE_PARAMETER_NAME"] == "/livekit-fleet-remediation/staging/mode"
    names = {
        logical_id: resource["Properties"]["Name"]
        for logical_id, resource in staging.template.find_resources("AWS::SSM::Parameter").items()
    }
    construct = {
        FunctionName.ZOMBIE_REAPER: "ZombieReaper",
        FunctionName.TTS_REACH_ALARM: "ServiceagentsTtsReach",
        FunctionName.WORKER_DRAINER: "ServiceagentsWorkerDrainer",
    }
    policies = staging.template.find_resources("AWS::IAM::Policy")
    for function, prefix in construct.items():
        (policy,) = [p for logical_id, p in policies.items() if logical_id.startswith(prefix)]
        read = {
            names[part["Ref"]]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
            if "ssm:GetParameters" in statement["Action"]
            for resource in _listed(statement["Resource"])
            for part in resource["Fn::Join"][1]
            if isinstance(part, dict) and part.get("Ref") in names
        }
        assert read == {
            "/livekit-fleet-remediation/staging/mode",
            f"/livekit-fleet-remediation/staging/{function.slug}/mode",
            *([service_switch] if function in PER_SERVICE_FUNCTIONS else []),
        }


def test_without_a_chosen_environment_the_app_has_one_stack_per_environment(tmp_path: Any) -> None:
    _app, stacks = build_stacks(None, example_context(), str(tmp_path))
    assert {name: stack.stack_name for name, stack in stacks.items()} == {
        "prod": "LiveKitFleetRemediation-prod",
        "staging": "LiveKitFleetRemediation-staging",
    }
    _chosen_app, chosen = build_stacks(None, {**example_context(), "env": "prod"}, str(tmp_path / "one"))
    assert list(chosen) == ["prod"]


def test_the_dashboard_shows_every_alarm_and_the_kill_switch(staging: Synthesized) -> None:
    rendered = dashboard_json(json.loads(staging.template_path.read_text()))
    (status,) = [w for w in rendered["widgets"] if w["type"] == "alarm"]
    shown = {arn.rsplit(":", 1)[1] for arn in status["properties"]["alarms"]}
    assert shown == {alarm["AlarmName"] for alarm in alarms(staging)}
    body = json.dumps(rendered)
    for function in FunctionName:
        assert f"/livekit-fleet-remediation/staging/{function.slug}/mode" in body
    assert "ECS/ContainerInsights" in body
    assert "RunningTaskCount" in body
    assert "DesiredTaskCount" in body
    assert "remediation report" in body
    assert "/runbooks/worker-drainer.html" in body


def test_only_this_accounts_alarms_may_publish_and_use_the_topic_key(staging: Synthesized) -> None:
    template = staging.template.to_json()["Resources"]
    topic_statements = [
        statement
        for resource in template.values()
        if resource["Type"] == "AWS::SNS::TopicPolicy"
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
        if _service_principal(statement) == "cloudwatch.amazonaws.com"
    ]
    key_statements = [
        statement
        for resource in template.values()
        if resource["Type"] == "AWS::KMS::Key"
        for statement in resource["Properties"]["KeyPolicy"]["Statement"]
        if _service_principal(statement) == "cloudwatch.amazonaws.com"
    ]
    assert topic_statements
    assert key_statements
    for statement in topic_statements + key_statements:
        assert statement["Condition"]["StringEquals"]["aws:SourceAccount"] == "111111111111"
        assert ":alarm:*" in json.dumps(statement["Condition"]["ArnLike"]["aws:SourceArn"])


def _service_principal(statement: dict[str, Any]) -> object:
    principal = statement.get("Principal")
    return principal.get("Service") if isinstance(principal, dict) else None
