"""The example environment with a chat channel (``prod``): its custom actions (commands that fit
the chat API and carry only a token), the channel's guardrail and role (invoke the chat entry point,
nothing else), the entry point's own role, the docs page kept true against the template, the
synth-time length check, cfn-lint and cdk-nag."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import assertions

from fleet_remediation.contract.budgets import (
    ANNOUNCE_SECONDS,
    CHAT_FORWARD,
    LEDGER_CALL,
    REPORT_MARGIN_SECONDS,
    SWITCH_OFF_WRITE,
)
from fleet_remediation.contract.naming import METRICS_NAMESPACE, FunctionName
from fleet_remediation.core import chat_actions
from livekit_fleet_remediation.config import ConfigError, load_environment
from livekit_fleet_remediation.constructs.chat_actions import chat_entry_seconds
from tests.example_environments import example_context
from tests.infra.conftest import Synthesized, cfn_lint, trusted_principal
from worker_drainer.chat_entry import CHAT_ENTRY, SETTINGS_VARIABLE, ChatEntrySettings

Match = assertions.Match
DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "on-call-from-a-phone.md"
ENTRY_POINT = "lkfr-prod-chat"
DRAINER = "lkfr-prod-agents-worker-drainer"


@pytest.fixture(scope="module")
def prod(synth: Callable[..., Synthesized]) -> Synthesized:
    return synth("prod")


def _actions(prod: Synthesized) -> dict[str, dict[str, Any]]:
    return {
        a["Properties"]["ActionName"]: a["Properties"]
        for a in prod.template.find_resources("AWS::Chatbot::CustomAction").values()
    }


def test_every_button_invokes_the_entry_point_with_a_token_or_a_fixed_code_within_100_chars(
    prod: Synthesized,
) -> None:
    actions = _actions(prod)
    assert sorted(actions) == [
        "lkfr-prod-drain",
        "lkfr-prod-off-tts-reach-alarm",
        "lkfr-prod-off-worker-drainer",
        "lkfr-prod-off-zombie-reaper",
        "lkfr-prod-undrain",
    ]
    region = str(prod.stack.region)
    for name, action in actions.items():
        command = action["Definition"]["CommandText"]
        assert len(command) <= chat_actions.COMMAND_TEXT_MAX_CHARS, (name, len(command))
        assert command.startswith(f"aws lambda invoke --function-name {ENTRY_POINT} --region {region} ")
        (attachment,) = action["Attachments"]
        assert attachment["NotificationType"] == "Custom"
        assert {"VariableName": "environment", "Operator": "EQUALS", "Value": "prod"} in attachment[
            "Criteria"
        ]
        # The only variable a command reads is the token, and a quote ends its name.
        assert set(re.findall(r"\$(\w+)", command)) <= {"t"}
        assert "$t" not in command or '"$t"' in command
    assert actions["lkfr-prod-undrain"]["Definition"]["CommandText"].endswith("""--payload '{"u":"$t"}'""")
    assert actions["lkfr-prod-undrain"]["Attachments"][0]["Variables"]["t"] == (
        "event.metadata.additionalContext.undrain_token"
    )
    assert actions["lkfr-prod-drain"]["Attachments"][0]["Variables"]["t"] == (
        "event.metadata.additionalContext.drain_token"
    )
    assert actions["lkfr-prod-off-worker-drainer"]["Definition"]["CommandText"].endswith(
        """--payload '{"o":"w"}'"""
    )


def _allowed(policy: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in policy["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]


def test_the_channel_may_invoke_the_chat_entry_point_and_nothing_else(prod: Synthesized) -> None:
    (channel,) = prod.template.find_resources("AWS::Chatbot::SlackChannelConfiguration").values()
    properties = channel["Properties"]
    (guardrail,) = properties["GuardrailPolicies"]
    policy = prod.template.find_resources("AWS::IAM::ManagedPolicy")[guardrail["Ref"]]["Properties"]
    (statement,) = _allowed(policy)
    assert statement["Action"] == "lambda:InvokeFunction"
    stack = prod.stack
    assert statement["Resource"] == f"arn:aws:lambda:{stack.region}:{stack.account}:function:{ENTRY_POINT}"
    role = prod.template.find_resources("AWS::IAM::Role")[properties["IamRoleArn"]["Fn::GetAtt"][0]]
    assert role["Properties"]["ManagedPolicyArns"] == [{"Ref": guardrail["Ref"]}]
    assert "Policies" not in role["Properties"]
    (trust,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "chatbot.amazonaws.com"}
    assert "Condition" not in trust  # AWS does not document a source key the chat service sends
    no_role_policy = [
        p
        for p in prod.template.find_resources("AWS::IAM::Policy").values()
        if {"Ref": properties["IamRoleArn"]["Fn::GetAtt"][0]} in p["Properties"]["Roles"]
    ]
    assert no_role_policy == []
    actions = prod.template.find_resources("AWS::Chatbot::CustomAction")
    assert sorted(arn["Fn::GetAtt"][0] for arn in properties["CustomizationResourceArns"]) == sorted(actions)


def test_the_entry_point_reads_only_tokens_invokes_only_drainers_and_writes_only_switches(
    prod: Synthesized,
) -> None:
    (function,) = [
        f
        for f in prod.template.find_resources("AWS::Lambda::Function").values()
        if f["Properties"].get("FunctionName") == ENTRY_POINT
    ]
    assert function["Properties"]["Handler"] == "worker_drainer.chat_handler.lambda_handler"
    # One service's ledger to read, the claim, the forward, the action events and the report.
    assert function["Properties"]["Timeout"] == chat_entry_seconds(1)
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    statements = [
        s
        for p in prod.template.find_resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
        for s in _allowed(p["Properties"])
    ]
    by_action = {json.dumps(s["Action"]): s for s in statements}
    tokens = by_action['["dynamodb:GetItem", "dynamodb:UpdateItem"]']
    assert tokens["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["chat#*"]}}
    functions = prod.template.find_resources("AWS::Lambda::Function")
    (drainer,) = [k for k, f in functions.items() if f["Properties"].get("FunctionName") == DRAINER]
    assert by_action['"lambda:InvokeFunction"']["Resource"] == {"Fn::GetAtt": [drainer, "Arn"]}
    switches = json.dumps(by_action['"ssm:PutParameter"']["Resource"])
    for slug in ("zombie-reaper", "tts-reach-alarm", "worker-drainer"):
        assert f"parameter/livekit-fleet-remediation/prod/{slug}/mode" in switches
    assert "prod/mode" not in switches.replace("-drainer/mode", "").replace("-alarm/mode", "").replace(
        "-reaper/mode", ""
    )  # never the environment's own switch
    assert by_action['"events:PutEvents"']["Condition"]["StringEquals"]["events:source"]
    # Active tracing's grant is the one "*": X-Ray's two write actions take no resource.
    traces = by_action['["xray:PutTelemetryRecords", "xray:PutTraceSegments"]']
    assert traces["Resource"] == "*"
    assert "*" not in json.dumps([s["Resource"] for s in statements if s is not tokens and s is not traces])


def test_the_entry_points_timeout_holds_each_of_its_calls_budgets() -> None:
    for services in (1, 3):
        calls = (services + 1) * LEDGER_CALL.worst_case_seconds + max(
            CHAT_FORWARD.worst_case_seconds, SWITCH_OFF_WRITE.worst_case_seconds
        )
        assert chat_entry_seconds(services) >= calls + ANNOUNCE_SECONDS + REPORT_MARGIN_SECONDS
        assert chat_entry_seconds(services) < calls + ANNOUNCE_SECONDS + REPORT_MARGIN_SECONDS + 1


def _with_refs_named(value: Any) -> str:
    """A template string as text, each Ref written as the logical id it names."""
    if isinstance(value, str):
        return value
    separator, parts = value["Fn::Join"]
    return separator.join(part if isinstance(part, str) else part["Ref"] for part in parts)


def test_the_entry_point_starts_with_the_settings_it_reads_its_256_mb_and_its_powertools_service(
    prod: Synthesized,
) -> None:
    functions = prod.template.find_resources("AWS::Lambda::Function")
    (properties,) = [
        f["Properties"] for f in functions.values() if f["Properties"].get("FunctionName") == ENTRY_POINT
    ]
    (drainer,) = [k for k, f in functions.items() if f["Properties"].get("FunctionName") == DRAINER]
    assert properties["MemorySize"] == 256
    variables = properties["Environment"]["Variables"]
    assert variables["POWERTOOLS_SERVICE_NAME"] == CHAT_ENTRY
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == METRICS_NAMESPACE
    assert variables["POWERTOOLS_LOG_LEVEL"] == "INFO"
    assert variables["ENVIRONMENT_NAME"] == "prod"
    settings = ChatEntrySettings.model_validate_json(_with_refs_named(variables[SETTINGS_VARIABLE]))
    assert settings.environment_name == "prod"
    assert settings.services["agents"].drainer_function_name == drainer
    assert {function.slug for function in settings.switches} == {f.slug for f in FunctionName}
    for function, parameter in settings.switches.items():
        assert parameter == f"/livekit-fleet-remediation/prod/{function.slug}/mode"
    assert trusted_principal(prod, properties["Role"]) == {"Service": "lambda.amazonaws.com"}
    log_groups = prod.template.find_resources("AWS::Logs::LogGroup")
    (own_group,) = [
        k
        for k, g in log_groups.items()
        if g["Properties"].get("LogGroupName") == f"/aws/lambda/{ENTRY_POINT}"
    ]
    assert properties["LoggingConfig"]["LogGroup"] == {"Ref": own_group}
    guardrails = prod.template.find_resources("AWS::IAM::ManagedPolicy").values()
    assert "Amazon Q Developer chat (prod): invoke the chat entry point, nothing else" in [
        policy["Properties"].get("Description") for policy in guardrails
    ]
    (key,) = prod.template.find_resources("AWS::KMS::Key").values()
    (own_logs,) = [s for s in key["Properties"]["KeyPolicy"]["Statement"] if s.get("Sid") == "ChatEntryLogs"]
    assert ENTRY_POINT in json.dumps(own_logs["Condition"]["ArnEquals"]), "the key statement of its log group"


def _docs_buttons() -> dict[str, str]:
    """The docs page's button table: button text -> payload."""
    text = DOCS_PAGE.read_text(encoding="utf-8")
    section = text.split("## One tap in chat", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "`{" in line]
    found = {}
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        found[cells[0]] = re.search(r"`(\{.*?\})`", row).group(1)  # type: ignore[union-attr]
    return found


