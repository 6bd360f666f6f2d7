"""The scheduled tick during the VAD alarm's ALARM: it may start ladders as the ALARM transition did.

The transition is one event. When it arrives, the worker's slow-VAD warnings may still be below the
attribution's rate (seed 000: 2.3/min at the 17:32 ALARM, 3.4/min five minutes later), and nothing
would look again until the next transition. So each tick reads the alarm's state; while it is ALARM
the tick attributes too, under every guardrail a transition has (caps, cooldowns, the fleet-wide
verdict, the kill switch and dry run: ``plan_ladder`` decides alike), and threads its messages
under the incident that ALARM transition opened."""

from __future__ import annotations

from fleet_remediation.adapters.alarm_state import AlarmStates
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.notes import Noted
from fleet_remediation.core.report_model import TriggerKind
from worker_drainer.events import DrainerTrigger

ALARM = "ALARM"


def during_vad_alarm(
    parsed: DrainerTrigger, states: AlarmStates, alarm_name: str, noted: Noted
) -> DrainerTrigger:
    """``parsed`` allowed to start ladders when it is a scheduled tick and the VAD alarm is in ALARM.
    An unreadable state is a report error and leaves the tick as it was (advance only)."""
    if parsed.trigger.kind is not TriggerKind.SCHEDULE:
        return parsed
    name = alarm_name
    try:
        reading = states.current(name)
    except RemediationError as exc:
        noted.error(exc)
        return parsed
    if reading is None or reading.value != ALARM:
        return parsed
    parsed.trigger.detail["vad_alarm"] = f"{ALARM} since {reading.since.isoformat()}"
    return DrainerTrigger(parsed.trigger, True, alarm=reading.change(name))
