"""An environment named for drills with AWS FIS templates (``drills.fis``, the example ``staging``
with drills turned on): one experiment template per fault FIS has, each on one task of the agents'
service and stopped by the fleet-wide guard alarm; the experiments' role and the marker policies
least-privilege; cdk-nag, cfn-lint and the service-model check clean. The example environments
themselves carry none of it (tests/infra/test_logical_ids.py holds their resources unchanged)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from fleet_remediation.contract.drills import DRILL_TAG
from livekit_fleet_remediation.config import ConfigError, load_environment
from livekit_fleet_remediation.drill_config import (
    TEMPLATE_ENVIRONMENT_TAG,
    TEMPLATE_FAULT_TAG,
    TEMPLATE_SERVICE_TAG,
)
from tests.example_environments import staging_with_drills
from tests.infra.conftest import Synthesized, assert_nag_lint_and_service_models_clean

TTS_HOST = "api.tts.example.com"


@pytest.fixture(scope="module")
def drilled(synth: Callable[..., Synthesized]) -> Synthesized:
    return synth("staging", staging_with_drills({"enabled": True, "fis": {"tts_provider_hosts": [TTS_HOST]}}))


def _one(drilled: Synthesized, kind: str, part: str) -> dict[str, Any]:
    (found,) = [r for k, r in drilled.template.find_resources(kind).items() if part in k]
    return found["Properties"]  # type: ignore[no-any-return]


def _statements(policy: dict[str, Any]) -> list[dict[str, Any]]:
    return policy["PolicyDocument"]["Statement"]  # type: ignore[no-any-return]


def test_each_fault_fis_has_gets_one_template_on_one_task_of_the_service_stopped_by_the_guard(
    drilled: Synthesized,
) -> None:
    config = drilled.stack.remediation.config
    service = config.agent_service
    templates = drilled.template.find_resources("AWS::FIS::ExperimentTemplate")
    by_fault = {t["Properties"]["Tags"][TEMPLATE_FAULT_TAG]: t["Properties"] for t in templates.values()}
    assert sorted(by_fault) == ["cpu-starved", "tts-silence"]
    guard_id = next(
        iter(
            drilled.template.find_resources(
                "AWS::CloudWatch::Alarm", {"Properties": {"AlarmName": "livekit-staging-agents-drill-guard"}}
            )
        )
    )
    for template in by_fault.values():
        assert template["Targets"] == {
            "AgentTask": {
                "ResourceType": "aws:ecs:task",
                "SelectionMode": "COUNT(1)",
                "Parameters": {"cluster": service.ecs_cluster, "service": service.ecs_service},
            }
        }
        (action,) = template["Actions"].values()
        assert action["Targets"] == {"Tasks": "AgentTask"}
        assert action["Parameters"]["duration"] == "PT15M"
        assert template["StopConditions"] == [
            {"Source": "aws:cloudwatch:alarm", "Value": {"Fn::GetAtt": [guard_id, "Arn"]}}
        ]
        assert template["Tags"][TEMPLATE_ENVIRONMENT_TAG] == "staging"
        assert template["Tags"][TEMPLATE_SERVICE_TAG] == service.name
    assert by_fault["cpu-starved"]["Actions"]["Fault"]["ActionId"] == "aws:ecs:task-cpu-stress"
    latency = by_fault["tts-silence"]["Actions"]["Fault"]
    assert latency["ActionId"] == "aws:ecs:task-network-latency"
    assert (latency["Parameters"]["sources"], latency["Parameters"]["delayMilliseconds"]) == (
        TTS_HOST,
        "8000",
    )


def test_the_guard_is_the_fleet_wide_share_of_responses_without_a_first_audio_frame(
    drilled: Synthesized,
) -> None:
    guard = _one(drilled, "AWS::CloudWatch::Alarm", "DrillsFisGuard")
    assert guard["Threshold"] == 0.5
    assert guard["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    expression = next(m for m in guard["Metrics"] if "Expression" in m)["Expression"]
    assert expression == "IF(responses >= 20, (responses - frames) / responses, 0)"
    # No dimension: every task's responses count, so one drilled task alone stays under it.
    assert all("Dimensions" not in m["MetricStat"]["Metric"] for m in guard["Metrics"] if "MetricStat" in m)


def test_the_experiment_role_is_fis_s_alone_and_reaches_the_cluster_s_tasks_only(
    drilled: Synthesized,
) -> None:
    role = _one(drilled, "AWS::IAM::Role", "DrillsFisExperimentRole")
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "fis.amazonaws.com"}
    assert set(trust["Condition"]["StringEquals"]) == {"aws:SourceAccount"}
    statements = _statements(_one(drilled, "AWS::IAM::Policy", "DrillsFisExperimentRole"))
    granted = {(str(s["Action"]), str(s["Resource"])) for s in statements}
    cluster = drilled.stack.remediation.config.agent_service.ecs_cluster
    assert len(granted) == 5
    by_resource = {str(s["Resource"]): s for s in statements}
    instances = next(s for r, s in by_resource.items() if ":managed-instance/" in r)
    assert instances["Action"] == "ssm:SendCommand"
    assert instances["Condition"]["StringLike"]["ssm:resourceTag/ECS_TASK_ARN"].endswith(f":task/{cluster}/*")
    documents = next(s for r, s in by_resource.items() if ":document/" in r)
    assert documents["Resource"].endswith("::document/AWSFIS-Run-*")
    wide = [s for s in statements if s["Resource"] == "*"]
    assert sorted(str(s["Action"]) for s in wide) == [
        "['ssm:CancelCommand', 'ssm:ListCommands']",
        "ecs:ListTasks",
    ]
    listing = next(s for s in wide if s["Action"] == "ecs:ListTasks")
    assert listing["Condition"]["ArnEquals"]["ecs:cluster"].endswith(f":cluster/{cluster}")


def test_the_marker_policies_write_the_drill_tag_only_on_the_service_s_tasks(drilled: Synthesized) -> None:
    task_role = _statements(_one(drilled, "AWS::IAM::ManagedPolicy", "DrillsAgentTaskRolePolicy"))
    drills = drilled.stack.remediation.services["agents"].drills
    assert drills is not None
    # The construct hands the policies to the team's app, to attach where its tasks and people run.
    assert (
        "DrillsAgentTaskRolePolicy"
        in drilled.stack.resolve(drills.task_role_policy.managed_policy_arn)["Ref"]
    )
    assert [s["Action"] for s in task_role] == ["ecs:ListTagsForResource"]
    operator = _statements(_one(drilled, "AWS::IAM::ManagedPolicy", "DrillsOperatorPolicy"))
    (tagging,) = [s for s in operator if s["Action"] == ["ecs:TagResource", "ecs:UntagResource"]]
    assert tagging["Condition"]["ForAllValues:StringEquals"] == {"aws:TagKeys": [DRILL_TAG]}
    service = drilled.stack.remediation.config.agent_service.ecs_service
    assert tagging["Condition"]["StringEquals"] == {"aws:ResourceTag/aws:ecs:serviceName": service}
    actions = {a for s in operator for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert {"fis:StartExperiment", "fis:StopExperiment", "fis:ListExperiments"} <= actions
    assert not [a for a in actions if a.endswith("*")]


def test_cdk_nag_cfn_lint_and_the_service_models_accept_the_drill_resources(drilled: Synthesized) -> None:
    assert_nag_lint_and_service_models_clean(drilled)


def test_the_reaper_carries_the_environments_drill_opt_in_for_lkfr_drill_to_read_back(
    drilled: Synthesized, staging: Synthesized
) -> None:
    def reapers_variables(synthesized: Synthesized) -> dict[str, Any]:
        (reaper,) = [
            f["Properties"]["Environment"]["Variables"]
            for f in synthesized.template.find_resources("AWS::Lambda::Function").values()
            if f["Properties"].get("FunctionName") == "lkfr-staging-zombie-reaper"
        ]
        return reaper  # type: ignore[no-any-return]

    assert reapers_variables(drilled)["DRILLS_ENABLED"] == "True"
    assert "DRILLS_ENABLED" not in reapers_variables(staging)


def test_fis_templates_need_an_environment_named_for_drills() -> None:
    with pytest.raises(ConfigError, match=r"drills: .*fis: experiment templates need drills.enabled"):
        load_environment(staging_with_drills({"enabled": False, "fis": {}}), "staging")
    with pytest.raises(ConfigError, match=r"tts_provider_hosts"):
        load_environment(
            staging_with_drills({"enabled": True, "fis": {"tts_provider_hosts": ["a b"]}}), "staging"
        )