def test_the_docs_page_lists_exactly_the_buttons_the_template_has(prod: Synthesized) -> None:
    template = {
        action["Attachments"][0]["ButtonText"]: action["Definition"]["CommandText"].split("--payload '")[1][
            :-1
        ]
        for action in _actions(prod).values()
    }
    assert _docs_buttons() == template


def _prod_context(name: str, region: str | None = None) -> dict[str, Any]:
    context = copy.deepcopy(example_context())
    environment = context["environments"]["prod"]
    if region:
        environment["region"] = region
    context["environments"] = {name: environment}
    return context


def test_synth_refuses_an_environment_name_whose_buttons_would_not_fit() -> None:
    region = "ap-southeast-2"
    budget = chat_actions.environment_name_budget(region)
    fits = "p" * budget
    load_environment(_prod_context(fits, region), fits)
    too_long = "p" * (budget + 1)
    with pytest.raises(ConfigError, match=rf"environments\.{too_long}\.notifications\.chat\.slack: .*101"):
        load_environment(_prod_context(too_long, region), too_long)


def test_cfn_lint_and_cdk_nag_accept_the_chat_channel(prod: Synthesized) -> None:
    result = cfn_lint(prod.template_path)
    assert result.returncode == 0, result.stdout + result.stderr
    errors = prod.annotations.find_error("*", Match.string_like_regexp("AwsSolutions-.*"))
    warnings = prod.annotations.find_warning("*", Match.string_like_regexp("AwsSolutions-.*"))
    assert [e.entry.data for e in errors + warnings] == []
