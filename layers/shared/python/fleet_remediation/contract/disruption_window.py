"""When the drainer and the reaper may start new disruption (a reap, a cordon, a stop).

Outside the window they only tell what they would have done ("held: …"); steps that finish or roll
back an action already begun continue (complete or compensate). A manual run may override.
"""

from __future__ import annotations

from datetime import datetime, time
from enum import StrEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator

from fleet_remediation.contract.models import StrictModel


class Weekday(StrEnum):
    MON = "mon"
    TUE = "tue"
    WED = "wed"
    THU = "thu"
    FRI = "fri"
    SAT = "sat"
    SUN = "sun"


WEEK = tuple(Weekday)


class DisruptionWindow(StrictModel):
    """Days and hours (local to ``timezone``) when new disruption may start. ``end`` before ``start``
    spans midnight (22:00-06:00 starts on the listed day and ends the next morning)."""

    days: tuple[Weekday, ...] = Field(default=WEEK, min_length=1, description="Days the window opens on.")
    start: time = Field(description="Local time the window opens, e.g. 09:00.")
    end: time = Field(description="Local time the window closes, e.g. 18:00.")
    timezone: str = Field(default="UTC", description="An IANA time zone, e.g. Asia/Seoul.")

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"{value!r} is not an IANA time zone (e.g. Europe/Berlin, Asia/Seoul)") from exc
        return value

    @field_validator("end")
    @classmethod
    def _not_empty(cls, value: time, info: object) -> time:
        start = getattr(info, "data", {}).get("start")
        if start is not None and value == start:
            raise ValueError("end equals start: the window would never open (omit it to allow any time)")
        return value

    def allows(self, now: datetime) -> bool:
        """Whether ``now`` (timezone-aware) is inside the window."""
        local = now.astimezone(ZoneInfo(self.timezone))
        clock, day = local.time(), WEEK[local.weekday()]
        if self.start < self.end:
            return day in self.days and self.start <= clock < self.end
        previous_day = WEEK[(local.weekday() - 1) % 7]
        return (day in self.days and clock >= self.start) or (previous_day in self.days and clock < self.end)

    def describe(self) -> str:
        days = ", ".join(d.value.title() for d in self.days) if self.days != WEEK else "every day"
        return f"{days} {self.start:%H:%M}-{self.end:%H:%M} {self.timezone}"


def outside_window(window: DisruptionWindow | None, now: datetime) -> str | None:
    """Why new disruption is held now, or None when it may start."""
    if window is None or window.allows(now):
        return None
    return f"outside the disruption window ({window.describe()})"
