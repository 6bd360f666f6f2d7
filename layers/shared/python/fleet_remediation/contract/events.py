"""The suspect-worker event: tts_reach_alarm puts it on EventBridge, the worker drainer consumes it.

Envelope: ``source`` = ``EVENT_SOURCE``, ``detail-type`` = ``SUSPECT_WORKER_DETAIL_TYPE``, ``detail`` =
``SuspectWorkerDetail`` as JSON.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class TimeWindow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    start: datetime
    end: datetime


class SuspectWorkerDetail(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    environment: str
    log_stream: str = Field(min_length=1, description="awslogs stream, e.g. agent/<container>/<task id>.")
    task_id: str = Field(min_length=1, description="ECS task id: the stream name's last segment.")
    alarm_name: str
    p_value: float = Field(ge=0, le=1)
    window: TimeWindow
    evidence: dict[str, Any] = Field(default_factory=dict)
    incident_id: str | None = Field(
        default=None,
        description="The TTS-reach alarm's incident (core.messages.transition_incident_id): the drainer "
        "threads its messages under it.",
    )
