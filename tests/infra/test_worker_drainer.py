"""The worker drainer in the synthesized stack: function, ledger, rules, scoped IAM, VPC option."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aws_cdk import assertions

from fleet_remediation.contract.drainer_steps import ECS_WRITE_ACTIONS, STEP_TABLE
from fleet_remediation.contract.naming import EXCLUDE_TAG
from fleet_remediation.contract.settings import DrainerSettings
from livekit_fleet_remediation.config import ConfigError
from tests.example_environments import example_context
from tests.infra.conftest import Synthesized
from worker_drainer.adapters.ecs_model import TaskProtection
from worker_drainer.adapters.ecs_tasks import (
    ECS_SERVICE_ACTIONS,
    ECS_TASK_CHANGE_ACTIONS,
    ECS_TASK_READ_ACTIONS,
    ECS_TASK_TAG_ACTIONS,
)
from worker_drainer.decide.task_tags import (
    COOLDOWN_TAG,
    STATE_TAGS,
    WRITTEN_TAGS,
    Cause,
    cordon_tags,
    reaped_tags,
)

Match = assertions.Match
ALL_TASK_ACTIONS = (*ECS_TASK_READ_ACTIONS, *ECS_TASK_CHANGE_ACTIONS, *ECS_TASK_TAG_ACTIONS)
FUNCTION_NAME = "lkfr-staging-agents-worker-drainer"


def _drainer_function(synthesized: Synthesized) -> dict[str, Any]:
    found = synthesized.template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"FunctionName": FUNCTION_NAME}}
    )
    (function,) = found.values()
    return dict(function)


def _statements(synthesized: Synthesized) -> list[dict[str, Any]]:
    policies = synthesized.template.find_resources("AWS::IAM::Policy")
    return [
        statement
        for logical_id, policy in policies.items()
        if logical_id.startswith("ServiceagentsWorkerDrainer")
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _with_drainer(**drainer: Any) -> dict[str, Any]:
    context = copy.deepcopy(example_context())
    context["environments"]["staging"]["drainer"] = drainer
    return context


def test_the_function_environment_is_what_the_function_validates(
    staging: Synthesized, cold_start: Callable[..., Any]
) -> None:
    function = _drainer_function(staging)
    settings = cold_start(
        DrainerSettings,
        function,
        NOTIFICATION_TOPIC_ARN="arn:aws:sns:ap-northeast-2:111111111111:t",
        LEDGER_TABLE_NAME="ledger",
        SCAN_BUDGET_TABLE_NAME="scan-tally",
    )
    assert settings.ecs_cluster == "ppi-livekit-staging"
    assert settings.agent_container_name == "ppi-livekit-agent"
    assert settings.drainer.policy.max_draining_tasks >= 1
    assert function["Properties"]["DeadLetterConfig"]["TargetArn"]


def test_the_ledger_table_has_ttl_and_point_in_time_recovery(staging: Synthesized) -> None:
    staging.template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        },
    )


def _rule_targets_drainer(synthesized: Synthesized, pattern: dict[str, Any]) -> None:
    synthesized.template.has_resource_properties(
        "AWS::Events::Rule",
        {
            **pattern,
            "Targets": [
                Match.object_like(
                    {
                        "Arn": {"Fn::GetAtt": [Match.string_like_regexp("WorkerDrainer.*Function"), "Arn"]},
                        "DeadLetterConfig": {"Arn": Match.any_value()},
                        "RetryPolicy": Match.any_value(),
                    }
                )
            ],
        },
    )


def test_reconcile_schedule_vad_alarm_and_suspect_worker_reach_the_drainer(staging: Synthesized) -> None:
    _rule_targets_drainer(staging, {"ScheduleExpression": "rate(1 minute)"})
    _rule_targets_drainer(
        staging,
        {
            "EventPattern": Match.object_like(
                {"detail-type": ["CloudWatch Alarm State Change"], "detail": {"state": {"value": ["ALARM"]}}}
            )
        },
    )
    _rule_targets_drainer(
        staging,
        {
            "EventPattern": {
                "source": ["livekit.fleet-remediation"],
                "detail-type": ["LiveKit Suspect Worker"],
                "detail": {"environment": ["staging"]},
            }
        },
    )


def _ecs_statement(statements: list[dict[str, Any]], actions: tuple[str, ...]) -> dict[str, Any]:
    """The one statement granting ``actions`` (CDK's policy minimizing may merge statements that
    share resources and conditions)."""
    (found,) = [s for s in statements if set(actions) <= set(_listed(s["Action"]))]
    return found


def test_ecs_reads_are_scoped_to_the_clusters_tasks_and_the_service(staging: Synthesized) -> None:
    statements = _statements(staging)
    reads = _ecs_statement(statements, ECS_TASK_READ_ACTIONS)
    assert ":task/ppi-livekit-staging/*" in str(reads["Resource"])
    service_statement = _ecs_statement(statements, ECS_SERVICE_ACTIONS)
    assert ":service/ppi-livekit-staging/ppi-livekit-agent" in str(service_statement["Resource"])
    list_tasks = next(s for s in statements if s["Action"] == "ecs:ListTasks")
    assert "ecs:cluster" in list_tasks["Condition"]["ArnEquals"]
    assert ":cluster/ppi-livekit-staging" in str(list_tasks["Condition"]["ArnEquals"]["ecs:cluster"])
    assert not any(s["Action"] == "*" or s["Action"] == "ecs:*" for s in statements)
    assert not any("ec2:CreateNetworkInterface" in str(s["Action"]) for s in statements)
    # Every ECS task action is in exactly one of the three task statements.
    task_actions = [a for s in statements for a in _listed(s["Action"]) if a in ALL_TASK_ACTIONS]
    assert sorted(task_actions) == sorted(ALL_TASK_ACTIONS)


def _listed(actions: str | list[str]) -> list[str]:
    return [actions] if isinstance(actions, str) else actions


def test_task_changes_and_tags_are_limited_to_the_services_tasks_by_its_managed_tag(
    staging: Synthesized,
) -> None:
    statements = _statements(staging)
    ours = {"aws:ResourceTag/aws:ecs:serviceName": "ppi-livekit-agent"}
    changes = _ecs_statement(statements, ECS_TASK_CHANGE_ACTIONS)
    assert changes["Condition"] == {"StringEquals": ours}
    assert ":task/ppi-livekit-staging/*" in str(changes["Resource"])
    tagging = _ecs_statement(statements, ECS_TASK_TAG_ACTIONS)
    assert tagging["Condition"]["StringEquals"] == ours
    assert tagging["Condition"]["ForAllValues:StringEquals"] == {"aws:TagKeys": list(WRITTEN_TAGS)}
    assert ":task/ppi-livekit-staging/*" in str(tagging["Resource"])


def test_every_ecs_change_the_role_is_granted_comes_from_a_row_of_the_step_table(
    staging: Synthesized,
) -> None:
    statements = _statements(staging)

    def writes(on: str) -> set[str]:
        return {
            action
            for s in statements
            if on in str(s["Resource"])
            for action in _listed(s["Action"])
            if action in ECS_WRITE_ACTIONS
        }

    granted = writes("")
    assert writes(":task/") == {action for row in STEP_TABLE for action in row.task_actions}
    assert writes(":service/") == {action for row in STEP_TABLE for action in row.service_actions}
    assert granted == writes(":task/") | writes(":service/")
    # Any other ECS action is a read (the snapshot's and the steps' re-checks).
    others = {a for s in statements for a in _listed(s["Action"]) if a.startswith("ecs:")} - granted
    assert all(re.match(r"ecs:(Describe|List|Get)", action) for action in others), others


def test_the_tags_the_drainer_writes_are_the_keys_its_policy_allows() -> None:
    now = datetime(2026, 9, 15, 17, 40, tzinfo=UTC)
    protection = TaskProtection(True, now + timedelta(minutes=30))
    written = {
        *cordon_tags(now, "slow", Cause.VAD, "desired-count", protection, 600, "inc-1"),
        *reaped_tags(now, Cause.VAD, "inc-1"),
        COOLDOWN_TAG,
        *STATE_TAGS,
    }
    assert written <= set(WRITTEN_TAGS)
    assert EXCLUDE_TAG not in WRITTEN_TAGS


def test_the_cluster_scope_drops_the_service_condition_and_keeps_the_tag_keys(
    synth: Callable[..., Synthesized],
) -> None:
    statements = _statements(synth("staging", _with_drainer(task_action_scope="cluster")))
    changes = _ecs_statement(statements, ECS_TASK_CHANGE_ACTIONS)
    assert "Condition" not in changes
    assert ":task/ppi-livekit-staging/*" in str(changes["Resource"])
    tagging = _ecs_statement(statements, ECS_TASK_TAG_ACTIONS)
    assert tagging["Condition"] == {"ForAllValues:StringEquals": {"aws:TagKeys": list(WRITTEN_TAGS)}}


def test_the_ledger_table_is_the_only_table_and_grants_what_ledger_outbox_and_once_keys_call(
    staging: Synthesized,
) -> None:
    # The scan budget's tally is the other table the drainer reads and adds to (GetItem, UpdateItem).
    (statement,) = [
        s
        for s in _statements(staging)
        if "dynamodb:" in str(s["Action"]) and "ScanBudget" not in json.dumps(s["Resource"])
    ]
    # Leases, debts, the journal and notices (Put/Delete/Query); the outbox (Get/Put/Delete); the
    # delivery once-keys (Powertools Idempotency: Put, then Update).
    assert sorted(statement["Action"]) == [
        "dynamodb:DeleteItem",
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:Query",
        "dynamodb:UpdateItem",
    ]
    (table,) = statement["Resource"]["Fn::GetAtt"][:1]
    assert table.startswith("ServiceagentsWorkerDrainerLedger")


def test_vpc_configuration_attaches_the_function_and_its_eni_permissions(
    synth: Callable[..., Synthesized],
) -> None:
    vpc = {
        "vpc_id": "vpc-0abc",
        "subnet_ids": ["subnet-01", "subnet-02"],
        "security_group_ids": ["sg-0123abcd"],
    }
    synthesized = synth("staging", _with_drainer(vpc=vpc))
    function = _drainer_function(synthesized)
    assert function["Properties"]["VpcConfig"] == {
        "SubnetIds": ["subnet-01", "subnet-02"],
        "SecurityGroupIds": ["sg-0123abcd"],
    }
    assert any("ec2:CreateNetworkInterface" in s["Action"] for s in _statements(synthesized))
    errors = synthesized.annotations.find_error("*", Match.string_like_regexp("AwsSolutions-.*"))
    assert [e.entry.data for e in errors] == []


@pytest.mark.parametrize(
    ("drainer", "named"),
    [
        (
            {"policy": {"max_draining_fraction": 2}},
            "environments.staging.drainer.policy.max_draining_fraction",
        ),
        ({"policy": {"recovery_minutes": 40, "window_minutes": 30}}, "environments.staging.drainer.policy"),
        ({"insights_timeout_seconds": 40, "timeout_seconds": 60}, "environments.staging.drainer"),
        ({"vpc": {"vpc_id": "vpc-1", "subnet_ids": ["nope"], "security_group_ids": ["sg-1"]}}, "drainer.vpc"),
        ({"capacity": "more"}, "environments.staging.drainer.capacity"),
        ({"task_action_scope": "account"}, "environments.staging.drainer.task_action_scope"),
    ],
)
def test_invalid_drainer_configuration_fails_synth_naming_the_field(
    synth: Callable[..., Synthesized], drainer: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        synth("staging", _with_drainer(**drainer))
