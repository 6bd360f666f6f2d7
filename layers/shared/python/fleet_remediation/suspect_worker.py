"""The suspect-worker event: tts_reach_alarm puts it on EventBridge, the worker drainer consumes it.

Envelope: ``source`` = ``EVENT_SOURCE``, ``detail-type`` = ``SUSPECT_WORKER_DETAIL_TYPE``, ``detail`` =
``SuspectWorkerDetail`` as JSON.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import boto3
from pydantic import BaseModel, ConfigDict, Field

from fleet_remediation.errors import AwsApiError, aws_api_errors
from fleet_remediation.triggers import EVENT_SOURCE, SUSPECT_WORKER_DETAIL_TYPE

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient


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


def task_id_from_log_stream(log_stream: str) -> str:
    """The awslogs driver names streams ``prefix/container/task-id``."""
    return log_stream.rsplit("/", 1)[-1]


class EventPublisher(Protocol):
    def put_suspect_worker(self, detail: SuspectWorkerDetail) -> str: ...


class EventBridgePublisher:
    def __init__(self, event_bus_name: str, client: EventBridgeClient | None = None) -> None:
        self.event_bus_name = event_bus_name
        self._client = client or boto3.client("events")

    def put_suspect_worker(self, detail: SuspectWorkerDetail) -> str:
        entry: Any = {
            "Source": EVENT_SOURCE,
            "DetailType": SUSPECT_WORKER_DETAIL_TYPE,
            "Detail": json.dumps(detail.model_dump(mode="json")),
            "EventBusName": self.event_bus_name,
        }
        with aws_api_errors("EventBridge PutEvents", self.event_bus_name):
            response = self._client.put_events(Entries=[entry])
        result = response["Entries"][0]
        if response.get("FailedEntryCount", 0) or "EventId" not in result:
            code = result.get("ErrorCode", "Unknown")
            raise AwsApiError(
                f"EventBridge rejected the suspect-worker event: {code} {result.get('ErrorMessage', '')}",
                aws_code=code,
                resource=self.event_bus_name,
            )
        return result["EventId"]
