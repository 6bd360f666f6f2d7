"""The synthesized stack: cdk-nag AwsSolutions, cfn-lint, and the foundation's resources."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk import assertions

from livekit_fleet_remediation.config import ConfigError
from tests.example_environments import example_context
from tests.infra.conftest import Synthesized, cfn_lint

Match = assertions.Match


def test_cdk_nag_aws_solutions_has_no_unsuppressed_findings(staging: Synthesized) -> None:
    errors = staging.annotations.find_error("*", Match.string_like_regexp("AwsSolutions-.*"))
    warnings = staging.annotations.find_warning("*", Match.string_like_regexp("AwsSolutions-.*"))
    assert [e.entry.data for e in errors] == []
    assert [w.entry.data for w in warnings] == []


def test_every_nag_suppression_carries_a_reason(staging: Synthesized) -> None:
    resources = json.loads(staging.template_path.read_text())["Resources"]
    suppressions = [
        rule
        for resource in resources.values()
        for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
    ]
    assert suppressions, "expected the documented suppressions to be present"
    assert all(len(rule["reason"]) >= 20 for rule in suppressions)


def test_no_wildcard_suppression_is_a_blanket_one(staging: Synthesized) -> None:
    """A suppression of AwsSolutions-IAM5 names the wildcards it accepts: without them it would hide
    every wildcard a later change adds to the role."""
    resources = json.loads(staging.template_path.read_text())["Resources"]
    wildcards = [
        rule
        for resource in resources.values()
        for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
        if rule["id"] == "AwsSolutions-IAM5"
    ]
    assert wildcards
    assert all(rule.get("applies_to") for rule in wildcards)


def test_cfn_lint_passes_on_the_template(staging: Synthesized) -> None:
    result = cfn_lint(staging.template_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_reaper_runs_on_python_with_both_layers_and_a_dlq(staging: Synthesized) -> None:
    staging.template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "FunctionName": "lkfr-staging-zombie-reaper",
            "Handler": "zombie_reaper.handler.lambda_handler",
            "Runtime": "python3.13",
            "DeadLetterConfig": {"TargetArn": Match.any_value()},
            "ReservedConcurrentExecutions": 1,
            "TracingConfig": {"Mode": "Active"},
            "Environment": {
                "Variables": Match.object_like(
                    {
                        "ENVIRONMENT_NAME": "staging",
                        "MODE_PARAMETER_NAME": "/livekit-fleet-remediation/staging/mode",
                        "LIVEKIT_URL": "https://livekit.staging.example.com/",
                        "LIVEKIT_SECRET_ID": "ppi/livekit/staging/api-credentials",
                        "REAPER": Match.string_like_regexp('"max_age_minutes":60'),
                    }
                )
            },
        },
    )
    staging.template.resource_count_is("AWS::Lambda::LayerVersion", 2)


def test_reaper_environment_is_what_the_function_validates(
    staging: Synthesized, cold_start: Callable[..., Any]
) -> None:
    from fleet_remediation.contract.settings import ReaperSettings

    functions = staging.template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"FunctionName": "lkfr-staging-zombie-reaper"}}
    )
    (function,) = functions.values()
    settings = cold_start(
        ReaperSettings,
        function,
        NOTIFICATION_TOPIC_ARN="arn:aws:sns:ap-northeast-2:111111111111:topic",
        IDEMPOTENCY_TABLE_NAME="reaper-once",
    )
    assert settings.reaper.policy.rules[1].max_age_minutes == 30
    assert settings.function_mode_parameter_name == "/livekit-fleet-remediation/staging/zombie-reaper/mode"
    assert settings.idempotency_table_name == "reaper-once"


def test_schedule_rule_targets_the_reaper_with_retries_and_a_dlq(staging: Synthesized) -> None:
    staging.template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "ScheduleExpression": "rate(5 minutes)",
            "State": "ENABLED",
            "Targets": [
                Match.object_like(
                    {
                        "DeadLetterConfig": {"Arn": Match.any_value()},
                        "RetryPolicy": {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 600},
                    }
                )
            ],
        },
    )


def test_kill_switch_parameter_starts_in_the_configured_mode(staging: Synthesized) -> None:
    staging.template.has_resource_properties(
        "AWS::SSM::Parameter",
        {
            "Name": "/livekit-fleet-remediation/staging/mode",
            "Value": "dry-run",
            "AllowedPattern": "^(enforce|dry-run|off)$",
        },
    )


def test_topic_is_encrypted_and_subscribed(staging: Synthesized) -> None:
    staging.template.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": Match.any_value()})
    staging.template.has_resource_properties(
        "AWS::SNS::Subscription", {"Protocol": "email", "Endpoint": "oncall-staging@example.com"}
    )
    staging.template.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})


def test_reaper_role_reads_only_its_secret_and_switch(staging: Synthesized) -> None:
    policies = staging.template.find_resources("AWS::IAM::Policy")
    statements = [s for p in policies.values() for s in p["Properties"]["PolicyDocument"]["Statement"]]
    secret_reads = [s for s in statements if "secretsmanager:GetSecretValue" in s["Action"]]
    assert secret_reads
    assert all("ppi/livekit/staging/api-credentials" in json.dumps(s["Resource"]) for s in secret_reads)
    assert not any(
        s["Action"] == "*" or (s.get("Resource") == "*" and "secretsmanager" in str(s)) for s in statements
    )


def test_self_monitoring_alarms_notify_the_topic(staging: Synthesized) -> None:
    for suffix in ("errors", "throttles", "dlq", "schedule-stopped", "failed-reports"):
        staging.template.has_resource_properties(
            "AWS::CloudWatch::Alarm",
            {"AlarmName": f"lkfr-staging-zombie-reaper-{suffix}", "AlarmActions": [Match.any_value()]},
        )


def _context_with(path: list[str], value: object) -> dict[str, object]:
    context = copy.deepcopy(example_context())
    node = context["environments"]["staging"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return context


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        (["reaper", "policy", "max_age_minutes"], 0, "environments.staging.reaper.policy.max_age_minutes"),
        (["reaper", "policy", "rules"], [{"name_pattern": "(", "protected": True}], "name_pattern"),
        (["reaper", "schedule_minutes"], "often", "environments.staging.reaper.schedule_minutes"),
        (["livekit_url"], "not a url", "environments.staging.livekit_url"),
        (["reaper", "timeot_seconds"], 30, "environments.staging.reaper.timeot_seconds"),
        (["mode"], "yolo", "environments.staging.mode"),
        (["notifications", "emails"], ["nobody"], "environments.staging.notifications"),
    ],
)
def test_invalid_configuration_fails_synth_naming_the_field(
    synth: Callable[..., Synthesized], path: list[str], value: object, named: str
) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        synth("staging", _context_with(path, value))


def test_unknown_environment_lists_the_known_ones(synth: Callable[..., Synthesized]) -> None:
    with pytest.raises(ConfigError, match="have: prod, staging"):
        synth("qa", example_context())


def test_the_vad_alarm_also_reaches_the_reaper(staging: Synthesized) -> None:
    staging.template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": Match.object_like(
                {
                    "detail-type": ["CloudWatch Alarm State Change"],
                    "detail": {"state": {"value": ["ALARM"]}},
                }
            ),
            "Targets": [
                Match.object_like(
                    {
                        "Arn": {"Fn::GetAtt": [Match.string_like_regexp("ZombieReaper.*Function"), "Arn"]},
                        "DeadLetterConfig": {"Arn": Match.any_value()},
                    }
                )
            ],
        },
    )


def test_failed_reports_alarm_watches_the_functions_own_emf_metric(staging: Synthesized) -> None:
    staging.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "AlarmName": "lkfr-staging-zombie-reaper-failed-reports",
            "Namespace": "LiveKitFleetRemediation",
            "MetricName": "InvocationFailed",
            "Dimensions": Match.array_with(
                [{"Name": "environment", "Value": "staging"}, {"Name": "service", "Value": "zombie_reaper"}]
            ),
            "EvaluationPeriods": 3,
        },
    )
