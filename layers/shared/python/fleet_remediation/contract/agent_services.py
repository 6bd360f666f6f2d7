"""An agent service the deployment covers: its ECS cluster and service and its agents' log group.

An environment holds a list of them (``agent_services``); each gets its own detection, responder
and drainer, while the reaper (rooms are LiveKit-wide), the kill switch, the topic and the dashboard
are the environment's. An entry may carry its own ``detection``, ``tts_reach`` and ``drainer``
sections (``AgentServiceConfig``); a section it leaves out is the environment's, whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from fleet_remediation.contract.detection import DetectionConfig
from fleet_remediation.contract.models import StrictModel
from fleet_remediation.contract.sections import DrainerSection, TtsReachSection

# The flat keys an environment held before it held a list of agent services.
MOVED_KEYS = ("ecs_cluster", "ecs_service", "agent_log_group")
# Each service adds two functions, their alarms, rules and dashboard rows: a bounded stack.
MAX_AGENT_SERVICES = 8
AGENT_SERVICE_NAME_PATTERN = r"^[a-z][a-z0-9-]{0,23}$"
# The name of a service that is given none (an environment that covers one service).
DEFAULT_AGENT_SERVICE = "agents"


class AgentService(StrictModel):
    name: str = Field(
        default=DEFAULT_AGENT_SERVICE,
        pattern=AGENT_SERVICE_NAME_PATTERN,
        description="Short name used in resource names, messages and metrics.",
    )
    ecs_cluster: str = Field(min_length=1, max_length=255, description="The ECS cluster the agents run in.")
    ecs_service: str = Field(min_length=1, max_length=255, description="The agents' ECS service.")
    agent_log_group: str = Field(
        min_length=1, max_length=512, description="The agents' CloudWatch log group."
    )


class AgentServiceConfig(AgentService):
    """An agent service as an environment lists it: its identity and, optionally, its own sections."""

    detection: DetectionConfig | None = Field(
        default=None, description="This service's signals and alarms (none: the environment's detection)."
    )
    tts_reach: TtsReachSection | None = Field(
        default=None, description="This service's responder (none: the environment's tts_reach)."
    )
    drainer: DrainerSection | None = Field(
        default=None, description="This service's drainer (none: the environment's drainer)."
    )

    @property
    def identity(self) -> AgentService:
        """What the shared functions are told about the service (the reaper's deployment hold)."""
        return AgentService.model_validate(self.model_dump(include=set(AgentService.model_fields)))


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


def distinct_names(services: Sequence[AgentService]) -> None:
    """Each service's name is in its resources' names: two alike would collide at deploy."""
    names = [service.name for service in services]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"agent service names must differ: {', '.join(repeated)} used more than once")
