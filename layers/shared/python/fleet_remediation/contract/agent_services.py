"""An agent service the deployment covers: its ECS cluster and service and its agents' log group.

An environment holds a list of them (``agent_services``); each gets its own detection, responder
and drainer, while the reaper (rooms are LiveKit-wide), the kill switch, the topic and the dashboard
are the environment's. One entry per environment until several are supported.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from fleet_remediation.contract.models import StrictModel

# The flat keys an environment held before it held a list of agent services.
MOVED_KEYS = ("ecs_cluster", "ecs_service", "agent_log_group")
MAX_AGENT_SERVICES = 1


class AgentService(StrictModel):
    name: str = Field(
        default="agents",
        pattern=r"^[a-z][a-z0-9-]{0,23}$",
        description="Short name used in resource names, messages and metrics.",
    )
    ecs_cluster: str = Field(min_length=1, max_length=255, description="The ECS cluster the agents run in.")
    ecs_service: str = Field(min_length=1, max_length=255, description="The agents' ECS service.")
    agent_log_group: str = Field(
        min_length=1, max_length=512, description="The agents' CloudWatch log group."
    )


def refuse_moved_keys(values: Any) -> Any:
    """An environment written for 0.1 names its service at the top level: say where it goes now."""
    if isinstance(values, dict):
        moved = [key for key in MOVED_KEYS if key in values]
        if moved:
            raise ValueError(
                f"{', '.join(moved)} moved under agent_services in 0.2: write "
                '"agent_services": [{"name": "agents", "ecs_cluster": …, "ecs_service": …, '
                '"agent_log_group": …}] (CHANGELOG, upgrading to 0.2.0)'
            )
    return values
