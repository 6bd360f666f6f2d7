"""Recognise what invoked a function: a schedule, a manual invoke, an alarm state change or a
suspect-worker event. Parsing uses Powertools' event models; a malformed event is a typed error.

Each function routes with a table of route classes (``Router``): the first route whose
``is_handling`` accepts the event parses it into a ``Routed`` trigger."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from aws_lambda_powertools.utilities.parser import ValidationError, parse
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from fleet_remediation.contract.events import SuspectWorkerDetail
from fleet_remediation.contract.models import describe_validation_error, excerpt
from fleet_remediation.contract.naming import (
    ALARM_DETAIL_TYPE,
    SCHEDULE_DETAIL_TYPE,
    SCHEDULE_SOURCE,
    SUSPECT_WORKER_DETAIL_TYPE,
)
from fleet_remediation.core.errors import InvalidEventError, UnknownAlarmError
from fleet_remediation.core.report_model import Trigger, TriggerKind

# The longest string any manual field may hold (a task ARN with a 255-character cluster name fits).
MANUAL_STRING_MAX_CHARS = 512


class ManualEvent(BaseModel):
    """Base of every function's manual event. A manual invoke without ``dry_run`` is a dry run.

    Strict where a loose reading would act: ``dry_run`` must be a JSON boolean (``"false"``, ``"no"``
    and ``0`` are errors, never enforcement); unknown keys are errors; every string field of every
    function's manual event is at most ``MANUAL_STRING_MAX_CHARS`` long."""

    model_config = ConfigDict(extra="forbid", str_max_length=MANUAL_STRING_MAX_CHARS)

    dry_run: StrictBool = True


# CloudWatch limits alarm names to 255 characters; its states are ALARM, OK and INSUFFICIENT_DATA.
ALARM_NAME_MAX_CHARS = 255
ALARM_STATE_MAX_CHARS = 32


class AlarmState(BaseModel):
    value: str = Field(max_length=ALARM_STATE_MAX_CHARS)
    reason: str = ""
    reason_data: str | None = Field(default=None, alias="reasonData")
    timestamp: datetime


class AlarmStateChange(BaseModel):
    """The ``detail`` of an EventBridge "CloudWatch Alarm State Change" event."""

    alarm_name: str = Field(alias="alarmName", max_length=ALARM_NAME_MAX_CHARS)
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
            f"malformed '{excerpt(envelope.detail_type)}' detail: {describe_validation_error(exc)}"
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
    return Trigger(
        kind=TriggerKind.SCHEDULE,
        source=None if rule is None else excerpt(rule),
        detail={"time": envelope.time.isoformat()},
    )


def alarm_trigger(change: AlarmStateChange) -> Trigger:
    return Trigger(
        kind=TriggerKind.ALARM,
        source=excerpt(change.alarm_name),
        detail={"state": change.state.value, "since": change.state.timestamp.isoformat()},
    )


def manual_trigger(event: ManualEvent) -> Trigger:
    return Trigger(kind=TriggerKind.MANUAL, source="invoke", detail=event.model_dump(mode="json"))


@dataclass(frozen=True)
class Routed(Generic[ManualT]):
    """What invoked the function: the report's trigger and the parsed payload of its kind."""

    trigger: Trigger
    manual: ManualT | None = None
    alarm: AlarmStateChange | None = None
    suspect: SuspectWorkerDetail | None = None


class Route(Protocol[ManualT]):
    def is_handling(self, event: Any) -> bool: ...

    def parse(self, event: Any) -> Routed[ManualT]: ...


class _EventBridgeRoute:
    detail_type: str

    def is_handling(self, event: Any) -> bool:
        return is_eventbridge(event) and event.get("detail-type") == self.detail_type


class ScheduleRoute(_EventBridgeRoute):
    detail_type = SCHEDULE_DETAIL_TYPE

    def parse(self, event: Any) -> Routed[Any]:
        envelope = parse_eventbridge(event)
        if envelope.source != SCHEDULE_SOURCE:
            raise InvalidEventError(
                f"a schedule event comes from {SCHEDULE_SOURCE}, not {excerpt(envelope.source)}"
            )
        return Routed(schedule_trigger(envelope))


class AlarmRoute(_EventBridgeRoute):
    """State changes of the named alarms only: another alarm's event is an ``UnknownAlarm`` error."""

    detail_type = ALARM_DETAIL_TYPE

    def __init__(self, alarm_names: Collection[str]) -> None:
        self.alarm_names = alarm_names

    def parse(self, event: Any) -> Routed[Any]:
        change = parse_detail(parse_eventbridge(event), AlarmStateChange)
        if change.alarm_name not in self.alarm_names:
            raise UnknownAlarmError(
                f"handles only {', '.join(sorted(self.alarm_names))}, not {excerpt(change.alarm_name)}",
                resource=excerpt(change.alarm_name),
            )
        return Routed(alarm_trigger(change), alarm=change)


class SuspectWorkerRoute(_EventBridgeRoute):
    detail_type = SUSPECT_WORKER_DETAIL_TYPE

    def parse(self, event: Any) -> Routed[Any]:
        suspect = parse_detail(parse_eventbridge(event), SuspectWorkerDetail)
        trigger = Trigger(
            kind=TriggerKind.SUSPECT_WORKER,
            source=suspect.alarm_name,
            detail={"log_stream": suspect.log_stream, "task_id": suspect.task_id, "p_value": suspect.p_value},
        )
        return Routed(trigger, suspect=suspect)


class ManualRoute(Generic[ManualT]):
    """Anything that is not an EventBridge event is a manual invoke, validated strictly."""

    def __init__(self, model: type[ManualT]) -> None:
        self.model = model

    def is_handling(self, event: Any) -> bool:
        return not is_eventbridge(event)

    def parse(self, event: Any) -> Routed[ManualT]:
        manual = parse_manual(event, self.model)
        return Routed(manual_trigger(manual), manual=manual)


class Router(Generic[ManualT]):
    def __init__(self, function: str, routes: Sequence[Route[ManualT]]) -> None:
        self.function = function
        self.routes = routes

    def route(self, event: Any) -> Routed[ManualT]:
        for route in self.routes:
            if route.is_handling(event):
                return route.parse(event)
        detail_type = event.get("detail-type") if isinstance(event, dict) else None
        raise InvalidEventError(f"{self.function} does not handle '{excerpt(detail_type)}' events")
