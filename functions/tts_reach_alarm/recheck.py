"""A scheduled re-check while the page stays in ALARM: whether its incident is open and due a look
this tick, and the level of the look's test."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.stages import Settled
from tts_reach_alarm.dependencies import TtsReachDependencies
from tts_reach_alarm.investigation import recheck_alpha, recheck_due
from tts_reach_alarm.transition import Transition


def open_incident(transition: Transition, deps: TtsReachDependencies) -> Transition | Settled:
    """A re-check belongs to the page's ALARM while it lasts (its once-keys and incident id are
    that ALARM's); settled when the page is not in ALARM or its state cannot be read."""
    if not transition.recheck:
        return transition
    name = deps.settings.alarm_name
    try:
        reading = deps.alarm_states.current(name) if deps.alarm_states else None
    except RemediationError as exc:
        return Settled(f"{name}: its state could not be read", error=exc)
    if reading is None or reading.value != "ALARM":
        state = reading.value if reading is not None else "not found"
        return Settled(f"{name} is {state}: no open incident")
    tts = deps.settings.tts_reach
    minutes_open = (transition.window.end - reading.since).total_seconds() / 60
    if not recheck_due(minutes_open, tts.recheck_minutes, tts.recheck_max_minutes):
        detail = {"tts_alarm": alarm_since(reading.since)}
        return Settled(
            f"{name} in ALARM for {minutes_open:.0f} min: re-checks back off, no look this tick",
            trigger_detail=detail,
        )
    return dataclasses.replace(transition, change=reading.change(name), alarm_since=reading.since)


def alarm_since(since: datetime) -> str:
    return f"ALARM since {since.isoformat()}"


def recheck_level(transition: Transition, settings: TtsReachSettings) -> float | None:
    """A re-check's level: the how-many-th look at the incident it is (the ALARM's own analysis uses
    the configured alpha)."""
    if not transition.recheck or transition.change is None:
        return None
    minutes_open = (transition.window.end - transition.change.state.timestamp).total_seconds() / 60
    look = max(1, int(minutes_open // max(1, settings.tts_reach.recheck_minutes)))
    return recheck_alpha(settings.detection.tts_reach_alarm.concentration_alpha, look)
