"""The example environment with a chat channel (cdk.json ``prod``): its custom actions, the
channel's guardrail and role (exactly the undo commands, nothing else), cfn-lint and cdk-nag."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import assertions

from tests.infra.conftest import Synthesized, cfn_lint

Match = assertions.Match


@pytest.fixture(scope="module")
def prod(synth: Callable[..., Synthesized]) -> Synthesized:
    return synth("prod")


def _region(prod: Synthesized) -> str:
    return str(prod.stack.region)


def test_three_custom_actions_named_and_attached_for_the_environment_only(prod: Synthesized) -> None:
    actions = {
        a["Properties"]["ActionName"]: a["Properties"]
        for a in prod.template.find_resources("AWS::Chatbot::CustomAction").values()
    }
    assert sorted(actions) == ["lkfr-prod-drain", "lkfr-prod-switch-off", "lkfr-prod-undrain"]
    for action in actions.values():
        (attachment,) = action["Attachments"]
        assert attachment["NotificationType"] == "Custom"
        assert len(attachment["Variables"]) <= 5
        assert all(
            v.startswith("event.metadata.additionalContext.") for v in attachment["Variables"].values()
        )
        assert {"VariableName": "environment", "Operator": "EQUALS", "Value": "prod"} in attachment[
            "Criteria"
        ]
        assert f"--region {_region(prod)}" in action["Definition"]["CommandText"]
    undrain = actions["lkfr-prod-undrain"]["Definition"]["CommandText"]
    # The message names its agent service: the button invokes that service's drainer.
    assert "--function-name lkfr-prod-$agent_service-worker-drainer" in undrain
    assert '{"action":"undrain","task":"$undo_task","dry_run":false}' in undrain


def _statements(policy: dict[str, Any]) -> list[tuple[Any, str]]:
    return [
        (s["Action"], json.dumps(s["Resource"]))
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if s["Effect"] == "Allow"
    ]


def test_the_channel_guardrail_and_role_allow_only_the_undo_commands(prod: Synthesized) -> None:
    (channel,) = prod.template.find_resources("AWS::Chatbot::SlackChannelConfiguration").values()
    properties = channel["Properties"]
    (guardrail,) = properties["GuardrailPolicies"]
    policies = prod.template.find_resources("AWS::IAM::ManagedPolicy")
    policy = policies[guardrail["Ref"]]
    allowed = _statements(policy)
    assert [action for action, _ in allowed] == ["lambda:InvokeFunction", "ssm:PutParameter"]
    assert "function:lkfr-prod-agents-worker-drainer" in allowed[0][1]
    for slug in ("zombie-reaper", "tts-reach-alarm", "worker-drainer"):
        assert f"parameter/livekit-fleet-remediation/prod/{slug}/mode" in allowed[1][1]
    assert "*" not in allowed[0][1] + allowed[1][1]
    role = prod.template.find_resources("AWS::IAM::Role")[properties["IamRoleArn"]["Fn::GetAtt"][0]]
    assert role["Properties"]["ManagedPolicyArns"] == [{"Ref": guardrail["Ref"]}]
    assert "Policies" not in role["Properties"]
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "chatbot.amazonaws.com"
    }
    actions = prod.template.find_resources("AWS::Chatbot::CustomAction")
    assert sorted(arn["Fn::GetAtt"][0] for arn in properties["CustomizationResourceArns"]) == sorted(actions)


def test_cfn_lint_and_cdk_nag_accept_the_chat_channel(prod: Synthesized) -> None:
    result = cfn_lint(prod.template_path)
    assert result.returncode == 0, result.stdout + result.stderr
    errors = prod.annotations.find_error("*", Match.string_like_regexp("AwsSolutions-.*"))
    warnings = prod.annotations.find_warning("*", Match.string_like_regexp("AwsSolutions-.*"))
    assert [e.entry.data for e in errors + warnings] == []
