"""The call budgets and the clients built from them, the synth-time checks that a run fits its
Lambda timeout, the Logs Insights polling loop inside its deadline, and the strict manual events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from pydantic import ValidationError

from fleet_remediation.adapters.aws_clients import client_config, secrets_provider, ssm_provider
from fleet_remediation.adapters.logs_insights import CloudWatchLogsInsights
from fleet_remediation.contract import budgets
from fleet_remediation.contract.models import MAX_ECHO_CHARS, MAX_LISTED_PROBLEMS, excerpt
from fleet_remediation.contract.policies import DrainerPolicy
from fleet_remediation.contract.sections import DrainerSection, ReaperSection, TtsReachSection
from fleet_remediation.core.errors import AwsApiError, DeadlineExceededError, InvalidEventError
from fleet_remediation.core.routing import (
    MANUAL_STRING_MAX_CHARS,
    ManualEvent,
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
    assert budgets.reaper_room_seconds(5.0) == 15.0 + 6.0
    # The action events: two PutEvents of one 1.5 s attempt under one once-only record.
    assert budgets.ANNOUNCE_SECONDS == 2 * 1.5 + 10
    assert budgets.reaper_seconds_needed(5.0) == 6 + 10 + 6 + 5 + 21 + 3 + 13 + 26 + 3
    assert budgets.tts_reach_seconds_needed(20.0) == 6 + 2 + 40 + 22 + 13 + 26 + 3
    assert budgets.drainer_step_seconds(5.0) == 27.0 + 5.0
    # Even the shortest ECS timeout leaves one ECS call and a ledger write above the old 8 s.
    assert budgets.drainer_step_seconds(0.1) == pytest.approx(3 * 0.2 + 3 + 6 + 5.0)
    # One attempt at the VAD alarm's state: a failed read leaves the tick to the ladders in progress.
    assert budgets.ALARM_STATE_READ.worst_case_seconds == 2.0
    # Six notice markers of one 2 s attempt, the outbox's two ledger calls, the notification.
    assert budgets.drainer_notification_seconds() == 6 * 2 + 2 * 5 + 26
    assert budgets.drainer_seconds_needed(15.0, 5.0) == 6 + 2 + 6 + 60 + 32 + 13 + 48 + 3


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
    assert budgets.drainer_seconds_needed(15.0, 5.0) <= DrainerSection().timeout_seconds


def test_a_reaper_whose_calls_cannot_fit_fails_at_synth_naming_the_budget() -> None:
    with pytest.raises(ValidationError, match=r"a run needs up to 113 s .* timeout_seconds is 60"):
        ReaperSection(timeout_seconds=60, livekit_request_timeout_seconds=10)
    assert ReaperSection(timeout_seconds=93, livekit_request_timeout_seconds=5).timeout_seconds == 93
    with pytest.raises(ValidationError, match="a run needs up to 93 s"):
        ReaperSection(timeout_seconds=92, livekit_request_timeout_seconds=5)


def test_a_responder_whose_queries_cannot_fit_fails_at_synth() -> None:
    with pytest.raises(ValidationError, match="a run needs up to 112 s"):
        TtsReachSection(timeout_seconds=111, query_timeout_seconds=20)
    assert TtsReachSection(timeout_seconds=112, query_timeout_seconds=20).timeout_seconds == 112
    # The floor: the scan budget's three calls (0.75 s each), a Logs Insights call (12 s), its stop (2 s).
    with pytest.raises(ValidationError, match="at least the scan budget's calls, one Logs Insights call's"):
        TtsReachSection(timeout_seconds=900, query_timeout_seconds=16.2)
    assert TtsReachSection(timeout_seconds=900, query_timeout_seconds=16.25).query_timeout_seconds == 16.25


LEASE = DrainerPolicy(lease_seconds=300)


def test_a_drainer_whose_step_cannot_fit_fails_at_synth() -> None:
    with pytest.raises(ValidationError, match="a run needs up to 178 s"):
        DrainerSection(timeout_seconds=177, policy=LEASE)
    with pytest.raises(ValidationError, match="at least the scan budget's calls, one Logs"):
        DrainerSection(insights_timeout_seconds=13.5)
    assert DrainerSection(timeout_seconds=178, policy=LEASE).timeout_seconds == 178


# --- Logs Insights inside its deadline ------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class FakeLogsClient:
    """Answers GetQueryResults with ``statuses`` in turn; records every call (and StartQuery's
    arguments); ``refuse`` names an operation to answer with a throttling error."""

    def __init__(self, statuses: list[str], rows: list[list[dict[str, str]]] | None = None) -> None:
        self.statuses = statuses
        self.rows = rows or []
        self.calls: list[str] = []
        self.started: list[dict[str, Any]] = []
        self.bare = False
        self.refuse: str | None = None

    def start_query(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append("StartQuery")
        self.started.append(kwargs)
        self._maybe_refuse("StartQuery")
        return {"queryId": "q-1"}

    def get_query_results(self, queryId: str) -> dict[str, Any]:
        self.calls.append("GetQueryResults")
        self._maybe_refuse("GetQueryResults")
        if self.bare:  # Insights leaves out what it has none of
            return {"status": self.statuses.pop(0)}
        return {"status": self.statuses.pop(0), "results": self.rows, "statistics": {"recordsMatched": 3}}

    def _maybe_refuse(self, operation: str) -> None:
        if self.refuse == operation:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, operation)

    def stop_query(self, queryId: str) -> dict[str, Any]:
        self.calls.append("StopQuery")
        return {"success": True}


CALL = budgets.LOGS_INSIGHTS_CALL.worst_case_seconds


def _query(client: FakeLogsClient, clock: Clock, seconds: float) -> Any:
    insights = CloudWatchLogsInsights(
        client,  # type: ignore[arg-type]
        poll_interval_seconds=1.0,
        sleep=clock.sleep,
        monotonic=clock.monotonic,
        call_seconds=CALL,
    )
    end = datetime(2026, 9, 15, 18, 0, tzinfo=UTC)
    return insights.run_query("/g", "q", end - timedelta(minutes=30), end, clock.now + seconds)


def test_a_query_polls_until_complete() -> None:
    client = FakeLogsClient(["Scheduled", "Running", "Complete"], [[{"field": "a", "value": "1"}]])
    clock = Clock()
    result = _query(client, clock, 60)
    assert client.calls == ["StartQuery", "GetQueryResults", "GetQueryResults", "GetQueryResults"]
    assert result.rows == [{"a": "1"}]
    assert result.statistics == {"recordsMatched": 3.0}
    assert clock.now == 1002.0


def test_no_query_starts_without_time_for_one_call_and_its_stop() -> None:
    client = FakeLogsClient(["Complete"])
    with pytest.raises(DeadlineExceededError, match="no time left"):
        _query(client, Clock(), 2 * CALL - 0.01)
    assert client.calls == []
    assert _query(FakeLogsClient(["Complete"]), Clock(), 2 * CALL).query_id == "q-1"


def test_a_query_still_running_at_its_deadline_is_stopped_and_a_typed_error() -> None:
    client = FakeLogsClient(["Running"] * 10)
    clock = Clock()
    with pytest.raises(DeadlineExceededError, match="still Running at the deadline"):
        _query(client, clock, 2 * CALL + 2.5)
    # Polls while a poll and the stop after it fit, then stops the query.
    assert client.calls == [
        "StartQuery",
        "GetQueryResults",
        "GetQueryResults",
        "GetQueryResults",
        "StopQuery",
    ]
    assert clock.now == 1002.0


def test_a_stop_is_sent_even_when_the_polls_ran_long() -> None:
    client = FakeLogsClient(["Running"] * 10)
    clock = Clock()
    original = client.get_query_results

    def slow(queryId: str) -> dict[str, Any]:
        clock.now += CALL  # the call used all its budget
        return original(queryId)

    client.get_query_results = slow  # type: ignore[method-assign]
    with pytest.raises(DeadlineExceededError):
        _query(client, clock, 2 * CALL + 0.5)
    assert client.calls == ["StartQuery", "GetQueryResults", "StopQuery"]
    assert clock.now <= 1000 + 2 * CALL + 0.5


def test_a_query_whose_poll_fails_is_stopped() -> None:
    client = FakeLogsClient(["Running"] * 10)
    client.refuse = "GetQueryResults"
    with pytest.raises(AwsApiError):
        _query(client, Clock(), 60)
    assert client.calls == ["StartQuery", "GetQueryResults", "StopQuery"]


@pytest.mark.parametrize("status", ["Failed", "Cancelled", "Timeout", "Unknown"])
def test_a_query_that_ends_badly_is_a_typed_error(status: str) -> None:
    with pytest.raises(AwsApiError, match=f"ended with status {status}") as raised:
        _query(FakeLogsClient([status]), Clock(), 60)
    assert raised.value.aws_code == f"Query{status}"


def test_a_stop_that_fails_does_not_hide_the_deadline() -> None:
    client = FakeLogsClient(["Running"] * 10)

    def refuse(queryId: str) -> dict[str, Any]:
        raise ClientError({"Error": {"Code": "InvalidParameterException", "Message": "gone"}}, "StopQuery")

    client.stop_query = refuse  # type: ignore[method-assign]
    with pytest.raises(DeadlineExceededError):
        _query(client, Clock(), 2 * CALL + 1.5)


def test_a_query_asks_for_its_log_group_window_and_text() -> None:
    client = FakeLogsClient(["Complete"])
    _query(client, Clock(), 60)
    end = datetime(2026, 9, 15, 18, 0, tzinfo=UTC)
    assert client.started == [
        {
            "logGroupName": "/g",
            "startTime": int((end - timedelta(minutes=30)).timestamp()),
            "endTime": int(end.timestamp()),
            "queryString": "q",
        }
    ]


def test_a_complete_reply_without_rows_or_statistics_is_an_empty_result() -> None:
    client = FakeLogsClient(["Complete"])
    client.bare = True
    result = _query(client, Clock(), 60)
    assert (result.rows, result.statistics) == ([], {})


def test_every_error_names_the_log_group_and_the_call_that_failed() -> None:
    with pytest.raises(DeadlineExceededError) as no_time:
        _query(FakeLogsClient(["Complete"]), Clock(), 1)
    with pytest.raises(DeadlineExceededError) as running:
        _query(FakeLogsClient(["Running"] * 10), Clock(), 2 * CALL + 1.5)
    with pytest.raises(AwsApiError) as ended:
        _query(FakeLogsClient(["Failed"]), Clock(), 60)
    assert [e.value.resource for e in (no_time, running, ended)] == ["/g", "/g", "/g"]
    for operation in ("StartQuery", "GetQueryResults"):
        client = FakeLogsClient(["Complete"])
        client.refuse = operation
        with pytest.raises(AwsApiError) as refused:
            _query(client, Clock(), 60)
        assert refused.value.message == f"Logs {operation} failed: ThrottlingException: slow down"
        assert refused.value.resource == "/g"


def test_a_poll_that_ends_exactly_at_the_deadline_still_happens() -> None:
    # After one poll there is exactly one more interval and one more call before the deadline.
    client = FakeLogsClient(["Running", "Complete"])
    clock = Clock()
    assert _query(client, clock, 2 * CALL + 1.0).query_id == "q-1"
    assert client.calls == ["StartQuery", "GetQueryResults", "GetQueryResults"]


def test_a_stop_that_fits_exactly_before_the_deadline_is_sent() -> None:
    client = FakeLogsClient(["Running"] * 10)
    clock = Clock()
    original = client.get_query_results

    def half_a_second(queryId: str) -> dict[str, Any]:
        clock.now += 0.5
        return original(queryId)

    client.get_query_results = half_a_second  # type: ignore[method-assign]
    with pytest.raises(DeadlineExceededError):
        _query(client, clock, 2 * CALL + 0.5)
    assert client.calls == ["StartQuery", "GetQueryResults", "StopQuery"]


def test_a_stop_that_cannot_reach_the_service_does_not_hide_the_deadline() -> None:
    client = FakeLogsClient(["Running"] * 10)

    def unreachable(queryId: str) -> dict[str, Any]:
        raise EndpointConnectionError(endpoint_url="https://logs.eu-west-1.amazonaws.com")

    client.stop_query = unreachable  # type: ignore[method-assign]
    with pytest.raises(DeadlineExceededError):
        _query(client, Clock(), 2 * CALL + 1.5)


def test_an_injected_client_polls_every_second_and_its_calls_are_its_callers_to_bound() -> None:
    client = FakeLogsClient(["Running", "Complete"])
    clock = Clock()
    insights = CloudWatchLogsInsights(client, sleep=clock.sleep, monotonic=clock.monotonic)  # type: ignore[arg-type]
    end = datetime(2026, 9, 15, 18, 0, tzinfo=UTC)
    # 1.5 s is far less than one call's worst case, which is not counted for an injected client.
    assert insights.run_query("/g", "q", end - timedelta(hours=1), end, clock.now + 1.5).rows == []
    assert clock.now == 1001.0


def test_the_adapters_own_client_counts_its_worst_case_call() -> None:
    clock = Clock()
    insights = CloudWatchLogsInsights(sleep=clock.sleep, monotonic=clock.monotonic)
    end = datetime(2026, 9, 15, 18, 0, tzinfo=UTC)
    with pytest.raises(DeadlineExceededError, match="no time left"):
        insights.run_query("/g", "q", end - timedelta(hours=1), end, clock.now + CALL - 0.5)
    assert insights._client.meta.config.read_timeout == budgets.LOGS_INSIGHTS_CALL.read_timeout_seconds


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
