"""The door (pure): what the function's ARN makes of it, what it admits at the edges of its limits,
and that every forged case of the bad-input suite starts from an event the door admits, so that
each refusal there is the forgery's doing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devkit.fakes.drainer_world import CONTAINER, STREAM_PREFIX, offline_settings
from fleet_remediation.contract.events import (
    DRAINER_EVENT_AGES,
    EVENT_CLOCK_SKEW_SECONDS,
    REAPER_EVENT_AGES,
    SUSPECT_EVENT_MAX_AGE_SECONDS,
    EventAges,
    bounded_json,
    responder_event_ages,
)
from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.core.door import Door, UntrustedEventError
from fleet_remediation.core.errors import InvalidEventError
from fleet_remediation.core.routing import Router, UnknownAlarmError
from tests.door_corpus import (
    ACCOUNT,
    ENV,
    FOREIGN_REGION,
    FUNCTION_ARN,
    RESPONDER_AGES,
    ROUTES,
    SERVICE,
    Forged,
    Route,
    forged,
    iso,
    schedule_route,
)
from tts_reach_alarm.transition import responder_router
from worker_drainer.events import drainer_router
from zombie_reaper.events import reaper_router

NOW = datetime(2026, 12, 1, 7, 30, tzinfo=UTC)
SKEW = timedelta(seconds=EVENT_CLOCK_SKEW_SECONDS)
RESPONDER_SETTINGS = TtsReachSettings.model_validate(
    {
        "environment_name": ENV,
        "mode_parameter_name": "/m",
        "notification_topic_arn": "arn:aws:sns:eu-west-1:123456789012:t",
        "runbook_base_url": "https://runbooks.example.com/repo",
        "aws_region": "eu-west-1",
        "agent_log_group": "/agents",
        "idempotency_table_name": "once",
    }
)
ROUTERS: dict[str, tuple[Router[Any], EventAges]] = {
    "zombie_reaper": (reaper_router(ENV, [SERVICE]), REAPER_EVENT_AGES),
    "worker_drainer": (
        drainer_router(
            offline_settings(ENV, agent_log_stream_prefix=STREAM_PREFIX, agent_container_name=CONTAINER)
        ),
        DRAINER_EVENT_AGES,
    ),
    "tts_reach_alarm": (responder_router(RESPONDER_SETTINGS), RESPONDER_AGES),
}
CASES = [case for function in ROUTERS for case in forged(function)]


def route(function: str, event: Any, now: datetime = NOW, arn: str | None = FUNCTION_ARN) -> Any:
    router, ages = ROUTERS[function]
    return router.route(event, Door.for_invocation(arn, now, ages))


@pytest.mark.parametrize(
    "base", [pytest.param(r, id=f"{r.function}: {r.name}") for routes in ROUTES.values() for r in routes]
)
def test_each_route_admits_the_valid_event_its_forgeries_start_from(base: Route) -> None:
    assert route(base.function, base.good(NOW)).trigger is not None


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_each_forgery_is_refused_with_its_code(case: Forged) -> None:
    with pytest.raises(InvalidEventError) as refused:
        route(case.route.function, case.event(NOW))
    assert refused.value.code == case.code, refused.value.message
    assert len(refused.value.message) < 2_000


def test_the_functions_own_arn_names_its_partition_account_and_region() -> None:
    door = Door.for_invocation("arn:aws-cn:lambda:cn-north-1:210987654321:function:f", NOW, REAPER_EVENT_AGES)
    assert (door.partition, door.account, door.region) == ("aws-cn", "210987654321", "cn-north-1")
    assert door.arn("cloudwatch", "alarm:a") == "arn:aws-cn:cloudwatch:cn-north-1:210987654321:alarm:a"


@pytest.mark.parametrize("arn", [None, "", "local-function", "arn:aws:lambda:eu-west-1:1234:function:f"])
def test_without_the_functions_arn_every_eventbridge_event_is_refused_and_a_manual_one_is_not(
    arn: str | None,
) -> None:
    good = ROUTES["zombie_reaper"][0].good(NOW)
    with pytest.raises(UntrustedEventError, match="without the function's ARN"):
        route("zombie_reaper", good, arn=arn)
    assert route("zombie_reaper", {"dry_run": True}, arn=arn).manual is not None


def test_an_event_from_another_source_is_refused_naming_the_source_it_came_from_then_ours() -> None:
    good = ROUTES["zombie_reaper"][0].good(NOW)
    with pytest.raises(UntrustedEventError) as refused:
        route("zombie_reaper", {**good, "source": "evil.events"}, arn=FUNCTION_ARN)
    assert "event from evil.events, expected aws.events" in refused.value.message


def test_an_event_exactly_at_either_time_limit_is_admitted_and_a_second_beyond_is_not() -> None:
    schedule = schedule_route("zombie_reaper", REAPER_EVENT_AGES)
    oldest = NOW - timedelta(seconds=REAPER_EVENT_AGES.schedule_seconds) - SKEW
    newest = NOW + SKEW
    for at in (oldest, newest):
        assert route("zombie_reaper", schedule.good(at)).trigger.kind.value == "schedule"
    for at in (oldest - timedelta(seconds=1), newest + timedelta(seconds=1)):
        with pytest.raises(UntrustedEventError):
            route("zombie_reaper", schedule.good(at))


def test_each_alarm_state_cloudwatch_has_is_admitted() -> None:
    alarm = ROUTES["tts_reach_alarm"][0]
    for state in ("ALARM", "OK", "INSUFFICIENT_DATA"):
        event = alarm.good(NOW)
        event["detail"]["state"]["value"] = state
        assert route("tts_reach_alarm", event).alarm.state.value == state


def test_a_suspect_event_routes_to_its_detail_and_a_trigger_naming_its_alarm_stream_task_and_p() -> None:
    suspect = ROUTES["worker_drainer"][2]
    event = suspect.good(NOW)
    routed = route("worker_drainer", event)
    detail = event["detail"]
    assert routed.suspect is not None
    assert (routed.suspect.task_id, routed.suspect.log_stream) == (detail["task_id"], detail["log_stream"])
    assert routed.trigger.kind.value == "suspect-worker"
    assert routed.trigger.source == detail["alarm_name"]
    assert routed.trigger.detail == {
        "log_stream": detail["log_stream"],
        "task_id": detail["task_id"],
        "p_value": detail["p_value"],
    }


@pytest.mark.parametrize("number", [float("nan"), float("inf")], ids=["nan", "infinity"])
def test_a_number_json_cannot_carry_is_refused_as_not_json(number: float) -> None:
    # Python's json writes NaN and Infinity, and pydantic's parser reads them: only the door's
    # allow_nan=False keeps them out of a free-form object (the alarm's configuration).
    alarm = ROUTES["zombie_reaper"][1]
    event = alarm.good(NOW)
    event["detail"]["configuration"] = {"threshold": number}
    with pytest.raises(InvalidEventError, match=r"^malformed EventBridge event: not JSON \(") as refused:
        route("zombie_reaper", event)
    assert refused.value.code == "InvalidEvent"


def test_a_malformed_detail_is_refused_naming_its_detail_type_and_the_field() -> None:
    alarm = ROUTES["zombie_reaper"][1]
    event = alarm.good(NOW)
    event["detail"]["state"]["timestamp"] = "just now"
    with pytest.raises(InvalidEventError) as refused:
        route("zombie_reaper", event)
    message = refused.value.message
    assert message.startswith("malformed 'CloudWatch Alarm State Change' detail: state.timestamp: "), message
    assert "must be an ISO 8601 time with a zone" in message


def test_a_free_form_object_is_admitted_at_its_limit_and_refused_one_character_over() -> None:
    # {"n": "..."} is 9 characters of JSON around its text.
    assert bounded_json({"n": "x" * 91}, 100) == {"n": "x" * 91}
    with pytest.raises(ValueError, match=r"^101 characters as JSON, over the 100 allowed$"):
        bounded_json({"n": "x" * 92}, 100)


@pytest.mark.parametrize("minutes", [0, 1, 5])
def test_the_responders_schedule_may_wait_exactly_one_recheck_period(minutes: int) -> None:
    assert responder_event_ages(minutes).schedule_seconds == 60 * minutes
    assert responder_event_ages(minutes).suspect_worker_seconds == SUSPECT_EVENT_MAX_AGE_SECONDS


def test_a_door_without_the_functions_arn_still_checks_a_manual_runs_times_against_its_clock() -> None:
    # The responder's manual run checks its window's end at the door, ARN or not.
    door = Door.for_invocation(None, NOW, REAPER_EVENT_AGES)
    assert door.now == NOW
    door.check_time("the window's end", NOW - timedelta(minutes=5), 600)
    with pytest.raises(UntrustedEventError, match=r"^stale: the window's end "):
        door.check_time("the window's end", NOW - timedelta(minutes=20), 600)


@pytest.mark.parametrize(
    ("account", "region"), [(None, "eu-west-1"), ("123456789012", None)], ids=["no-account", "no-region"]
)
def test_a_door_that_knows_only_its_account_or_only_its_region_refuses_every_eventbridge_event(
    account: str | None, region: str | None
) -> None:
    door = Door("aws", account, region, NOW, REAPER_EVENT_AGES)
    good = ROUTES["zombie_reaper"][0].good(NOW)
    with pytest.raises(UntrustedEventError, match="without the function's ARN"):
        door.admit(good, good["source"], 600)


def test_a_stale_event_is_refused_naming_its_detail_type_and_its_time() -> None:
    schedule = schedule_route("zombie_reaper", REAPER_EVENT_AGES)
    at = NOW - timedelta(hours=1)
    with pytest.raises(UntrustedEventError) as refused:
        route("zombie_reaper", schedule.good(at))
    assert refused.value.message.startswith(
        f"stale: a 'Scheduled Event' event's time {at.isoformat()} is over 0:10:00 old"
    ), refused.value.message


# --- the routes (core.routing) --------------------------------------------------------------------


def _alarm(function: str = "zombie_reaper") -> tuple[str, dict[str, Any]]:
    alarm = next(r for r in ROUTES[function] if r.kind == "alarm")
    return alarm.name.removesuffix(" alarm"), alarm.good(NOW)


def test_an_alarm_event_routes_to_its_change_and_a_trigger_naming_the_alarm_its_state_and_since() -> None:
    name, event = _alarm()
    routed = route("zombie_reaper", event)
    assert routed.alarm is not None
    assert routed.alarm.alarm_name == name
    assert (routed.trigger.kind.value, routed.trigger.source) == ("alarm", name)
    assert routed.trigger.detail == {"state": "ALARM", "since": NOW.isoformat()}


def test_a_manual_event_routes_to_a_trigger_from_invoke_its_payload_as_json() -> None:
    window_end = NOW - timedelta(minutes=5)
    event = {"dry_run": False, "window_end": iso(window_end)}
    routed = route("tts_reach_alarm", event)
    assert (routed.trigger.kind.value, routed.trigger.source) == ("manual", "invoke")
    assert routed.trigger.detail == {
        "dry_run": False,
        "window_end": window_end.isoformat().replace("+00:00", "Z"),
        "window_minutes": None,
    }


def test_an_eventbridge_event_no_route_handles_is_refused_as_not_handled_never_read_as_manual() -> None:
    event = {**ROUTES["zombie_reaper"][0].good(NOW), "detail-type": "Something Else"}
    with pytest.raises(InvalidEventError) as refused:
        route("zombie_reaper", event)
    assert refused.value.message == "the reaper does not handle 'Something Else' events"


def test_another_alarms_event_is_refused_naming_the_alarms_handled_and_the_alarm() -> None:
    handled, event = _alarm()
    event["detail"]["alarmName"] = "someone-elses"
    with pytest.raises(UnknownAlarmError) as refused:
        route("zombie_reaper", event)
    assert refused.value.message == f"handles only {handled}, not someone-elses"
    assert refused.value.resource == "someone-elses"


def test_an_alarm_event_about_another_arn_is_refused_naming_both_arns_and_the_alarm() -> None:
    name, event = _alarm()
    forged = f"arn:aws:cloudwatch:{FOREIGN_REGION}:{ACCOUNT}:alarm:{name}"
    event["resources"] = [forged]
    with pytest.raises(UntrustedEventError) as refused:
        route("zombie_reaper", event)
    # Both ARNs as excerpts: a forged one may be of any size.
    message = refused.value.message
    assert message.startswith(f"the alarm's ARN ['arn:aws:cloudwatch:{FOREIGN_REGION}:{ACCOUNT}:alarm:"), (
        message
    )
    assert f" is not arn:aws:cloudwatch:eu-west-1:{ACCOUNT}:alarm:" in message, message
    assert refused.value.resource == name


@pytest.mark.parametrize(
    ("which", "what"), [("state", "the alarm state's"), ("previousState", "an alarm state's")]
)
def test_each_state_of_an_alarm_event_is_checked_for_its_value_and_its_time(which: str, what: str) -> None:
    _, event = _alarm()
    event["detail"][which]["value"] = "MAYBE"
    with pytest.raises(InvalidEventError) as refused:
        route("zombie_reaper", event)
    assert refused.value.message == "unknown alarm state MAYBE: CloudWatch's are ALARM, OK, INSUFFICIENT_DATA"
    _, event = _alarm()
    event["detail"][which]["timestamp"] = iso(NOW + timedelta(minutes=5))
    with pytest.raises(UntrustedEventError, match=rf"^{what} timestamp .* is in the future"):
        route("zombie_reaper", event)


def test_an_alarm_state_older_than_the_alarm_routes_age_is_stale_at_the_edge_and_one_second_over() -> None:
    # The drainer's schedule may wait 120 s, its alarms an hour: the alarm's own age applies.
    oldest = NOW - timedelta(seconds=DRAINER_EVENT_AGES.alarm_seconds) - SKEW
    for at, admitted in ((oldest, True), (oldest - timedelta(seconds=1), False)):
        _, event = _alarm("worker_drainer")
        event["detail"]["state"]["timestamp"] = at.isoformat()
        event["detail"]["previousState"]["timestamp"] = (at - timedelta(minutes=1)).isoformat()
        if admitted:
            assert route("worker_drainer", event).alarm is not None
            continue
        with pytest.raises(UntrustedEventError, match=r"^stale: the alarm state's timestamp "):
            route("worker_drainer", event)


def test_an_alarm_event_delivered_late_is_stale_by_the_alarm_routes_age_however_fresh_its_state() -> None:
    _, event = _alarm("worker_drainer")
    event["time"] = iso(
        NOW - timedelta(seconds=DRAINER_EVENT_AGES.alarm_seconds) - SKEW - timedelta(seconds=1)
    )
    with pytest.raises(UntrustedEventError, match=r"^stale: a 'CloudWatch Alarm State Change' event's time"):
        route("worker_drainer", event)
    _, event = _alarm("worker_drainer")
    event["time"] = iso(NOW - timedelta(seconds=DRAINER_EVENT_AGES.schedule_seconds + 600))
    assert route("worker_drainer", event).alarm is not None
