"""What every remediation function gets from the construct that builds it: its memory, its own
description and role, a key statement named for its log group, two retries of an asynchronous
delivery before its dead-letter queue, its Powertools service, and, at synth, a settings problem
named under its environment."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from fleet_remediation.contract.errors import ConfigurationError
from fleet_remediation.contract.events import ASYNC_INVOKE_MAX_EVENT_AGE_SECONDS
from fleet_remediation.contract.naming import METRICS_NAMESPACE, FunctionName
from fleet_remediation.contract.settings import ReaperSettings
from livekit_fleet_remediation.constructs.remediation_function import RemediationFunction, deployed_settings
from tests.infra.conftest import Synthesized, trusted_principal

FUNCTIONS = {
    "lkfr-staging-zombie-reaper": "Deletes LiveKit rooms older than their max age, oldest first, within caps",
    "lkfr-staging-agents-tts-reach-alarm": (
        "On the TTS-reach alarm: find silent sessions, blame a worker beyond chance, notify"
    ),
    "lkfr-staging-agents-worker-drainer": (
        "Attributes slow VAD to one ECS task; reaps, cordons, drains, stops or undoes"
    ),
}


def _functions(resources: dict[str, dict[str, Any]]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Each remediation function by name: its logical id and its properties."""
    return {
        r["Properties"]["FunctionName"]: (logical_id, r["Properties"])
        for logical_id, r in resources.items()
        if r["Type"] == "AWS::Lambda::Function" and r["Properties"]["FunctionName"] in FUNCTIONS
    }


def test_every_function_has_256_mb_its_own_description_and_a_role_that_names_it(staging: Synthesized) -> None:
    resources = staging.template.to_json()["Resources"]
    functions = _functions(resources)
    assert set(functions) == set(FUNCTIONS)
    for name, (_, properties) in functions.items():
        assert properties["MemorySize"] == 256, name
        assert properties["Description"] == FUNCTIONS[name]
        assert trusted_principal(staging, properties["Role"]) == {"Service": "lambda.amazonaws.com"}
        role = resources[properties["Role"]["Fn::GetAtt"][0]]
        assert role["Properties"]["Description"] == (
            f"{name}: least privilege, see the construct that adds each statement"
        )


def test_each_log_groups_key_statement_is_named_for_its_function_alone(staging: Synthesized) -> None:
    (key,) = staging.template.find_resources("AWS::KMS::Key").values()
    statements = key["Properties"]["KeyPolicy"]["Statement"]
    named = [s["Sid"] for s in statements if s.get("Sid", "").endswith("Logs")]
    # IAM's Sid: letters and digits only, unique in the policy.
    assert named == ["ZombieReaperLogs", "AgentsTtsReachAlarmLogs", "AgentsWorkerDrainerLogs"]
    assert all(re.fullmatch("[A-Za-z0-9]+", sid) for sid in named)


def test_a_value_the_functions_model_refuses_fails_synth_naming_it_under_the_environment(
    staging: Synthesized,
) -> None:
    remediation = staging.stack.remediation
    with pytest.raises(ConfigurationError, match=r"environments\.staging\.livekit_url"):
        deployed_settings(
            ReaperSettings,
            env_name="staging",
            config=remediation.config,
            notifications=remediation.notifications,
            kill_switch=remediation.kill_switch,
            livekit_url="not a url",
        )


def test_a_functions_folder_without_its_handler_fails_synth_naming_the_missing_file(
    staging: Synthesized, tmp_path: Path
) -> None:
    remediation = staging.stack.remediation
    missing = re.escape(f"{tmp_path}/zombie_reaper/handler.py does not exist")
    with pytest.raises(FileNotFoundError, match=missing):
        RemediationFunction(
            cdk.Stack(),
            "Reaper",
            function=FunctionName.ZOMBIE_REAPER,
            settings=remediation.zombie_reaper.settings,
            description="the reaper",
            layers=remediation.layers,
            notifications=remediation.notifications,
            kill_switch=remediation.kill_switch,
            key=remediation.key,
            log_retention_days=30,
            functions_dir=tmp_path,
        )


