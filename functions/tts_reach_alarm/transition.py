"""What the responder handles: an alarm state over a window, a scheduled re-check, or a manual ALARM
analysis; routed by the shared router and verified at the door before anything is read."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import Field, StrictInt

from fleet_remediation.contract.detection import DetectionConfig
from fleet_remediation.contract.events import TimeWindow
from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.core.door import Door, EventTime, UntrustedEventError
from fleet_remediation.core.errors import InvalidEventError
from fleet_remediation.core.report_model import Trigger
from fleet_remediation.core.routing import (
    AlarmRoute,
    AlarmStateChange,
    ManualEvent,
    ManualRoute,
    Routed,
    Router,
    ScheduleRoute,
)

# Alarms are evaluated after their minutes close and logs arrive late: the window reaches back further.
WINDOW_SLACK_MINUTES = 2
HANDLED_STATES = ("ALARM", "OK")
# How far back a manual analysis may look; an older incident is for ``lkfr replay``.
MANUAL_WINDOW_MAX_AGE = timedelta(days=14)


class TtsReachManualEvent(ManualEvent):
    """Run the ALARM analysis by hand, e.g. ``{"dry_run": true, "window_end": "2026-09-15T17:50:00Z"}``."""

    window_end: EventTime | None = None
    window_minutes: StrictInt | None = Field(default=None, ge=1, le=24 * 60)


@dataclass(frozen=True)
class Transition:
    """What to handle: an alarm state (ALARM or OK) over a window, or a manual ALARM analysis."""

    state: str
    window: TimeWindow
    change: AlarmStateChange | None
    reach_datapoints: tuple[float, ...] = ()
    manual: TtsReachManualEvent | None = None
    # A scheduled re-check of the incident the TTS page holds open (its ALARM ``change`` is read
    # from the alarm's state): the window ends now.
    recheck: bool = False
    # Since when the page a re-check belongs to has been in ALARM.
    alarm_since: datetime | None = None

    def once_key(self, action: str) -> dict[str, str]:
        assert self.change is not None  # manual runs are deliberate and not deduplicated
        return {
            "alarm": self.change.alarm_name,
            "state": self.change.state.value,
            "timestamp": self.change.state.timestamp.isoformat(),
            "action": action,
        }


def analysis_window_minutes(detection: DetectionConfig) -> int:
    return detection.tts_reach_alarm.analysis_window_minutes + WINDOW_SLACK_MINUTES


def _recent_datapoints(change: AlarmStateChange) -> tuple[float, ...]:
    """The alarm's own datapoints (1 = a breaching window), from ``state.reasonData`` (a JSON
    string), if present."""
    raw = change.state.reason_data
    try:
        points = json.loads(raw).get("recentDatapoints", []) if raw else []
        return tuple(float(p) for p in points)
    except (ValueError, TypeError, AttributeError):
        return ()


def responder_router(settings: TtsReachSettings) -> Router[TtsReachManualEvent]:
    return Router(
        "tts_reach_alarm",
        [AlarmRoute({settings.alarm_name}), ScheduleRoute(), ManualRoute(TtsReachManualEvent)],
    )


def parse_transition(event: Any, settings: TtsReachSettings, door: Door) -> tuple[Trigger, Transition]:
    routed = responder_router(settings).route(event, door)
    if routed.manual is not None and routed.manual.window_end is not None:
        check_window_end(routed.manual.window_end, door)
    return routed.trigger, transition_of(routed, settings, door.now)


def check_window_end(window_end: datetime, door: Door) -> None:
    """A manual ``window_end`` within the door's bounds: not in the future beyond the clock skew,
    not older than ``MANUAL_WINDOW_MAX_AGE``."""
    try:
        door.check_time("window_end", window_end, int(MANUAL_WINDOW_MAX_AGE.total_seconds()))
    except UntrustedEventError as exc:
        raise InvalidEventError(
            f"{exc}: give a window_end within the last {MANUAL_WINDOW_MAX_AGE.days} days and not in the "
            "future, or leave it out for now (older logs: lkfr replay over exported logs)"
        ) from None


def transition_of(routed: Routed[Any], settings: TtsReachSettings, now: datetime) -> Transition:
    """What the routed event asks: an alarm state over the alarm's window, a re-check over the
    window ending now, or a manual ALARM analysis."""
    minutes = analysis_window_minutes(settings.detection)
    if routed.alarm is not None:
        change = routed.alarm
        end = change.state.timestamp.astimezone(UTC)
        window = TimeWindow(start=end - timedelta(minutes=minutes), end=end)
        return Transition(change.state.value, window, change, _recent_datapoints(change))
    manual = routed.manual
    if manual is None:  # the schedule: a re-check while the page stays in ALARM
        window = TimeWindow(start=now - timedelta(minutes=minutes), end=now)
        return Transition("ALARM", window, None, recheck=True)
    end = (manual.window_end or now).astimezone(UTC)
    window = TimeWindow(start=end - timedelta(minutes=manual.window_minutes or minutes), end=end)
    return Transition("ALARM", window, None, manual=manual)
