"""The events the functions take from EventBridge, and how old each may be.

The suspect-worker event: tts_reach_alarm puts it on EventBridge, the worker drainer consumes it.
Envelope: ``source`` = ``EVENT_SOURCE``, ``detail-type`` = ``SUSPECT_WORKER_DETAIL_TYPE``,
``resources`` empty, ``detail`` = ``SuspectWorkerDetail`` as JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

# How old an event may be when a function takes it, per route (seconds). The same numbers are the
# EventBridge targets' max_event_age (the CDK constructs read them from here): an event EventBridge
# would have dropped is refused at the door, one it still delivers is not.
ALARM_EVENT_MAX_AGE_SECONDS = 3600
# The responder runs within a minute of the alarm; a late delivery of a stale accusation is refused.
SUSPECT_EVENT_MAX_AGE_SECONDS = 600
REAPER_SCHEDULE_MAX_AGE_SECONDS = 600
DRAINER_SCHEDULE_MAX_AGE_SECONDS = 120
# A weekly drill late by more than this is not the drill it was scheduled as (nobody is watching).
DRILL_SCHEDULE_MAX_AGE_SECONDS = 300
# Lambda's own queue of asynchronous invocations (its retries included), for every function: the
# time an event waits there counts against its route's age above.
ASYNC_INVOKE_MAX_EVENT_AGE_SECONDS = 3600
# EventBridge stamps ``time`` by its clock and ours may differ: an event's time (or a window's end)
# may lie this far in the future, and an event be this much older than its route allows.
EVENT_CLOCK_SKEW_SECONDS = 60


@dataclass(frozen=True)
class EventAges:
    """One function's maximum event age per EventBridge route, in seconds."""

    schedule_seconds: int
    alarm_seconds: int = ALARM_EVENT_MAX_AGE_SECONDS
    suspect_worker_seconds: int = SUSPECT_EVENT_MAX_AGE_SECONDS


REAPER_EVENT_AGES = EventAges(schedule_seconds=REAPER_SCHEDULE_MAX_AGE_SECONDS)
DRAINER_EVENT_AGES = EventAges(schedule_seconds=DRAINER_SCHEDULE_MAX_AGE_SECONDS)
DRILL_EVENT_AGES = EventAges(schedule_seconds=DRILL_SCHEDULE_MAX_AGE_SECONDS)


def responder_event_ages(recheck_minutes: int) -> EventAges:
    """The responder's re-check tick may wait one period: the next tick replaces it (0: no tick)."""
    return EventAges(schedule_seconds=60 * recheck_minutes)


# An ECS task id: 32 hex digits (a UUID without dashes on current ARNs; with dashes on older ones).
ECS_TASK_ID_PATTERN = r"[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
# The responder's evidence (counts, p-values, at most 50 job ids) fits well within this, as JSON.
EVIDENCE_MAX_CHARS = 8192


class TimeWindow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    start: datetime
    end: datetime


class SuspectWorkerDetail(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    environment: str = Field(max_length=32)
    agent_service: str = Field(
        max_length=24,
        description="The agent service whose responder names the worker; only its drainer acts.",
    )
    log_stream: str = Field(
        min_length=1, max_length=512, description="awslogs stream, e.g. agent/<container>/<task id>."
    )
    task_id: str = Field(min_length=1, max_length=64, description="ECS task id: the stream's last segment.")
    alarm_name: str = Field(max_length=255)
    p_value: float = Field(ge=0, le=1)
    window: TimeWindow
    evidence: dict[str, Any] = Field(default_factory=dict)
    incident_id: str | None = Field(
        default=None,
        max_length=512,
        description="The TTS-reach alarm's incident (core.incidents.transition_incident_id): the drainer "
        "threads its messages under it.",
    )

    @field_validator("evidence")
    @classmethod
    def _evidence_is_bounded(cls, value: dict[str, Any]) -> dict[str, Any]:
        return bounded_json(value, EVIDENCE_MAX_CHARS)


def bounded_json(value: dict[str, Any], max_chars: int) -> dict[str, Any]:
    """A free-form object of an event, refused when its JSON is longer than ``max_chars``."""
    size = len(json.dumps(value, default=str))
    if size > max_chars:
        raise ValueError(f"{size} characters as JSON, over the {max_chars} allowed")
    return value
