"""The call budgets and the clients built from them, the synth-time checks that a run fits its
Lambda timeout, the Logs Insights polling loop inside its deadline, and the strict manual events."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from fleet_remediation.adapters.aws_clients import client_config, secrets_provider, ssm_provider
from fleet_remediation.contract import budgets
from fleet_remediation.contract.events import EventAges
from fleet_remediation.contract.models import MAX_ECHO_CHARS, MAX_LISTED_PROBLEMS, excerpt
from fleet_remediation.contract.policies import DrainerPolicy
from fleet_remediation.contract.sections import DrainerSection, ReaperSection, TtsReachSection
from fleet_remediation.core.door import Door
from fleet_remediation.core.errors import InvalidEventError
from fleet_remediation.core.routing import (
    MANUAL_STRING_MAX_CHARS,
    ManualEvent,
    ManualRoute,
    Router,
    ScheduleRoute,
    parse_manual,
)

# --- budgets --------------------------------------------------------------------------------------


def test_a_calls_worst_case_is_every_attempt_timing_out_plus_the_longest_back_off() -> None:
    standard = budgets.AwsCallBudget("x", connect_timeout_seconds=1.0, read_timeout_seconds=2.0, attempts=3)
    # 3 attempts x (1 + 2) s, back-offs of at most 1 s and 2 s.
    assert standard.worst_case_seconds == 12.0
    adaptive = budgets.AwsCallBudget("x", 1.0, 2.0, 3, adaptive=True)
    assert adaptive.worst_case_seconds == 12.0 + 3 * budgets.ADAPTIVE_MAX_TOKEN_WAIT_SECONDS
    single = budgets.AwsCallBudget("x", 0.5, 1.5, 1)
    assert single.worst_case_seconds == 2.0
    # botocore caps one back-off at 20 s.
    many = budgets.AwsCallBudget("x", 0.0, 0.0, 8)
    assert many.worst_case_seconds == 1 + 2 + 4 + 8 + 16 + 20 + 20


def test_the_functions_budgets() -> None:
    assert budgets.KILL_SWITCH_READ.worst_case_seconds == 6.0
    assert budgets.IDEMPOTENCY_WRITE.worst_case_seconds == 5.0
    assert budgets.ONCE_RECORD_SECONDS == 10.0
    # Two channels, each a publish of at most 3 s under its own once-only record.
    assert budgets.NOTIFICATION_BUDGET_SECONDS == 2 * (3.0 + 10.0)
    assert budgets.guarded_action_seconds(budgets.SUSPECT_EVENT_PUT) == 12.0 + 10.0
    assert budgets.ecs_call(5.0).worst_case_seconds == 3 * 6.0 + 3 + 6
    assert budgets.ecs_call(0.5).connect_timeout_seconds == 0.5
    assert (budgets.ecs_call(5.0).service, budgets.ecs_call(5.0).adaptive) == ("ecs", True)
    assert budgets.reaper_room_seconds(5.0) == 15.0 + 6.0
    # The action events: two PutEvents of one 1.5 s attempt under one once-only record.
    assert budgets.ANNOUNCE_SECONDS == 2 * 1.5 + 10
    assert budgets.reaper_seconds_needed(5.0) == 6 + 10 + 6 + 5 + 21 + 3 + 13 + 26 + 3
    assert budgets.tts_reach_seconds_needed(20.0) == 6 + 2 + 40 + 8 + 22 + 13 + 26 + 3
    # Its ECS facts: DescribeTasks calls of one 2 s attempt, as many as fit in 8 s.
    assert budgets.TASK_FACTS_READ.worst_case_seconds == 2.0
    assert budgets.drainer_step_seconds(5.0) == 27.0 + 5.0
    # Even the shortest ECS timeout leaves one ECS call and a ledger write above the old 8 s.
    assert budgets.drainer_step_seconds(0.1) == pytest.approx(3 * 0.2 + 3 + 6 + 5.0)
    # One attempt at the VAD alarm's state: a failed read leaves the tick to the ladders in progress.
    assert budgets.ALARM_STATE_READ.worst_case_seconds == 2.0
    # Six notice markers of one 2 s attempt, the outbox's two ledger calls, the notification.
    assert budgets.drainer_notification_seconds() == 6 * 2 + 2 * 5 + 26
    # Its open intents: two ledger queries (before the lease and under it); its recent tag writes:
    # two queries of one 1 s attempt (for the snapshot and under the lease).
    assert budgets.TAG_WRITES_READ.worst_case_seconds == 1.0
    # Its group event and tick memory: both read, the memory written, the event held; one 1 s attempt each.
    assert budgets.GROUP_RECORD_CALL.worst_case_seconds == 1.0
    assert budgets.drainer_seconds_needed(22.0, 5.0) == 6 + 2 + 6 + 88 + 10 + 2 + 4 + 32 + 13 + 48 + 3


@pytest.mark.parametrize("adaptive", [False, True])
def test_a_clients_config_is_its_budget(adaptive: bool) -> None:
    budget = budgets.AwsCallBudget("sns", 0.7, 1.3, 4, adaptive=adaptive)
    config = client_config(budget)
    assert config.connect_timeout == 0.7
    assert config.read_timeout == 1.3
    assert config.retries == {"mode": "adaptive" if adaptive else "standard", "total_max_attempts": 4}


def test_the_parameter_providers_use_their_budgets() -> None:
    for provider, budget in (
        (ssm_provider(), budgets.KILL_SWITCH_READ),
        (secrets_provider(), budgets.SECRET_READ),
    ):
        config = provider.client.meta.config
        assert config.read_timeout == budget.read_timeout_seconds
        assert config.connect_timeout == budget.connect_timeout_seconds
        assert config.retries["total_max_attempts"] == budget.attempts


# --- the synth-time checks ------------------------------------------------------------------------


def test_the_default_sections_fit_their_lambda_timeouts() -> None:
    assert budgets.reaper_seconds_needed(5.0) <= ReaperSection().timeout_seconds
    assert budgets.tts_reach_seconds_needed(20.0) <= TtsReachSection().timeout_seconds
    assert budgets.drainer_seconds_needed(22.0, 5.0) <= DrainerSection().timeout_seconds


def test_a_reaper_whose_calls_cannot_fit_fails_at_synth_naming_the_budget() -> None:
    with pytest.raises(ValidationError, match=r"a run needs up to 113 s .* timeout_seconds is 60"):
        ReaperSection(timeout_seconds=60, livekit_request_timeout_seconds=10)
    assert ReaperSection(timeout_seconds=93, livekit_request_timeout_seconds=5).timeout_seconds == 93
    with pytest.raises(ValidationError, match="a run needs up to 93 s"):
        ReaperSection(timeout_seconds=92, livekit_request_timeout_seconds=5)


def test_a_responder_whose_queries_cannot_fit_fails_at_synth() -> None:
    with pytest.raises(ValidationError, match="a run needs up to 120 s"):
        TtsReachSection(timeout_seconds=119, query_timeout_seconds=20)
    assert TtsReachSection(timeout_seconds=120, query_timeout_seconds=20).timeout_seconds == 120
    # The floor: the scan budget's four calls (the estimate, the tally, an alarm's look slot, the ADD:
    # 0.75 s each), the StartQuery (3 s), one poll (2 s) and the stop (2 s); no worst-case call is kept
    # per poll.
    with pytest.raises(ValidationError, match="at least the scan budget's calls, the StartQuery's, one poll"):
        TtsReachSection(timeout_seconds=900, query_timeout_seconds=9.95)
    assert TtsReachSection(timeout_seconds=900, query_timeout_seconds=10).query_timeout_seconds == 10


LEASE = DrainerPolicy(lease_seconds=300)


def test_a_drainer_whose_step_cannot_fit_fails_at_synth() -> None:
    with pytest.raises(ValidationError, match="a run needs up to 214 s"):
        DrainerSection(timeout_seconds=213, policy=LEASE)
    with pytest.raises(ValidationError, match="at least the scan budget's calls, the StartQuery's"):
        DrainerSection(insights_timeout_seconds=9.0)
    assert DrainerSection(timeout_seconds=214, policy=LEASE).timeout_seconds == 214


# --- strict manual events -------------------------------------------------------------------------


class Manual(ManualEvent):
    note: str | None = None


@pytest.mark.parametrize("value", ["false", "no", 0, 1, None, "true"])
def test_dry_run_must_be_a_json_boolean(value: object) -> None:
    with pytest.raises(InvalidEventError, match="dry_run"):
        parse_manual({"dry_run": value}, Manual)


def test_manual_defaults_and_bounds() -> None:
    assert parse_manual({}, Manual).dry_run is True
    assert parse_manual({"dry_run": False}, Manual).dry_run is False
    assert parse_manual({"note": "n" * MANUAL_STRING_MAX_CHARS}, Manual).note
    with pytest.raises(InvalidEventError, match="note"):
        parse_manual({"note": "n" * (MANUAL_STRING_MAX_CHARS + 1)}, Manual)
    with pytest.raises(InvalidEventError, match="must be a JSON object, got list"):
        parse_manual([], Manual)


def test_an_error_quotes_a_bad_input_as_an_excerpt() -> None:
    assert excerpt("short") == "short"
    assert excerpt("k" * MAX_ECHO_CHARS) == "k" * MAX_ECHO_CHARS
    long = excerpt("k" * (MAX_ECHO_CHARS + 5))
    assert long == "k" * MAX_ECHO_CHARS + "...(+5 chars)"
    assert excerpt(12) == "12"
    with pytest.raises(InvalidEventError) as raised:
        parse_manual({"k" * 1_000_000: 1}, Manual)
    assert len(raised.value.message) < 3 * MAX_ECHO_CHARS


def test_an_error_lists_a_bounded_number_of_problems() -> None:
    event = {f"unknown_{i}": i for i in range(MAX_LISTED_PROBLEMS + 5)}
    with pytest.raises(InvalidEventError) as raised:
        parse_manual(event, Manual)
    assert raised.value.message.count("unknown_") == MAX_LISTED_PROBLEMS
    assert raised.value.message.endswith("and 5 more problems")


# --- the router, in the unit that owns it ----------------------------------------------------------

ROUTER_DOOR = Door(
    "aws", "123456789012", "eu-west-1", datetime(2026, 12, 4, 7, 30, tzinfo=UTC), EventAges(360)
)


def test_an_event_with_a_source_but_no_detail_type_is_a_manual_event_and_refused_as_one() -> None:
    router: Router[ManualEvent] = Router("the reaper", [ScheduleRoute(), ManualRoute(ManualEvent)])
    with pytest.raises(InvalidEventError, match=r"invalid manual event: .*source"):
        router.route({"source": "aws.events"}, ROUTER_DOOR)


def test_an_event_with_a_detail_type_but_no_source_is_a_manual_event_and_refused_as_one() -> None:
    router: Router[ManualEvent] = Router("the reaper", [ScheduleRoute(), ManualRoute(ManualEvent)])
    with pytest.raises(InvalidEventError, match=r"invalid manual event: .*detail-type"):
        router.route({"detail-type": "Scheduled Event"}, ROUTER_DOOR)


def test_an_event_no_route_handles_is_refused_naming_the_function_and_its_detail_type() -> None:
    router: Router[ManualEvent] = Router("the reaper", [ScheduleRoute()])
    event = {"source": "aws.events", "detail-type": "Object Created"}
    with pytest.raises(InvalidEventError, match=r"^the reaper does not handle 'Object Created' events$"):
        router.route(event, ROUTER_DOOR)


@pytest.mark.parametrize("event", [["Scheduled Event"], "Scheduled Event", None])
def test_a_router_without_a_manual_route_refuses_a_non_object_event_with_a_typed_error(event: object) -> None:
    router: Router[ManualEvent] = Router("the responder", [ScheduleRoute()])
    with pytest.raises(InvalidEventError, match=r"^the responder does not handle 'None' events$"):
        router.route(event, ROUTER_DOOR)


def test_a_schedule_events_trigger_names_its_rule_without_the_arn_and_its_time() -> None:
    rule_arn = "arn:aws:events:eu-west-1:123456789012:rule/lkfr-staging-reaper-schedule"
    at = datetime(2026, 12, 4, 7, 29, tzinfo=UTC)
    event = {
        "version": "0",
        "id": "tick",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": "2026-12-04T07:29:00Z",
        "region": "eu-west-1",
        "resources": [rule_arn],
        "detail": {},
    }
    trigger = ScheduleRoute().parse(event, ROUTER_DOOR).trigger
    assert trigger.kind == "schedule"
    assert trigger.source == "lkfr-staging-reaper-schedule"
    assert trigger.detail == {"time": at.isoformat()}


def test_a_scheduled_drills_budget_is_its_calls_its_minutes_of_watch_and_its_last_poll() -> None:
    # The docs' figure: 12 minutes of watch need 848 s, under Lambda's 900.
    assert budgets.scheduled_drill_seconds_needed(12) == 848
    assert budgets.scheduled_drill_seconds_needed(12) < budgets.LAMBDA_MAX_TIMEOUT_SECONDS
    # A minute more of watch is 60 s more; the rest does not depend on the minutes.
    assert budgets.scheduled_drill_seconds_needed(2) - budgets.scheduled_drill_seconds_needed(1) == 60
    assert budgets.scheduled_drill_seconds_needed(1) == 188


def test_a_look_at_a_query_needs_the_floor_the_query_and_one_poll_interval() -> None:
    floor, poll = budgets.LOGS_INSIGHTS_QUERY_FLOOR_SECONDS, budgets.LOGS_INSIGHTS_POLL_INTERVAL_SECONDS
    assert budgets.insights_look_seconds(3.0) == floor + 3.0 + poll
    assert budgets.insights_look_seconds(0.0) == floor + poll
