"""The Logs Insights adapter inside its deadline, under the budgets production builds its clients
from (an injected client reserves the same as the adapter's own): StartQuery sent once, a lost
reply recorded as unknown, a missed poll polled again, only the stop kept free, and what a look
scanned kept however it ended.

The client is a small explicit fake of the ``logs`` client (moto has no Insights engine) on a
simulated clock: statuses in turn, every call recorded, a refusal or a lost reply on request."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from fleet_remediation.adapters.logs_insights import (
    CloudWatchLogsInsights,
    ScanStoppedError,
    rows_from_results,
)
from fleet_remediation.contract import budgets
from fleet_remediation.core.errors import AwsApiError, DeadlineExceededError
from livekit_fleet_remediation.offline.service_profile import SimulatedClock

START = budgets.LOGS_INSIGHTS_START.worst_case_seconds
POLL = budgets.LOGS_INSIGHTS_POLL.worst_case_seconds
STOP = budgets.LOGS_INSIGHTS_STOP.worst_case_seconds
CALLS = START + POLL + STOP
END = datetime(2026, 9, 15, 18, 0, tzinfo=UTC)


def _refusal(code: str, operation: str) -> ClientError:
    """The service refused the request (a 4xx, as botocore builds it): it did nothing."""
    return ClientError(
        {"Error": {"Code": code, "Message": "refused"}, "ResponseMetadata": {"HTTPStatusCode": 400}},
        operation,
    )


def _server_error(operation: str) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": "InternalFailure", "Message": "oops"},
            "ResponseMetadata": {"HTTPStatusCode": 500},
        },
        operation,
    )


class FakeLogsClient:
    """GetQueryResults answers ``statuses`` in turn, with ``bytes_per_poll`` more scanned each time;
    ``fail`` maps an operation to the exceptions its next calls raise, in turn."""

    def __init__(self, statuses: list[str], rows: list[list[dict[str, str]]] | None = None) -> None:
        self.statuses = statuses
        self.rows = rows or []
        self.calls: list[str] = []
        self.started: list[dict[str, Any]] = []
        self.bare = False
        self.bytes_per_poll = 0.0
        self.fail: dict[str, list[Exception]] = {}
        self._polls = 0

    def _maybe_fail(self, operation: str) -> None:
        if self.fail.get(operation):
            raise self.fail[operation].pop(0)

    def start_query(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append("StartQuery")
        self.started.append(kwargs)
        self._maybe_fail("StartQuery")
        return {"queryId": "q-1"}

    def get_query_results(self, queryId: str) -> dict[str, Any]:
        self.calls.append("GetQueryResults")
        self._maybe_fail("GetQueryResults")
        self._polls += 1
        status = self.statuses.pop(0)
        if self.bare:  # Insights leaves out what it has none of
            return {"status": status}
        statistics = {"recordsMatched": 3, "bytesScanned": self._polls * self.bytes_per_poll}
        return {"status": status, "results": self.rows, "statistics": statistics}

    def stop_query(self, queryId: str) -> dict[str, Any]:
        self.calls.append("StopQuery")
        self._maybe_fail("StopQuery")
        return {"success": True}


def _insights(client: FakeLogsClient, clock: SimulatedClock) -> CloudWatchLogsInsights:
    return CloudWatchLogsInsights(client, sleep=clock.sleep, monotonic=clock.monotonic)  # type: ignore[arg-type]


def _query(client: FakeLogsClient, clock: SimulatedClock, seconds: float) -> Any:
    return _insights(client, clock).run_query(
        "/g", "q", END - timedelta(minutes=30), END, clock.monotonic() + seconds
    )


def test_a_query_polls_every_second_until_complete() -> None:
    client = FakeLogsClient(["Scheduled", "Running", "Complete"], [[{"field": "a", "value": "1"}]])
    clock = SimulatedClock()
    result = _query(client, clock, 60)
    assert client.calls == ["StartQuery", "GetQueryResults", "GetQueryResults", "GetQueryResults"]
    assert result.rows == [{"a": "1"}]
    assert result.statistics == {"recordsMatched": 3.0, "bytesScanned": 0.0}
    assert clock.monotonic() == 2.0


def test_no_query_starts_without_time_for_its_start_one_poll_and_the_stop() -> None:
    client = FakeLogsClient(["Complete"])
    with pytest.raises(DeadlineExceededError, match="no time left"):
        _query(client, SimulatedClock(), CALLS - 0.01)
    assert client.calls == []
    assert _query(FakeLogsClient(["Complete"]), SimulatedClock(), CALLS).query_id == "q-1"


def test_only_the_stop_is_kept_free_so_a_query_of_several_seconds_decides() -> None:
    # The case: a healthy query that completes on its 8th poll (about 7 s) under a deadline
    # of 17 s. Keeping a worst-case call per poll ended it at the 2nd.
    client = FakeLogsClient(["Scheduled"] + ["Running"] * 6 + ["Complete"])
    clock = SimulatedClock()
    assert _query(client, clock, 17.0).query_id == "q-1"
    assert client.calls.count("GetQueryResults") == 8
    assert clock.monotonic() == 7.0


def test_a_query_still_running_at_its_deadline_is_stopped_after_its_last_fitting_poll() -> None:
    client = FakeLogsClient(["Running"] * 20)
    client.bytes_per_poll = 1e6
    clock = SimulatedClock()
    insights = _insights(client, clock)
    with pytest.raises(DeadlineExceededError, match="still Running at the deadline"):
        insights.run_query("/g", "q", END - timedelta(minutes=5), END, CALLS + 3.5)
    # Polls at 0..6 s and at 6.5 s (the last wait shortened so a poll and the stop still fit: 10.5 s
    # less 4 s), then stops.
    assert client.calls == ["StartQuery"] + ["GetQueryResults"] * 8 + ["StopQuery"]
    assert clock.monotonic() == 6.5
    assert insights.last_scanned == 8e6


def test_a_stop_is_sent_even_when_the_polls_ran_long() -> None:
    client = FakeLogsClient(["Running"] * 10)
    clock = SimulatedClock()
    original = client.get_query_results

    def slow(queryId: str) -> dict[str, Any]:
        clock.sleep(POLL)  # the call used all its budget
        return original(queryId)

    client.get_query_results = slow  # type: ignore[method-assign]
    with pytest.raises(DeadlineExceededError):
        _query(client, clock, CALLS + 0.5)
    # Polls ending at 2 s and 5 s; a third could not leave the stop its time.
    assert client.calls == ["StartQuery", "GetQueryResults", "GetQueryResults", "StopQuery"]
    assert clock.monotonic() + STOP <= CALLS + 0.5


def test_start_query_is_sent_once_and_a_lost_reply_is_unknown_not_stopped() -> None:
    for lost in (_server_error("StartQuery"), ReadTimeoutError(endpoint_url="https://logs")):
        client = FakeLogsClient(["Complete"])
        client.fail["StartQuery"] = [lost]
        insights = _insights(client, SimulatedClock())
        with pytest.raises(AwsApiError, match="a query may be running") as raised:
            insights.run_query("/g", "q", END - timedelta(minutes=5), END, 60)
        assert raised.value.unknown
        assert client.calls == ["StartQuery"]
        assert insights.last_scanned is None  # unknown: the budget counts the estimate


def test_a_refused_start_scanned_nothing() -> None:
    client = FakeLogsClient(["Complete"])
    client.fail["StartQuery"] = [_refusal("LimitExceededException", "StartQuery")]
    insights = _insights(client, SimulatedClock())
    with pytest.raises(AwsApiError) as raised:
        insights.run_query("/g", "q", END - timedelta(minutes=5), END, 60)
    assert (raised.value.aws_code, raised.value.unknown) == ("LimitExceededException", False)
    assert insights.last_scanned == 0.0


def test_the_production_clients_never_retry_start_query() -> None:
    insights = CloudWatchLogsInsights()
    start = insights._start_client.meta.config
    assert start.retries["total_max_attempts"] == budgets.LOGS_INSIGHTS_START.attempts == 1
    assert start.read_timeout == budgets.LOGS_INSIGHTS_START.read_timeout_seconds
    assert insights._client.meta.config.read_timeout == budgets.LOGS_INSIGHTS_POLL.read_timeout_seconds
    assert insights._stop_client.meta.config.read_timeout == budgets.LOGS_INSIGHTS_STOP.read_timeout_seconds


@pytest.mark.parametrize(
    "missed",
    [
        _refusal("ThrottlingException", "GetQueryResults"),
        ReadTimeoutError(endpoint_url="https://logs"),
        EndpointConnectionError(endpoint_url="https://logs"),
    ],
)
def test_a_missed_poll_is_polled_again(missed: Exception) -> None:
    client = FakeLogsClient(["Running", "Complete"])
    client.fail["GetQueryResults"] = [missed]
    assert _query(client, SimulatedClock(), 30).query_id == "q-1"
    assert client.calls == ["StartQuery", "GetQueryResults", "GetQueryResults", "GetQueryResults"]


def test_a_poll_refused_for_good_stops_the_query() -> None:
    client = FakeLogsClient(["Running"] * 10)
    client.fail["GetQueryResults"] = [_refusal("ResourceNotFoundException", "GetQueryResults")]
    with pytest.raises(AwsApiError, match="ResourceNotFoundException"):
        _query(client, SimulatedClock(), 60)
    assert client.calls == ["StartQuery", "GetQueryResults", "StopQuery"]


@pytest.mark.parametrize("status", ["Failed", "Cancelled", "Timeout", "Unknown"])
def test_a_query_that_ends_badly_is_a_typed_error_and_keeps_its_scan(status: str) -> None:
    client = FakeLogsClient(["Running", status])
    client.bytes_per_poll = 5e6
    insights = _insights(client, SimulatedClock())
    with pytest.raises(AwsApiError, match=f"ended with status {status}") as raised:
        insights.run_query("/g", "q", END - timedelta(minutes=5), END, 60)
    assert raised.value.aws_code == f"Query{status}"
    assert insights.last_scanned == 10e6
    assert "StopQuery" not in client.calls  # the query itself ended


def test_a_stop_that_fails_or_cannot_reach_the_service_does_not_hide_the_deadline() -> None:
    for refusal in (
        _refusal("InvalidParameterException", "StopQuery"),
        EndpointConnectionError(endpoint_url="https://logs.eu-west-1.amazonaws.com"),
    ):
        client = FakeLogsClient(["Running"] * 10)
        client.fail["StopQuery"] = [refusal]
        with pytest.raises(DeadlineExceededError):
            _query(client, SimulatedClock(), CALLS + 1.5)
        assert client.calls[-1] == "StopQuery"


def test_a_query_asks_for_its_log_group_window_and_text() -> None:
    client = FakeLogsClient(["Complete"])
    _query(client, SimulatedClock(), 60)
    assert client.started == [
        {
            "logGroupName": "/g",
            "startTime": int((END - timedelta(minutes=30)).timestamp()),
            "endTime": int(END.timestamp()),
            "queryString": "q",
        }
    ]


def test_a_complete_reply_without_rows_or_statistics_is_an_empty_result_of_unknown_scan() -> None:
    client = FakeLogsClient(["Complete"])
    client.bare = True
    clock = SimulatedClock()
    insights = _insights(client, clock)
    result = insights.run_query("/g", "q", END - timedelta(minutes=5), END, 60)
    assert (result.rows, result.statistics) == ([], {})
    assert insights.last_scanned is None


def test_every_error_names_the_log_group_and_the_call_that_failed() -> None:
    with pytest.raises(DeadlineExceededError) as no_time:
        _query(FakeLogsClient(["Complete"]), SimulatedClock(), 1)
    with pytest.raises(DeadlineExceededError) as running:
        _query(FakeLogsClient(["Running"] * 10), SimulatedClock(), CALLS + 1.5)
    with pytest.raises(AwsApiError) as ended:
        _query(FakeLogsClient(["Failed"]), SimulatedClock(), 60)
    assert [e.value.resource for e in (no_time, running, ended)] == ["/g", "/g", "/g"]
    client = FakeLogsClient(["Complete"])
    client.fail["StartQuery"] = [_refusal("ThrottlingException", "StartQuery")]
    with pytest.raises(AwsApiError) as refused:
        _query(client, SimulatedClock(), 60)
    assert refused.value.message == "Logs StartQuery failed: ThrottlingException: refused"
    assert refused.value.resource == "/g"


class StopRecordingClient(FakeLogsClient):
    """Records which query each StopQuery names."""

    def __init__(self, statuses: list[str]) -> None:
        super().__init__(statuses)
        self.stopped: list[str] = []

    def stop_query(self, queryId: str) -> dict[str, Any]:
        self.stopped.append(queryId)
        return super().stop_query(queryId)


@pytest.mark.parametrize(
    ("max_bytes", "polls"),
    [(1e9 - 1, 2), (1e9, 3), (1e9 + 1, 3)],
    ids=["one-under-the-second-polls-scan", "at-it", "one-over-it"],
)
def test_a_look_is_stopped_at_the_first_poll_whose_scan_passes_what_the_budget_left(
    max_bytes: float, polls: int
) -> None:
    client = StopRecordingClient(["Running"] * 10)
    client.bytes_per_poll = 5e8
    insights = _insights(client, SimulatedClock())
    with pytest.raises(ScanStoppedError) as stopped:
        insights.run_query("/g", "q", END - timedelta(minutes=5), END, 60, max_bytes=max_bytes)
    assert client.calls == ["StartQuery", *["GetQueryResults"] * polls, "StopQuery"]
    assert client.stopped == ["q-1"]
    assert (stopped.value.scanned, stopped.value.resource) == (polls * 5e8, "/g")
    assert stopped.value.message == (
        f"scan budget: Logs Insights query q-1 stopped at {polls * 0.5:.2f} GB scanned, "
        f"the budget had {max_bytes / 1e9:.2f} GB left this hour"
    )
    assert insights.last_scanned == polls * 5e8


def test_a_look_that_completes_on_the_poll_that_passes_the_budget_keeps_its_rows() -> None:
    client = FakeLogsClient(["Running", "Complete"], [[{"field": "a", "value": "1"}]])
    client.bytes_per_poll = 5e8
    result = _insights(client, SimulatedClock()).run_query(
        "/g", "q", END - timedelta(minutes=5), END, 60, max_bytes=7e8
    )
    assert result.rows == [{"a": "1"}]
    assert "StopQuery" not in client.calls


def test_a_look_without_a_budget_is_never_stopped_for_its_scan() -> None:
    client = FakeLogsClient(["Running"] * 3 + ["Complete"])
    client.bytes_per_poll = 1e12
    assert _query(client, SimulatedClock(), 60).statistics["bytesScanned"] == 4e12


def test_before_any_look_nothing_was_scanned() -> None:
    assert _insights(FakeLogsClient([]), SimulatedClock()).last_scanned == 0.0


class StatisticsLaterClient(FakeLogsClient):
    """The first poll reports its scan, the last one's statistics leave it out."""

    def get_query_results(self, queryId: str) -> dict[str, Any]:
        answer = super().get_query_results(queryId)
        if answer["status"] == "Complete":
            answer["statistics"] = {"recordsMatched": 3}
        return answer


