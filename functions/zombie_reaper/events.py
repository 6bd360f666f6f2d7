"""What invokes the reaper: the schedule, any agent service's VAD alarm, or a manual invoke (with an
optional stricter max age); routed by the shared router."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import Field, StrictInt

from fleet_remediation.contract.naming import vad_alarm_name
from fleet_remediation.contract.policies import MIN_MANUAL_MAX_AGE_SECONDS
from fleet_remediation.core.errors import InvalidEventError
from fleet_remediation.core.routing import AlarmRoute, ManualEvent, ManualRoute, Routed, Router, ScheduleRoute


class ReaperManualEvent(ManualEvent):
    max_age_seconds: StrictInt | None = Field(
        default=None,
        ge=MIN_MANUAL_MAX_AGE_SECONDS,
        description="Stricter max age for this run (a JSON integer, at least a minute).",
    )


def reaper_router(environment_name: str, services: Iterable[str]) -> Router[ReaperManualEvent]:
    """The schedule, any agent service's VAD alarm (a starving worker is often a zombie's doing;
    rooms are LiveKit-wide, so any service's alarm is the reaper's), or a manual invoke."""
    alarms = {vad_alarm_name(environment_name, service) for service in services}
    return Router("the reaper", [ScheduleRoute(), AlarmRoute(alarms), ManualRoute(ReaperManualEvent)])


@dataclass(frozen=True)
class ReaperEvent:
    routed: Routed[Any]
    # A manual run's stricter max age, in seconds.
    max_age_override: int | None

    @classmethod
    def of(cls, routed: Routed[Any], max_age_minutes: int) -> ReaperEvent:
        """A manual run may only be stricter than the configured max age."""
        override = routed.manual.max_age_seconds if routed.manual else None
        if override is not None and override >= max_age_minutes * 60:
            raise InvalidEventError(
                f"max_age_seconds={override} must be stricter than the configured "
                f"{max_age_minutes * 60}s (max_age_minutes={max_age_minutes})"
            )
        return cls(routed, override)
