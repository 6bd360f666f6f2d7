"""``lkfr drill --via fis``'s check: what a task definition and its service lack for AWS FIS's ECS
task actions, one item each, and nothing when they have it all."""

from __future__ import annotations

from typing import Any

import pytest

from fleet_remediation.contract.drills import DrillFault
from livekit_fleet_remediation.cli.drill_fis import TASK_ROLE_ACTIONS, fis_missing


class PolicySimulator:
    """``iam.simulate_principal_policy`` for a role allowed ``allowed``."""

    def __init__(self, allowed: set[str]) -> None:
        self.allowed = allowed
        self.asked: list[str] = []

    def simulate_principal_policy(self, PolicySourceArn: str, ActionNames: list[str]) -> dict[str, Any]:
        self.asked.append(PolicySourceArn)
        decisions = [
            {"EvalActionName": name, "EvalDecision": "allowed" if name in self.allowed else "implicitDeny"}
            for name in ActionNames
        ]
        return {"EvaluationResults": decisions}


def ready() -> dict[str, Any]:
    return {
        "taskRoleArn": "arn:aws:iam::1:role/agents",
        "networkMode": "awsvpc",
        "enableFaultInjection": True,
        "containerDefinitions": [
            {"name": "agent", "image": "example/agent:1"},
            {
                "name": "ssm",
                "image": "public.ecr.aws/amazon-ssm-agent/amazon-ssm-agent:latest",
                "environment": [{"name": "MANAGED_INSTANCE_ROLE_NAME", "value": "fis-managed"}],
            },
        ],
    }


@pytest.mark.parametrize("fault", [DrillFault.CPU_STARVED, DrillFault.TTS_SILENCE])
def test_a_ready_service_lacks_nothing(fault: DrillFault) -> None:
    iam = PolicySimulator(set(TASK_ROLE_ACTIONS))
    assert fis_missing(fault, {}, ready(), iam) == []
    assert iam.asked == ["arn:aws:iam::1:role/agents"]


def test_each_gap_is_named() -> None:
    definition = {**ready(), "networkMode": "bridge", "enableFaultInjection": False}
    definition["containerDefinitions"] = [{"name": "agent", "image": "example/agent:1"}]
    iam = PolicySimulator({"iam:PassRole"})
    missing = fis_missing(DrillFault.TTS_SILENCE, {"enableExecuteCommand": True}, definition, iam)
    assert missing == [
        "an SSM Agent container (amazon-ssm-agent image) in the task definition",
        "the task role allowed ssm:CreateActivation",
        "the task role allowed ssm:AddTagsToResource",
        "ECS Exec turned off on the service (enableExecuteCommand)",
        "enableFaultInjection: true on the task definition",
        "the awsvpc or host network mode",
    ]


def test_cpu_stress_needs_no_network_fault_injection_but_the_sidecar_needs_its_role_name() -> None:
    definition = {**ready(), "networkMode": "bridge", "enableFaultInjection": False}
    definition["containerDefinitions"][1]["environment"] = []
    missing = fis_missing(DrillFault.CPU_STARVED, {}, definition, PolicySimulator(set(TASK_ROLE_ACTIONS)))
    assert missing == ["MANAGED_INSTANCE_ROLE_NAME in the SSM Agent container's environment"]


def test_a_task_definition_without_a_task_role_is_told_so_without_asking_iam() -> None:
    definition = {key: value for key, value in ready().items() if key != "taskRoleArn"}
    iam = PolicySimulator(set())
    assert fis_missing(DrillFault.CPU_STARVED, {}, definition, iam) == [
        "a task role (taskRoleArn) on the task definition"
    ]
    assert iam.asked == []


def test_fis_has_no_action_for_an_abandoned_session() -> None:
    missing = fis_missing(DrillFault.ABANDONED_SESSION, {}, ready(), PolicySimulator(set()))
    assert missing == ["an AWS FIS action for abandoned-session (there is none: drill it through the hook)"]
