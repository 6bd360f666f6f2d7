"""``lkfr drill --via fis``: whether the agent service can take AWS Fault Injection Service's ECS task
actions, and what is missing if not. The construct does not own the team's task definition, so this
reads it and says what to change (AWS FIS user guide, "Use the AWS FIS aws:ecs:task actions"; Amazon
ECS developer guide, "Use fault injection with your Amazon ECS and Fargate workloads"):

- an SSM Agent container in the task definition, with ``MANAGED_INSTANCE_ROLE_NAME`` in its
  environment (the role the task registers with as an SSM managed instance);
- the task role allowed ``ssm:CreateActivation``, ``ssm:AddTagsToResource`` and ``iam:PassRole``;
- ECS Exec off on the service (the actions refuse to run beside it);
- for the network action (latency toward the TTS provider): ``enableFaultInjection`` and the
  ``awsvpc`` or ``host`` network mode.

FIS has CPU stress (``aws:ecs:task-cpu-stress``) for ``cpu-starved`` and network latency
(``aws:ecs:task-network-latency``) for ``tts-silence``; it has nothing for ``abandoned-session``.
"""

from __future__ import annotations

from typing import Any

from fleet_remediation.contract.drills import DrillFault
from livekit_fleet_remediation.drill_config import FIS_ACTIONS

SSM_AGENT_IMAGE = "amazon-ssm-agent"
MANAGED_INSTANCE_ROLE_ENV = "MANAGED_INSTANCE_ROLE_NAME"
TASK_ROLE_ACTIONS = ("ssm:CreateActivation", "ssm:AddTagsToResource", "iam:PassRole")
NETWORK_MODES = ("awsvpc", "host")


def _sidecar_missing(task_definition: dict[str, Any]) -> list[str]:
    containers = task_definition.get("containerDefinitions", [])
    agents = [c for c in containers if SSM_AGENT_IMAGE in str(c.get("image", ""))]
    if not agents:
        return [f"an SSM Agent container ({SSM_AGENT_IMAGE} image) in the task definition"]
    names = {item.get("name") for agent in agents for item in agent.get("environment", [])}
    if MANAGED_INSTANCE_ROLE_ENV not in names:
        return [f"{MANAGED_INSTANCE_ROLE_ENV} in the SSM Agent container's environment"]
    return []


def _role_missing(task_definition: dict[str, Any], iam: Any) -> list[str]:
    role = task_definition.get("taskRoleArn")
    if not role:
        return ["a task role (taskRoleArn) on the task definition"]
    results = iam.simulate_principal_policy(PolicySourceArn=role, ActionNames=list(TASK_ROLE_ACTIONS))
    denied = [r["EvalActionName"] for r in results["EvaluationResults"] if r["EvalDecision"] != "allowed"]
    return [f"the task role allowed {action}" for action in denied]


def fis_missing(
    fault: DrillFault, service: dict[str, Any], task_definition: dict[str, Any], iam: Any
) -> list[str]:
    """What the service and its task definition lack for ``fault`` through FIS (empty: nothing)."""
    if fault not in FIS_ACTIONS:
        return [f"an AWS FIS action for {fault.value} (there is none: drill it through the hook)"]
    missing = _sidecar_missing(task_definition) + _role_missing(task_definition, iam)
    if service.get("enableExecuteCommand"):
        missing.append("ECS Exec turned off on the service (enableExecuteCommand)")
    if FIS_ACTIONS[fault].startswith("aws:ecs:task-network"):
        if not task_definition.get("enableFaultInjection"):
            missing.append("enableFaultInjection: true on the task definition")
        if task_definition.get("networkMode") not in NETWORK_MODES:
            missing.append("the awsvpc or host network mode")
    return missing


def check_fis(ecs: Any, iam: Any, cluster: str, service_name: str, fault: DrillFault) -> list[str]:
    """Reads the service and its task definition; returns what is missing for ``fault`` through FIS."""
    (service,) = ecs.describe_services(cluster=cluster, services=[service_name])["services"]
    definition = ecs.describe_task_definition(taskDefinition=service["taskDefinition"])["taskDefinition"]
    return fis_missing(fault, service, definition, iam)
