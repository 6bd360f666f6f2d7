"""The drainer's scheduled tick during the VAD alarm's ALARM (``worker_drainer.read.vad_alarm_tick``): the
alarm's state read through the real adapter from moto's CloudWatch, and from a loopback endpoint that
never answers (the read ends within its budget)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from devkit.aws_endpoints import AwsEndpoint, Behaviour
from devkit.fakes.drainer_world import (
    FUNCTION_ARN,
    alarm_event,
    offline_settings,
    put_page_stand_in,
    schedule_event,
)
from fleet_remediation.adapters.alarm_state import CloudWatchAlarmStates
from fleet_remediation.adapters.aws_clients import client_config
from fleet_remediation.contract.budgets import ALARM_STATE_READ
from fleet_remediation.contract.events import DRAINER_EVENT_AGES
from fleet_remediation.core import incidents
from fleet_remediation.core.notes import Noted
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import TriggerKind
from livekit_fleet_remediation.offline.eventbridge_events import door_on_arrival
from worker_drainer.decide.task_tags import incident_tag_value
from worker_drainer.events import route_drainer_event
from worker_drainer.read.vad_alarm_tick import during_vad_alarm
from worker_drainer.tell.incident_thread import trigger_incident

ENV = "it"
VAD_ALARM = "livekit-it-agents-vad-slow-inference"
SETTINGS = offline_settings(ENV)


def routed(event: dict[str, Any]) -> Any:
    """``event`` routed by the drainer the moment it was sent."""
    door = door_on_arrival(event, DRAINER_EVENT_AGES, FUNCTION_ARN, datetime.now(UTC))
    return route_drainer_event(event, SETTINGS, door)


@pytest.fixture
def cloudwatch(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    with mock_aws():
        client = boto3.client("cloudwatch", region_name="eu-west-1")
        put_page_stand_in(client, VAD_ALARM)
        yield client


def _tick(client: Any) -> tuple[Any, ReportBuilder]:
    """The tick, and the report with what it noted (as the pipeline records it)."""
    report = ReportBuilder("worker_drainer", "inv")
    parsed = routed(schedule_event())
    report.trigger = parsed.trigger
    noted = Noted()
    ticked = during_vad_alarm(parsed, CloudWatchAlarmStates(client), VAD_ALARM, noted)
    noted.record(report)
    return ticked, report


def test_a_tick_during_the_vad_alarm_starts_ladders_under_that_alarms_incident(cloudwatch: Any) -> None:
    cloudwatch.set_alarm_state(AlarmName=VAD_ALARM, StateValue="ALARM", StateReason="3 of 5 minutes")
    since = cloudwatch.describe_alarms(AlarmNames=[VAD_ALARM])["MetricAlarms"][0]["StateUpdatedTimestamp"]
    parsed, report = _tick(cloudwatch)
    assert parsed.start_new is True
    assert parsed.trigger.kind is TriggerKind.SCHEDULE
    assert report.trigger is not None
    assert report.trigger.detail["vad_alarm"].startswith("ALARM since ")
    assert parsed.alarm is not None
    assert parsed.alarm.alarm_name == VAD_ALARM
    # The same incident id as the ALARM transition's own run: the messages share one thread.
    expected = incident_tag_value(incidents.alarm_incident_id(ENV, VAD_ALARM, since))
    assert trigger_incident(parsed, ENV, "agents", since) == expected
    assert report.errors == []


@pytest.mark.parametrize("state", ["OK", "INSUFFICIENT_DATA"])
def test_a_tick_outside_the_alarm_only_advances(cloudwatch: Any, state: str) -> None:
    cloudwatch.set_alarm_state(AlarmName=VAD_ALARM, StateValue=state, StateReason="test")
    parsed, report = _tick(cloudwatch)
    assert parsed.start_new is False
    assert parsed.alarm is None
    assert report.errors == []


def test_a_missing_alarm_only_advances(cloudwatch: Any) -> None:
    cloudwatch.delete_alarms(AlarmNames=[VAD_ALARM])
    parsed, _ = _tick(cloudwatch)
    assert parsed.start_new is False


def test_an_alarm_event_is_taken_as_it_comes_without_a_read(cloudwatch: Any) -> None:
    cloudwatch.set_alarm_state(AlarmName=VAD_ALARM, StateValue="ALARM", StateReason="test")
    ok = routed(alarm_event("OK"))
    # An OK transition never starts ladders, whatever the state read now would say.
    assert during_vad_alarm(ok, CloudWatchAlarmStates(None), ENV, Noted()) is ok


def test_a_silent_cloudwatch_ends_within_the_budget_as_a_report_error() -> None:
    with AwsEndpoint() as endpoint:
        endpoint.behave(Behaviour.SILENT)
        client = boto3.client(
            "cloudwatch",
            region_name="eu-west-1",
            endpoint_url=endpoint.url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=client_config(ALARM_STATE_READ),
        )
        started = time.monotonic()
        parsed, report = _tick(client)
        elapsed = time.monotonic() - started
    assert parsed.start_new is False
    assert [e.code for e in report.errors] == ["AwsApiError"]
    assert elapsed <= ALARM_STATE_READ.worst_case_seconds + 0.5
    assert endpoint.requests == ALARM_STATE_READ.attempts