def test_each_function_retries_an_asynchronous_delivery_twice_then_parks_it_for_14_days(
    staging: Synthesized,
) -> None:
    resources = staging.template.to_json()["Resources"]
    invoke_configs = staging.template.find_resources("AWS::Lambda::EventInvokeConfig").values()
    queue_policies = staging.template.find_resources("AWS::SQS::QueuePolicy").values()
    for name, (logical_id, properties) in _functions(resources).items():
        (invoke_config,) = [
            c["Properties"] for c in invoke_configs if c["Properties"]["FunctionName"] == {"Ref": logical_id}
        ]
        assert invoke_config["MaximumRetryAttempts"] == 2, name
        assert invoke_config["MaximumEventAgeInSeconds"] == ASYNC_INVOKE_MAX_EVENT_AGE_SECONDS
        queue_id = properties["DeadLetterConfig"]["TargetArn"]["Fn::GetAtt"][0]
        assert resources[queue_id]["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600
        (queue_policy,) = [
            p["Properties"]["PolicyDocument"]["Statement"]
            for p in queue_policies
            if p["Properties"]["Queues"] == [{"Ref": queue_id}]
        ]
        assert {
            "Action": "sqs:*",
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            "Effect": "Deny",
            "Principal": {"AWS": "*"},
            "Resource": {"Fn::GetAtt": [queue_id, "Arn"]},
        } in queue_policy


def test_each_function_logs_and_measures_as_its_own_powertools_service(staging: Synthesized) -> None:
    for name, (_, properties) in _functions(staging.template.to_json()["Resources"]).items():
        variables = properties["Environment"]["Variables"]
        folder = properties["Handler"].removesuffix(".handler.lambda_handler")
        assert folder in {f.value for f in FunctionName}, name
        assert variables["POWERTOOLS_SERVICE_NAME"] == folder
        assert variables["POWERTOOLS_METRICS_NAMESPACE"] == METRICS_NAMESPACE
        assert variables["POWERTOOLS_LOG_LEVEL"] == "INFO"


def test_each_functions_code_asset_holds_its_own_folder_and_no_other_functions(staging: Synthesized) -> None:
    out = staging.template_path.parent
    for name, (_, properties) in _functions(staging.template.to_json()["Resources"]).items():
        folder = properties["Handler"].removesuffix(".handler.lambda_handler")
        asset = out / f"asset.{properties['Code']['S3Key'].removesuffix('.zip')}"
        shipped = sorted(path.name for path in asset.iterdir() if path.is_dir())
        assert shipped == [folder], name
        assert (asset / folder / "handler.py").is_file()


def test_every_switch_and_rule_says_what_it_is_for_in_its_description(staging: Synthesized) -> None:
    switches = [r["Properties"] for r in staging.template.find_resources("AWS::SSM::Parameter").values()]
    parameters = {switch["Name"]: switch.get("Description", "") for switch in switches}
    environment_switch = "/livekit-fleet-remediation/staging/mode"
    for function in FunctionName:
        own = f"/livekit-fleet-remediation/staging/{function.slug}/mode"
        own_words = f"{function.value}'s own mode under {environment_switch} (the stricter wins)"
        assert parameters[own] == own_words
    service_switch = "/livekit-fleet-remediation/staging/services/agents/mode"
    assert parameters[service_switch] == (
        f"Agent service agents's own mode under {environment_switch} (the stricter wins)"
    )
    assert len(switches) == len(FunctionName) + 2
    assert {switch["AllowedPattern"] for switch in switches} == {"^(enforce|dry-run|off)$"}
    rules = [r["Properties"] for r in staging.template.find_resources("AWS::Events::Rule").values()]
    assert rules
    # A literal, or one joined from the names of the alarm and the function it links.
    assert all(rule.get("Description") for rule in rules)
    assert "Suspect workers from tts_reach_alarm to the worker drainer (staging/agents)" in [
        rule["Description"] for rule in rules
    ]


def test_every_table_is_encrypted_with_a_key_aws_manages_and_only_the_ledger_outlives_the_stack(
    staging: Synthesized,
) -> None:
    tables = staging.template.find_resources("AWS::DynamoDB::Table")
    assert len(tables) >= 2
    for table in tables.values():
        assert table["Properties"]["SSESpecification"] == {"SSEEnabled": True}
    # The ledger is the drainer's audit trail: kept when the stack goes.
    kept = [k for k, t in tables.items() if t.get("DeletionPolicy") == "Retain"]
    assert len(kept) == 1
    assert "WorkerDrainer" in kept[0]


def test_the_drainers_tick_and_suspect_worker_rules_retry_a_delivery_twice(staging: Synthesized) -> None:
    rules = [r["Properties"] for r in staging.template.find_resources("AWS::Events::Rule").values()]
    by_description = {rule["Description"]: rule for rule in rules if isinstance(rule["Description"], str)}
    for description in (
        "Advance the drainer's ladders every 1 min (staging/agents)",
        "Suspect workers from tts_reach_alarm to the worker drainer (staging/agents)",
    ):
        (target,) = by_description[description]["Targets"]
        assert target["RetryPolicy"]["MaximumRetryAttempts"] == 2, description


def test_the_reaper_reads_the_deployments_of_the_agents_service_alone(staging: Synthesized) -> None:
    statements = [
        statement
        for resource in staging.template.to_json()["Resources"].values()
        if resource["Type"] == "AWS::IAM::Policy"
        and "ZombieReaper" in json.dumps(resource["Properties"]["Roles"])
        for statement in resource["Properties"]["PolicyDocument"]["Statement"]
    ]
    (describe,) = [s for s in statements if s["Action"] == "ecs:DescribeServices"]
    region, account = staging.stack.region, staging.stack.account
    assert (
        describe["Resource"]
        == f"arn:aws:ecs:{region}:{account}:service/ppi-livekit-staging/ppi-livekit-agent"
    )
