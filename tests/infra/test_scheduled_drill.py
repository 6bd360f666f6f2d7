"""The scheduled drill (``drills.schedule``) in the example ``staging`` with drills turned on: its
function, schedule rule and least-privilege role, cdk-nag, cfn-lint and the service-model check
clean; absent (no function, rule, role or switch of it) unless the schedule is set."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from aws_cdk import assertions

from fleet_remediation.contract.budgets import scheduled_drill_seconds_needed
from fleet_remediation.contract.drills import DRILL_TAG
from livekit_fleet_remediation.config import ConfigError, load_environment
from tests.example_environments import staging_with_drills
from tests.infra.conftest import Synthesized, assert_nag_lint_and_service_models_clean

Match = assertions.Match
SCHEDULE = "cron(0 10 ? * TUE *)"


@pytest.fixture(scope="module")
def scheduled(synth: Callable[..., Synthesized]) -> Synthesized:
    return synth(
        "staging", staging_with_drills({"enabled": True, "schedule": {"fault": "cpu-starved", "minutes": 10}})
    )


@pytest.fixture(scope="module")
def unscheduled(synth: Callable[..., Synthesized]) -> Synthesized:
    return synth("staging", staging_with_drills({"enabled": True}))


def _drill_resources(synthesized: Synthesized) -> list[str]:
    resources = synthesized.template.to_json()["Resources"]
    return sorted(k for k in resources if "ScheduledDrill" in k or "ScheduledDrillMode" in k)


def test_the_scheduled_drill_runs_weekly_once_per_event_within_lambdas_limit(scheduled: Synthesized) -> None:
    template = scheduled.template
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "FunctionName": "lkfr-staging-scheduled-drill",
            "Handler": "scheduled_drill.handler.lambda_handler",
            "ReservedConcurrentExecutions": 1,
            "Environment": {"Variables": Match.object_like({"DRILLED_SERVICE": "agents"})},
        },
    )
    (function,) = [
        f["Properties"]
        for f in template.find_resources("AWS::Lambda::Function").values()
        if f["Properties"].get("FunctionName") == "lkfr-staging-scheduled-drill"
    ]
    assert 600 < function["Timeout"] <= 900
    (rule,) = [
        r["Properties"]
        for r in template.find_resources("AWS::Events::Rule").values()
        if r["Properties"].get("ScheduleExpression") == SCHEDULE
    ]
    (target,) = rule["Targets"]
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 300}
    template.has_resource_properties(
        "AWS::SSM::Parameter", {"Name": "/livekit-fleet-remediation/staging/scheduled-drill/mode"}
    )


def test_its_role_tags_only_the_drill_key_on_the_services_tasks_and_reads_only_the_record(
    scheduled: Synthesized,
) -> None:
    (policy,) = [
        p["Properties"]
        for k, p in scheduled.template.find_resources("AWS::IAM::Policy").items()
        if k.startswith("ScheduledDrill")
    ]
    statements = policy["PolicyDocument"]["Statement"]
    (tagging,) = [s for s in statements if s["Action"] == ["ecs:TagResource", "ecs:UntagResource"]]
    assert tagging["Condition"]["ForAllValues:StringEquals"] == {"aws:TagKeys": [DRILL_TAG]}
    service = scheduled.stack.remediation.config.agent_service.ecs_service
    assert tagging["Condition"]["StringEquals"] == {"aws:ResourceTag/aws:ecs:serviceName": service}
    actions = {
        a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert {"ecs:ListTasks", "ecs:DescribeTasks", "logs:FilterLogEvents", "dynamodb:Query"} <= actions
    assert not [a for a in actions if a.endswith("*") and not a.startswith("kms:")]
    assert not {"ecs:StopTask", "ecs:UpdateService", "ecs:UpdateContainerInstancesState"} & actions
    (listing,) = [s for s in statements if s["Action"] == "ecs:ListTasks"]
    assert listing["Condition"]["ArnEquals"]["ecs:cluster"]


def test_cdk_nag_cfn_lint_and_the_service_models_accept_the_scheduled_drill(scheduled: Synthesized) -> None:
    assert_nag_lint_and_service_models_clean(scheduled)


def test_without_the_schedule_there_is_no_function_rule_role_or_switch_of_it(
    scheduled: Synthesized, unscheduled: Synthesized
) -> None:
    assert _drill_resources(scheduled), "the opt-in's resources are found by this name"
    assert _drill_resources(unscheduled) == []
    names = [
        r["Properties"].get("Name")
        for r in unscheduled.template.find_resources("AWS::SSM::Parameter").values()
    ]
    assert not [n for n in names if "scheduled-drill" in str(n)]
    before = set(unscheduled.template.to_json()["Resources"])
    assert before <= set(scheduled.template.to_json()["Resources"]), "every logical id stays"


def test_a_schedule_needs_an_environment_named_for_drills_and_a_service_of_ours() -> None:
    with pytest.raises(ConfigError, match=r"schedule: a scheduled drill needs drills.enabled"):
        load_environment(staging_with_drills({"enabled": False, "schedule": {}}), "staging")
    with pytest.raises(ConfigError, match=r"drills.schedule.agent_service must name one of"):
        load_environment(
            staging_with_drills({"enabled": True, "schedule": {"agent_service": "nobody"}}), "staging"
        )
    with pytest.raises(ConfigError, match=r"expression"):
        load_environment(
            staging_with_drills({"enabled": True, "schedule": {"expression": "every tuesday"}}), "staging"
        )
    with pytest.raises(ConfigError, match=r"minutes"):
        load_environment(staging_with_drills({"enabled": True, "schedule": {"minutes": 30}}), "staging")


def test_the_schedule_rule_carries_the_configured_expression_to_a_drill_of_the_configured_minutes(
    synth: Callable[..., Synthesized],
) -> None:
    expression, minutes = "cron(30 9 ? * WED *)", 4
    template = synth(
        "staging",
        staging_with_drills(
            {
                "enabled": True,
                "schedule": {"fault": "tts-silence", "expression": expression, "minutes": minutes},
            }
        ),
    ).template.to_json()
    resources = template["Resources"]
    (function_id,) = [
        k
        for k, r in resources.items()
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"].get("FunctionName") == "lkfr-staging-scheduled-drill"
    ]
    (rule,) = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::Events::Rule"
        and any(t["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]} for t in r["Properties"]["Targets"])
    ]
    assert rule["ScheduleExpression"] == expression
    function = resources[function_id]["Properties"]
    drill = json.loads(function["Environment"]["Variables"]["DRILL"])
    assert (drill["expression"], drill["minutes"]) == (expression, minutes)
    assert function["Timeout"] == int(scheduled_drill_seconds_needed(minutes)) + 1
