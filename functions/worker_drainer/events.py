"""What invokes the drainer: the reconcile schedule, the VAD alarm, a suspect-worker event from the
TTS responder, or a manual invoke (plan, drain, undrain); routed by the shared router."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

from fleet_remediation.contract.events import SuspectWorkerDetail
from fleet_remediation.contract.naming import tts_reach_alarm_name, vad_alarm_name
from fleet_remediation.contract.settings import DrainerSettings
from fleet_remediation.core.chat_actions import TOKEN_PATTERN
from fleet_remediation.core.door import Door
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
from fleet_remediation.core.suspect_route import SuspectExpectations, SuspectWorkerRoute
from worker_drainer.read.target_checks import TaskReference, parse_task_reference


class ChatOrigin(BaseModel):
    """A manual event the chat entry point sent for a pressed button: its token and the incident of
    the message that carried it (the run threads under it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    token: str = Field(pattern=TOKEN_PATTERN)
    incident: str = Field(min_length=1, max_length=256, pattern=r"^[A-Za-z0-9+=._:/@#-]+$")


class DrainerManualEvent(ManualEvent):
    """Strict: ``"dry_run": "false"`` (or 0, or "no") is an error, never an enforce."""

    dry_run: StrictBool = True
    action: Literal["plan", "drain", "undrain"] = "plan"
    task: str | None = Field(default=None, max_length=256)
    chat: ChatOrigin | None = None

    @field_validator("task")
    @classmethod
    def _task_is_an_id_or_an_arn(cls, value: str | None) -> str | None:
        if value is not None:
            parse_task_reference(value)
        return value

    @property
    def reference(self) -> TaskReference | None:
        return parse_task_reference(self.task) if self.task else None

    @model_validator(mode="after")
    def _task_for_drain(self) -> DrainerManualEvent:
        if self.action != "plan" and not self.task:
            raise ValueError(f"action '{self.action}' needs 'task' (a task id or ARN)")
        if self.action == "plan" and self.task:
            raise ValueError("action 'plan' takes no 'task'")
        if self.chat is not None and (self.action == "plan" or self.dry_run):
            raise ValueError("a chat request only drains or undrains, for real")
        return self


@dataclass(frozen=True)
class DrainerTrigger:
    """The routed event and what it allows: ``start_new`` ladders (an ALARM, a suspect worker, a
    manual plan) or only advancing the ones in progress (the schedule, an alarm's OK)."""

    trigger: Trigger
    start_new: bool
    manual: DrainerManualEvent | None = None
    suspect: SuspectWorkerDetail | None = None
    # The VAD alarm's state change: the incident the run belongs to.
    alarm: AlarmStateChange | None = None
    # The tasks of a group event seen by this run (task ids): their TTS cordons are undone.
    group_members: frozenset[str] = frozenset()


def drainer_router(settings: DrainerSettings) -> Router[DrainerManualEvent]:
    """A suspect-worker event must be what our own service's responder sends (``core.suspect_route``)."""
    environment, service = settings.environment_name, settings.agent_service
    expect = SuspectExpectations(
        environment=environment,
        agent_service=service,
        alarm_name=tts_reach_alarm_name(environment, service),
        alpha=settings.tts_reach_alarm.concentration_alpha,
        log_stream_for=settings.log_stream_for,
    )
    return Router(
        "the worker drainer",
        [
            ScheduleRoute(),
            AlarmRoute({vad_alarm_name(environment, service)}),
            SuspectWorkerRoute(expect),
            ManualRoute(DrainerManualEvent),
        ],
    )


def route_drainer_event(event: Any, settings: DrainerSettings, door: Door) -> DrainerTrigger:
    return drainer_trigger(drainer_router(settings).route(event, door))


def drainer_trigger(routed: Routed[Any]) -> DrainerTrigger:
    """What the event allows: an ALARM, a suspect worker or a manual plan starts new ladders; the
    schedule and an alarm's OK or INSUFFICIENT_DATA only advance the ones in progress."""
    if routed.manual is not None:
        return DrainerTrigger(routed.trigger, routed.manual.action == "plan", manual=routed.manual)
    if routed.alarm is not None:
        return DrainerTrigger(routed.trigger, routed.alarm.state.value == "ALARM", alarm=routed.alarm)
    if routed.suspect is not None:
        return DrainerTrigger(routed.trigger, True, suspect=routed.suspect)
    return DrainerTrigger(routed.trigger, False)
