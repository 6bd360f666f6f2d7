"""The suspect-worker event: tts_reach_alarm puts it on EventBridge, the worker drainer consumes it.

Envelope: ``source`` = ``EVENT_SOURCE``, ``detail-type`` = ``SUSPECT_WORKER_DETAIL_TYPE``, ``detail`` =
``SuspectWorkerDetail`` as JSON.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# The drainer acts on a suspect-worker event only while its window ended at most this long ago (the
# responder runs within a minute of the alarm; late deliveries of a stale accusation are refused),
# and never on a window that ends in the future beyond this clock skew.
SUSPECT_EVENT_MAX_AGE_SECONDS = 600
SUSPECT_EVENT_MAX_SKEW_SECONDS = 60


class TimeWindow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    start: datetime
    end: datetime


class SuspectWorkerDetail(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    environment: str = Field(max_length=32)
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
        description="The TTS-reach alarm's incident (core.incidents.transition_incident_id): the drainer "
        "threads its messages under it.",
    )
