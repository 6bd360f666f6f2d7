"""Incident ids: one id threads an alarm's ALARM and OK, the functions' runs and messages about it
(the responder's verdict, the suspect-worker event, the drainer's cordon), and a chat thread."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import UTC, datetime

from fleet_remediation.contract.naming import FunctionId, FunctionName
from fleet_remediation.core.routing import AlarmStateChange


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def alarm_incident_id(environment: str, alarm_name: str, alarm_timestamp: datetime) -> str:
    """The incident an alarm's ALARM transition opened (its OK transition closes the same one)."""
    return f"{environment}.{alarm_name}.{_stamp(alarm_timestamp)}"


def transition_incident_id(environment: str, change: AlarmStateChange) -> str:
    """The incident of an alarm state change: an ALARM opens one; the OK that follows (whose
    previous state is that ALARM) belongs to it."""
    opened = change.state.timestamp
    previous = change.previous_state
    if change.state.value != "ALARM" and previous is not None and previous.value == "ALARM":
        opened = previous.timestamp
    return alarm_incident_id(environment, change.alarm_name, opened)


def run_incident_id(
    environment: str, function: FunctionId, moment: datetime, service: str | None = None
) -> str:
    """An incident no alarm opened: a scheduled run (``moment`` = the schedule event's time, the
    same on Lambda's retries of it) or a manual one; a service's function's runs are its own."""
    runner = f"{service}-{function.slug}" if service else function.slug
    return f"{environment}.{runner}.{_stamp(moment)}"


def subject_incident_id(environment: str, function: FunctionName, topic: str, items: Iterable[str]) -> str:
    """An incident named by what it is about (e.g. the set of rooms a dry run would reap): the same
    set next time is the same incident, so it is announced once, not on every tick."""
    digest = hashlib.sha256("\n".join(sorted(items)).encode()).hexdigest()[:12]
    return f"{environment}.{function.slug}.{topic}-{digest}"