def test_a_poll_whose_statistics_leave_the_scan_out_keeps_the_last_one_seen() -> None:
    client = StatisticsLaterClient(["Running", "Complete"])
    client.bytes_per_poll = 5e6
    insights = _insights(client, SimulatedClock())
    insights.run_query("/g", "q", END - timedelta(minutes=5), END, 60)
    assert insights.last_scanned == 5e6


def test_a_lost_start_reply_keeps_its_code_and_names_the_log_group() -> None:
    client = FakeLogsClient(["Complete"])
    client.fail["StartQuery"] = [_server_error("StartQuery")]
    with pytest.raises(AwsApiError) as raised:
        _query(client, SimulatedClock(), 60)
    assert (raised.value.aws_code, raised.value.resource, raised.value.unknown) == (
        "InternalFailure",
        "/g",
        True,
    )


def test_a_poll_refused_for_good_names_the_call_and_the_log_group() -> None:
    client = FakeLogsClient(["Running"] * 10)
    client.fail["GetQueryResults"] = [_refusal("ResourceNotFoundException", "GetQueryResults")]
    with pytest.raises(AwsApiError) as raised:
        _query(client, SimulatedClock(), 60)
    assert raised.value.message == "Logs GetQueryResults failed: ResourceNotFoundException: refused"
    assert raised.value.resource == "/g"


def test_a_query_whose_every_poll_was_missed_says_so_at_the_deadline() -> None:
    client = FakeLogsClient(["Running"] * 10)
    client.fail["GetQueryResults"] = [ReadTimeoutError(endpoint_url="https://logs")] * 10
    with pytest.raises(DeadlineExceededError) as raised:
        _query(client, SimulatedClock(), CALLS + 1.5)
    assert raised.value.message == "Logs Insights query q-1 still unread (its polls failed) at the deadline"


def test_a_cell_without_a_value_is_the_empty_text_and_the_pointer_is_left_out() -> None:
    results = [[{"field": "@ptr", "value": "p"}, {"field": "a"}, {"field": "b", "value": "2"}]]
    assert rows_from_results(results) == [{"a": "", "b": "2"}]


def test_a_look_whose_polls_report_no_scan_is_never_stopped_for_it() -> None:
    client = FakeLogsClient(["Running", "Complete"])
    client.bare = True
    result = _insights(client, SimulatedClock()).run_query(
        "/g", "q", END - timedelta(minutes=5), END, 60, max_bytes=0.5
    )
    assert result.query_id == "q-1"
    assert "StopQuery" not in client.calls
