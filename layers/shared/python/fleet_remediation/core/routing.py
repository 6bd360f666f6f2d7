"""Recognise what invoked a function: a schedule, a manual invoke, an alarm state change or a
suspect-worker event, each verified at the door (``core.door``) before anything is read.

Each function routes with a table of route classes (``Router``): the first route whose
``is_handling`` accepts the event parses and verifies it into a ``Routed`` trigger; a refusal is a
typed ``InvalidEventError`` saying what was wrong."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, field_validator

from fleet_remediation.contract.events import SuspectWorkerDetail, bounded_json
from fleet_remediation.contract.models import describe_validation_error, excerpt
from fleet_remediation.contract.naming import ALARM_DETAIL_TYPE, SCHEDULE_DETAIL_TYPE, SCHEDULE_SOURCE
from fleet_remediation.core.door import Door, Envelope, EventTime, UntrustedEventError, read_detail
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


# CloudWatch's limits: alarm names 255 characters, a state's reason 1023 and its data 4000; a
# composite alarm's rule 10240 (its configuration, with the description, fits in the cap).
ALARM_NAME_MAX_CHARS = 255
ALARM_STATE_MAX_CHARS = 32
ALARM_REASON_MAX_CHARS = 1023
ALARM_REASON_DATA_MAX_CHARS = 4000
ALARM_CONFIGURATION_MAX_CHARS = 16_384
ALARM_STATES = ("ALARM", "OK", "INSUFFICIENT_DATA")
ALARM_SOURCE = "aws.cloudwatch"


class AlarmState(BaseModel):
    value: str = Field(max_length=ALARM_STATE_MAX_CHARS)
    reason: str = Field(default="", max_length=ALARM_REASON_MAX_CHARS)
    reason_data: str | None = Field(default=None, alias="reasonData", max_length=ALARM_REASON_DATA_MAX_CHARS)
    timestamp: EventTime


class AlarmStateChange(BaseModel):
    """The ``detail`` of an EventBridge "CloudWatch Alarm State Change" event."""

    alarm_name: str = Field(alias="alarmName", max_length=ALARM_NAME_MAX_CHARS)
    state: AlarmState
    previous_state: AlarmState | None = Field(default=None, alias="previousState")
    configuration: dict[str, Any] = Field(default_factory=dict)

    @field_validator("configuration")
    @classmethod
    def _configuration_is_bounded(cls, value: dict[str, Any]) -> dict[str, Any]:
        return bounded_json(value, ALARM_CONFIGURATION_MAX_CHARS)


ManualT = TypeVar("ManualT", bound=ManualEvent)


def is_eventbridge(event: Any) -> bool:
    return isinstance(event, dict) and "detail-type" in event and "source" in event


def parse_manual(event: Any, model: type[ManualT]) -> ManualT:
    if not isinstance(event, dict):
        raise InvalidEventError(f"event must be a JSON object, got {type(event).__name__}")
    try:
        return model.model_validate(event)
    except ValidationError as exc:
        raise InvalidEventError(f"invalid manual event: {describe_validation_error(exc)}") from exc


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

    def parse(self, event: Any, door: Door) -> Routed[ManualT]: ...


class EventBridgeRoute:
    detail_type: str

    def is_handling(self, event: Any) -> bool:
        return is_eventbridge(event) and event.get("detail-type") == self.detail_type


class ScheduleRoute(EventBridgeRoute):
    """A schedule rule of ours: from ``aws.events``, naming one rule in our account and region, with
    an empty detail (what EventBridge's schedules send)."""

    detail_type = SCHEDULE_DETAIL_TYPE

    def parse(self, event: Any, door: Door) -> Routed[Any]:
        envelope = door.admit(event, SCHEDULE_SOURCE, door.max_event_age.schedule_seconds)
        ours = door.arn("events", "rule/")
        if len(envelope.resources) != 1 or not envelope.resources[0].startswith(ours):
            raise UntrustedEventError(
                f"a schedule event names one rule of ours ({ours}...), not {excerpt(envelope.resources)}"
            )
        if envelope.detail:
            raise InvalidEventError(f"a schedule event's detail is empty, not {excerpt(envelope.detail)}")
        rule = envelope.resources[0].removeprefix(ours)
        trigger = Trigger(
            kind=TriggerKind.SCHEDULE, source=excerpt(rule), detail={"time": envelope.time.isoformat()}
        )
        return Routed(trigger)


class AlarmRoute(EventBridgeRoute):
    """State changes of the named alarms only (another alarm's event is an ``UnknownAlarm`` error),
    from CloudWatch, about the alarm of that name in our account and region, in a known state."""

    detail_type = ALARM_DETAIL_TYPE

    def __init__(self, alarm_names: Collection[str]) -> None:
        self.alarm_names = alarm_names

    def parse(self, event: Any, door: Door) -> Routed[Any]:
        max_age = door.max_event_age.alarm_seconds
        envelope = door.admit(event, ALARM_SOURCE, max_age)
        change = read_detail(envelope, AlarmStateChange)
        if change.alarm_name not in self.alarm_names:
            raise UnknownAlarmError(
                f"handles only {', '.join(sorted(self.alarm_names))}, not {excerpt(change.alarm_name)}",
                resource=excerpt(change.alarm_name),
            )
        check_alarm_arn(envelope, change.alarm_name, door)
        door.check_time("the alarm state's timestamp", change.state.timestamp, max_age)
        for state in (change.state, change.previous_state):
            if state is not None:
                check_alarm_state(state, door)
        return Routed(alarm_trigger(change), alarm=change)


def check_alarm_arn(envelope: Envelope, alarm_name: str, door: Door) -> None:
    expected = door.arn("cloudwatch", f"alarm:{alarm_name}")
    if envelope.resources != [expected]:
        raise UntrustedEventError(
            f"the alarm's ARN {excerpt(envelope.resources)} is not {excerpt(expected)}",
            resource=excerpt(alarm_name),
        )


def check_alarm_state(state: AlarmState, door: Door) -> None:
    if state.value not in ALARM_STATES:
        raise InvalidEventError(
            f"unknown alarm state {excerpt(state.value)}: CloudWatch's are {', '.join(ALARM_STATES)}"
        )
    door.check_time("an alarm state's timestamp", state.timestamp)


class ManualRoute(Generic[ManualT]):
    """Anything that is not an EventBridge event is a manual invoke, validated strictly."""

    def __init__(self, model: type[ManualT]) -> None:
        self.model = model

    def is_handling(self, event: Any) -> bool:
        return not is_eventbridge(event)

    def parse(self, event: Any, door: Door) -> Routed[ManualT]:
        manual = parse_manual(event, self.model)
        return Routed(manual_trigger(manual), manual=manual)


class Router(Generic[ManualT]):
    def __init__(self, function: str, routes: Sequence[Route[ManualT]]) -> None:
        self.function = function
        self.routes = routes

    def route(self, event: Any, door: Door) -> Routed[ManualT]:
        """The first route that handles ``event``, verified at ``door``; raises ``InvalidEventError``."""
        for route in self.routes:
            if route.is_handling(event):
                return route.parse(event, door)
        detail_type = event.get("detail-type") if isinstance(event, dict) else None
        raise InvalidEventError(f"{self.function} does not handle '{excerpt(detail_type)}' events")
