"""The stack's KMS key in the synthesized template: topics, dead-letter queues and the functions' log
groups are encrypted with it, and every service principal in its policy is bound to our resources."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from fleet_remediation.contract.naming import PER_SERVICE_FUNCTIONS, FunctionName, function_log_group_name
from tests.example_environments import example_context
from tests.infra.conftest import Synthesized

ACCOUNT = "111111111111"
REGION = "ap-northeast-2"


def _resources(synthesized: Synthesized, kind: str) -> dict[str, dict[str, Any]]:
    resources = synthesized.template.to_json()["Resources"]
    return {logical_id: r for logical_id, r in resources.items() if r["Type"] == kind}


def _key_id(synthesized: Synthesized) -> str:
    (logical_id,) = _resources(synthesized, "AWS::KMS::Key")
    return logical_id


def _text(arn: Any) -> str:
    """An ARN as text: a literal, or an Fn::Join with its tokens written as <token>."""
    if isinstance(arn, str):
        return arn
    return "".join(part if isinstance(part, str) else "<token>" for part in arn["Fn::Join"][1])


def _key_statements(synthesized: Synthesized, principal: str) -> list[dict[str, Any]]:
    (key,) = _resources(synthesized, "AWS::KMS::Key").values()
    return [
        s
        for s in key["Properties"]["KeyPolicy"]["Statement"]
        if isinstance(s.get("Principal"), dict) and s["Principal"].get("Service") == principal
    ]


def _with_existing_topic() -> dict[str, Any]:
    context = copy.deepcopy(example_context())
    context["environments"]["staging"]["notifications"] = {
        "topic_arn": f"arn:aws:sns:{REGION}:{ACCOUNT}:existing-oncall"
    }
    return context


def test_every_queue_is_encrypted_with_the_stack_key(staging: Synthesized) -> None:
    queues = _resources(staging, "AWS::SQS::Queue")
    assert len(queues) == len(FunctionName)
    for queue in queues.values():
        assert queue["Properties"]["KmsMasterKeyId"] == {"Fn::GetAtt": [_key_id(staging), "Arn"]}


def _service(function: FunctionName) -> str | None:
    """The example environments' one agent service, for the functions each service has its own of."""
    return "agents" if function in PER_SERVICE_FUNCTIONS else None


def test_every_function_log_group_is_encrypted_with_the_stack_key(staging: Synthesized) -> None:
    groups = {g["Properties"]["LogGroupName"]: g for g in _resources(staging, "AWS::Logs::LogGroup").values()}
    for function in FunctionName:
        group = groups[function_log_group_name("staging", function, _service(function))]
        assert group["Properties"]["KmsKeyId"] == {"Fn::GetAtt": [_key_id(staging), "Arn"]}


def test_cloudwatch_logs_may_use_the_key_only_for_our_function_log_groups(staging: Synthesized) -> None:
    statements = _key_statements(staging, f"logs.{REGION}.amazonaws.com")
    named = sorted(
        _text(s["Condition"]["ArnEquals"]["kms:EncryptionContext:aws:logs:arn"]) for s in statements
    )
    expected = sorted(
        ":logs:{}:{}:log-group:{}".format(
            REGION, ACCOUNT, function_log_group_name("staging", function, _service(function))
        )
        for function in FunctionName
    )
    assert len(named) == len(expected)
    for arn, ending in zip(named, expected, strict=True):
        assert arn.endswith(ending), arn
    for statement in statements:
        assert set(statement["Condition"]) == {"ArnEquals"}
        assert "kms:Encrypt*" in statement["Action"]


def test_eventbridge_may_use_the_key_only_for_this_accounts_rules(staging: Synthesized) -> None:
    (statement,) = _key_statements(staging, "events.amazonaws.com")
    assert sorted(statement["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey"]
    assert statement["Condition"]["StringEquals"] == {"aws:SourceAccount": ACCOUNT}
    assert f":events:{REGION}:{ACCOUNT}:rule/*" in json.dumps(
        statement["Condition"]["ArnLike"]["aws:SourceArn"]
    )
    # Every rule that parks undeliverable events in a queue names one of the stack's encrypted queues.
    queues = set(_resources(staging, "AWS::SQS::Queue"))
    dead_letter_targets = [
        target["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0]
        for rule in _resources(staging, "AWS::Events::Rule").values()
        for target in rule["Properties"]["Targets"]
        if "DeadLetterConfig" in target
    ]
    assert dead_letter_targets
    assert set(dead_letter_targets) <= queues


def test_cloudwatch_alarms_may_use_the_key_only_as_this_accounts_alarms(staging: Synthesized) -> None:
    (statement,) = _key_statements(staging, "cloudwatch.amazonaws.com")
    assert statement["Condition"]["StringEquals"] == {"aws:SourceAccount": ACCOUNT}
    assert f":cloudwatch:{REGION}:{ACCOUNT}:alarm:*" in json.dumps(
        statement["Condition"]["ArnLike"]["aws:SourceArn"]
    )


def test_no_service_principal_in_the_key_policy_goes_unconditioned(staging: Synthesized) -> None:
    (key,) = _resources(staging, "AWS::KMS::Key").values()
    services = [s for s in key["Properties"]["KeyPolicy"]["Statement"] if "Service" in s["Principal"]]
    assert len(services) == 2 + len(FunctionName)  # alarms, rules, one per function log group
    for statement in services:
        assert statement["Condition"], statement


def test_the_functions_roles_may_use_the_key_for_their_dlq_without_a_stack_topic(
    synth: Callable[..., Synthesized],
) -> None:
    synthesized = synth("staging", _with_existing_topic())
    key = _key_id(synthesized)
    # No topic of ours: CloudWatch alarms need no key, everything else still uses it.
    assert _key_statements(synthesized, "cloudwatch.amazonaws.com") == []
    for function in FunctionName:
        role_policies = [
            p
            for logical_id, p in _resources(synthesized, "AWS::IAM::Policy").items()
            if logical_id.startswith(
                {
                    "zombie_reaper": "ZombieReaper",
                    "tts_reach_alarm": "ServiceagentsTtsReachResponder",
                    "worker_drainer": "ServiceagentsWorkerDrainer",
                }[function.value]
            )
        ]
        granted = [
            s
            for p in role_policies
            for s in p["Properties"]["PolicyDocument"]["Statement"]
            if s["Resource"] == {"Fn::GetAtt": [key, "Arn"]}
        ]
        actions = {
            a for s in granted for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
        }
        assert {"kms:GenerateDataKey", "kms:Decrypt"} <= actions, function
