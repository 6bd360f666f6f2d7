"""Whether an agent service is deploying: ECS DescribeServices lists a rolling update's new PRIMARY
deployment beside the ACTIVE ones it replaces. Used by functions that hold new disruption while a
service deploys and have no ECS adapter of their own (the reaper)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.contract.agent_services import AgentService
from fleet_remediation.contract.budgets import DEPLOYMENT_READ
from fleet_remediation.core.errors import aws_api_errors


class DeploymentWatch(Protocol):
    def in_progress(self) -> str | None:
        """Why new disruption should wait (a deployment under way), or None."""
        ...


def deploying(service: Mapping[str, Any]) -> str | None:
    """The reason from one service as DescribeServices describes it: a rolling update runs the new
    PRIMARY deployment beside the ACTIVE ones it replaces."""
    deployments = service.get("deployments", [])
    if len(deployments) < 2:
        return None
    primary = next((d for d in deployments if d.get("status") == "PRIMARY"), deployments[0])
    name = service.get("serviceName", "the agent service")
    return f"a deployment of {name} is in progress ({primary.get('id', 'unknown id')})"


class EcsDeploymentWatch:
    """Each agent service's deployments, read once per call; an unreadable answer raises (the caller
    holds: unknown is not "no deployment")."""

    def __init__(self, services: Sequence[AgentService], client: Any | None = None) -> None:
        self.services = list(services)
        self._client = client or aws_client(DEPLOYMENT_READ)

    def in_progress(self) -> str | None:
        for service in self.services:
            with aws_api_errors("ECS DescribeServices", service.ecs_service):
                described = self._client.describe_services(
                    cluster=service.ecs_cluster, services=[service.ecs_service]
                )
            for found in described.get("services", []):
                reason = deploying(found)
                if reason is not None:
                    return reason
        return None
