"""An environment's ``drills`` section, and the names the construct's AWS FIS experiment templates
and ``lkfr drill --via fis`` share: the tags that say which environment, service and fault a
template drills, and the FIS action for each fault FIS has.

FIS has CPU stress (``aws:ecs:task-cpu-stress``) for ``cpu-starved`` and network latency
(``aws:ecs:task-network-latency``, toward the TTS provider's hosts) for ``tts-silence``; nothing
for ``abandoned-session``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from pydantic import Field, model_validator

from fleet_remediation.contract.agent_services import AgentServiceConfig
from fleet_remediation.contract.drill_schedule import DrillSchedule
from fleet_remediation.contract.drills import DrillFault
from fleet_remediation.contract.models import StrictModel

FIS_ACTIONS = {
    DrillFault.CPU_STARVED: "aws:ecs:task-cpu-stress",
    DrillFault.TTS_SILENCE: "aws:ecs:task-network-latency",
}
# The tags on each experiment template: `lkfr drill --via fis` finds its template by them.
TEMPLATE_ENVIRONMENT_TAG = "livekit-fleet-drill:environment"
TEMPLATE_SERVICE_TAG = "livekit-fleet-drill:agent-service"
TEMPLATE_FAULT_TAG = "livekit-fleet-drill:fault"
# The tag `lkfr drill` puts on the experiment it starts: its drill id, how a lost reply is re-read.
EXPERIMENT_DRILL_TAG = "livekit-fleet-drill:id"
# FIS takes an action parameter of at most 1,024 characters (ExperimentTemplateActionParameter).
FIS_PARAMETER_MAX = 1024


class FisDrills(StrictModel):
    """The construct's AWS FIS experiment templates for this environment's agent services (the FIS
    path of `lkfr drill`; the task definition needs what the drill page lists)."""

    minutes: int = Field(
        default=15,
        ge=1,
        le=60,
        description="How long each experiment's fault lasts: FIS ends it then, whatever happens to "
        "the command that started it.",
    )
    tts_provider_hosts: tuple[str, ...] = Field(
        default=(),
        description="Domain names, IPv4 addresses or CIDR blocks of the TTS provider: a network-latency "
        "template toward them for tts-silence (none: no such template).",
    )
    tts_delay_milliseconds: int = Field(
        default=8000,
        ge=1,
        le=60000,
        description="The latency added toward the TTS provider: longer than the agents' first-audio "
        "timeout, so the first audio frame is late on every response.",
    )
    guard_missing_fraction: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="The safety stop: every experiment stops when this share of the service's "
        "responses fleet-wide lack a first audio frame over 5 minutes (one task of three or more "
        "cannot reach one half alone).",
    )

    @model_validator(mode="after")
    def _hosts_fit_one_parameter(self) -> FisDrills:
        for host in self.tts_provider_hosts:
            if not host or any(not (c.isalnum() or c in ".-/:") for c in host):
                raise ValueError(f"tts_provider_hosts: {host!r} is not a domain name, address or CIDR block")
        if len(",".join(self.tts_provider_hosts)) > FIS_PARAMETER_MAX:
            raise ValueError(f"tts_provider_hosts: more than {FIS_PARAMETER_MAX} characters joined")
        return self

    def faults(self) -> list[DrillFault]:
        """The faults this environment gets a template for."""
        return [DrillFault.CPU_STARVED, *([DrillFault.TTS_SILENCE] if self.tts_provider_hosts else [])]


class DrillSection(StrictModel):
    """`lkfr drill`: whether this environment may be drilled (a drill fakes a failure on one task)."""

    enabled: bool = Field(
        default=False, description="Name this environment for drills; `lkfr drill` refuses every other."
    )
    fis: FisDrills | None = Field(
        default=None,
        description="AWS FIS experiment templates for the drills FIS can fake (none: the hook path only).",
    )
    schedule: DrillSchedule | None = Field(
        default=None,
        description="A drill on a schedule: the scheduled-drill function, its rule and role (none: "
        "no such resource).",
    )

    @model_validator(mode="after")
    def _fis_only_where_named(self) -> DrillSection:
        if self.fis is not None and not self.enabled:
            raise ValueError(
                "fis: experiment templates need drills.enabled (the environment named for drills)"
            )
        if self.schedule is not None and not self.enabled:
            raise ValueError(
                "schedule: a scheduled drill needs drills.enabled (the environment named for drills)"
            )
        return self


ServiceT = TypeVar("ServiceT", bound=AgentServiceConfig)


def drilled_service(schedule: DrillSchedule | None, services: Sequence[ServiceT]) -> ServiceT:
    """The agent service a scheduled drill drills: the one it names, else the only one."""
    names = [service.name for service in services]
    wanted = schedule.agent_service if schedule is not None else None
    if wanted is None and (schedule is None or len(names) == 1):
        return services[0]
    if wanted not in names:
        raise ValueError(f"drills.schedule.agent_service must name one of {', '.join(names)}")
    return services[names.index(wanted)]
