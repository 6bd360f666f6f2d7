"""Recognise what invoked a function: a schedule, a manual invoke, an alarm state change or a
suspect-worker event. Parsing uses Powertools' event models; a malformed event is a typed error."""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar

from aws_lambda_powertools.utilities.parser import ValidationError, parse
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from pydantic import BaseModel, ConfigDict, Field

from fleet_remediation.config import describe_validation_error
from fleet_remediation.errors import InvalidEventError
from fleet_remediation.report import Trigger, TriggerKind

SCHEDULE_DETAIL_TYPE = "Scheduled Event"
ALARM_DETAIL_TYPE = "CloudWatch Alarm State Change"
SUSPECT_WORKER_DETAIL_TYPE = "LiveKit Suspect Worker"
EVENT_SOURCE = "livekit.fleet-remediation"


class ManualEvent(BaseModel):
    """Base of every function's manual event. A manual invoke without ``dry_run`` is a dry run."""

    model_config = ConfigDict(extra="forbid")

    dry_run: bool = True


class AlarmState(BaseModel):
    value: str
    reason: str = ""
    timestamp: datetime


class AlarmStateChange(BaseModel):
    """The ``detail`` of an EventBridge "CloudWatch Alarm State Change" event."""

    alarm_name: str = Field(alias="alarmName")
    state: AlarmState
    previous_state: AlarmState | None = Field(default=None, alias="previousState")
    configuration: dict[str, Any] = Field(default_factory=dict)


ManualT = TypeVar("ManualT", bound=ManualEvent)
DetailT = TypeVar("DetailT", bound=BaseModel)


def is_eventbridge(event: Any) -> bool:
    return isinstance(event, dict) and "detail-type" in event and "source" in event


def parse_eventbridge(event: dict[str, Any]) -> EventBridgeModel:
    try:
        return parse(event=event, model=EventBridgeModel)
    except ValidationError as exc:
        raise InvalidEventError(f"malformed EventBridge event: {describe_validation_error(exc)}") from exc


def parse_detail(envelope: EventBridgeModel, model: type[DetailT]) -> DetailT:
    try:
        return model.model_validate(envelope.detail)
    except ValidationError as exc:
        raise InvalidEventError(
            f"malformed '{envelope.detail_type}' detail: {describe_validation_error(exc)}"
        ) from exc


def parse_manual(event: Any, model: type[ManualT]) -> ManualT:
    if not isinstance(event, dict):
        raise InvalidEventError(f"event must be a JSON object, got {type(event).__name__}")
    try:
        return model.model_validate(event)
    except ValidationError as exc:
        raise InvalidEventError(f"invalid manual event: {describe_validation_error(exc)}") from exc


def schedule_trigger(envelope: EventBridgeModel) -> Trigger:
    rule = envelope.resources[0].split("/")[-1] if envelope.resources else None
    return Trigger(kind=TriggerKind.SCHEDULE, source=rule, detail={"time": envelope.time.isoformat()})


def alarm_trigger(change: AlarmStateChange) -> Trigger:
    return Trigger(
        kind=TriggerKind.ALARM,
        source=change.alarm_name,
        detail={"state": change.state.value, "since": change.state.timestamp.isoformat()},
    )


def manual_trigger(event: ManualEvent) -> Trigger:
    return Trigger(kind=TriggerKind.MANUAL, source="invoke", detail=event.model_dump(mode="json"))
