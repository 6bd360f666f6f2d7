"""The scan budget's rules in their own unit (``adapters.scan_budget``), over stand-ins for the tally,
the estimate, the look gate and Logs Insights: the tally read (no item is nothing spent, an item
without a readable count is unknown, not zero) and its ADD; the estimate's period and an unreadable
estimate as unknown; what a look may scan and what it counts, at and beside each edge; the alarm's
look slot; the policy a stage runs under; which sections are budgeted; how a refusal is noted."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from fleet_remediation.adapters.logs_insights import QueryResult, ScanStoppedError
from fleet_remediation.adapters.scan_budget import (
    BudgetedInsights,
    CloudWatchIncomingBytes,
    DynamoDBScanTally,
    LookPolicy,
    LookSkippedError,
    ScanBudget,
    budget_refusal,
    budgeted,
    looking,
    note_look_error,
)
from fleet_remediation.adapters.scan_look_gate import DynamoDBLookGate
from fleet_remediation.contract.budgets import SCAN_TALLY_CALL
from fleet_remediation.contract.sections import ScanBudgetSection
from fleet_remediation.core.errors import AwsApiError, RemediationError
from fleet_remediation.core.notes import Noted, Skipped

NOW = datetime(2026, 12, 1, 12, 30, tzinfo=UTC)
HOUR = "2026-12-01T12"
START, END = NOW - timedelta(minutes=30), NOW
GROUP = "/agents"


def _denied(operation: str) -> ClientError:
    return ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, operation)


@dataclass
class Dynamo:
    item: dict[str, Any] | None = None
    fails: bool = False
    updates: list[dict[str, Any]] = field(default_factory=list)

    def get_item(self, **kwargs: Any) -> dict[str, Any]:
        assert kwargs == {"TableName": "tally", "Key": {"hour": {"S": HOUR}}, "ConsistentRead": True}
        if self.fails:
            raise _denied("GetItem")
        return {} if self.item is None else {"Item": self.item}

    def update_item(self, **kwargs: Any) -> None:
        self.updates.append(kwargs)
        if self.fails:
            raise _denied("UpdateItem")


@pytest.mark.parametrize(
    ("item", "spent"),
    [(None, 0.0), ({"scanned_bytes": {"N": "1500"}}, 1500.0)],
    ids=["no-item", "an-item"],
)
def test_the_tally_reads_an_hour_without_an_item_as_nothing_spent(item: Any, spent: float) -> None:
    assert DynamoDBScanTally("tally", Dynamo(item)).spent(HOUR) == spent


@pytest.mark.parametrize(
    "item",
    [{}, {"scanned_bytes": {"S": "1500"}}, {"scanned_bytes": {"N": "many"}}, {"scanned_bytes": None}],
    ids=["no-count", "not-a-number-type", "not-a-number", "null"],
)
def test_an_item_without_a_readable_count_is_unknown_spend_not_zero(item: Any) -> None:
    with pytest.raises(AwsApiError) as raised:
        DynamoDBScanTally("tally", Dynamo(item)).spent(HOUR)
    assert raised.value.message == (
        "DynamoDB GetItem (scan tally) failed: the hour's item holds no readable scanned_bytes"
    )
    assert (raised.value.aws_code, raised.value.resource) == ("MalformedTally", "tally")


def test_an_unreadable_tally_raises_naming_the_call_and_the_table() -> None:
    with pytest.raises(AwsApiError) as raised:
        DynamoDBScanTally("tally", Dynamo(fails=True)).spent(HOUR)
    assert raised.value.message.startswith("DynamoDB GetItem (scan tally) failed: AccessDeniedException")
    assert raised.value.resource == "tally"


@pytest.fixture
def seoul(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process's local time zone is not UTC: the tally's hours are UTC's all the same."""
    monkeypatch.setenv("TZ", "Asia/Seoul")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_an_unwritable_tally_raises_naming_the_call_and_the_table() -> None:
    with pytest.raises(AwsApiError) as raised:
        DynamoDBScanTally("tally", Dynamo(fails=True)).add(HOUR, 1.0)
    assert raised.value.message.startswith("DynamoDB UpdateItem (scan tally) failed: AccessDeniedException")
    assert raised.value.resource == "tally"


@pytest.mark.usefixtures("seoul")
def test_the_tally_adds_whole_bytes_to_its_hour_which_expires_two_hours_after_it_began() -> None:
    dynamo = Dynamo()
    DynamoDBScanTally("tally", dynamo).add(HOUR, 1234.9)
    expires = int(datetime(2026, 12, 1, 14, tzinfo=UTC).timestamp())
    assert dynamo.updates == [
        {
            "TableName": "tally",
            "Key": {"hour": {"S": HOUR}},
            "UpdateExpression": "ADD scanned_bytes :scanned SET expires_at = :expires",
            "ExpressionAttributeValues": {":scanned": {"N": "1234"}, ":expires": {"N": str(expires)}},
        }
    ]


@dataclass
class CloudWatch:
    points: list[dict[str, float]] = field(default_factory=list)
    fails: bool = False
    asked: list[dict[str, Any]] = field(default_factory=list)

    def get_metric_statistics(self, **kwargs: Any) -> dict[str, Any]:
        self.asked.append(kwargs)
        if self.fails:
            raise _denied("GetMetricStatistics")
        return {"Datapoints": self.points}


@pytest.mark.parametrize(("seconds", "period"), [(1, 60), (60, 60), (61, 120), (1800, 1800), (1801, 1860)])
def test_the_estimate_is_one_datapoint_a_whole_number_of_minutes_covering_the_window(
    seconds: int, period: int
) -> None:
    cloudwatch = CloudWatch([{"Sum": 1e6}, {"Sum": 2e6}, {}])
    assert CloudWatchIncomingBytes(cloudwatch).estimate(GROUP, END - timedelta(seconds=seconds), END) == 3e6
    assert cloudwatch.asked == [
        {
            "Namespace": "AWS/Logs",
            "MetricName": "IncomingBytes",
            "Dimensions": [{"Name": "LogGroupName", "Value": GROUP}],
            "StartTime": END - timedelta(seconds=seconds),
            "EndTime": END,
            "Period": period,
            "Statistics": ["Sum"],
        }
    ]


def test_an_unreadable_estimate_is_unknown_and_no_datapoint_is_nothing_taken_in() -> None:
    assert CloudWatchIncomingBytes(CloudWatch(fails=True)).estimate(GROUP, START, END) is None
    assert CloudWatchIncomingBytes(CloudWatch()).estimate(GROUP, START, END) == 0.0
    assert CloudWatchIncomingBytes(NoDatapoints()).estimate(GROUP, START, END) == 0.0


class NoDatapoints:
    def get_metric_statistics(self, **kwargs: Any) -> dict[str, Any]:
        return {}


@dataclass
class Tally:
    already: float = 0.0
    unreadable: bool = False
    add_fails: bool = False
    added: list[tuple[str, float]] = field(default_factory=list)

    def spent(self, hour: str) -> float:
        if self.unreadable:
            raise AwsApiError("GetItem failed", aws_code="Throttling")
        return self.already

    def add(self, hour: str, scanned: float) -> None:
        if self.add_fails:
            raise AwsApiError("UpdateItem failed", aws_code="Throttling")
        self.added.append((hour, scanned))


@dataclass
class Incoming:
    bytes: float | None
    asked: list[str] = field(default_factory=list)

    def estimate(self, log_group: str, start: datetime, end: datetime) -> float | None:
        self.asked.append(log_group)
        return self.bytes


@dataclass
class Gate:
    ran: datetime | None = None
    fails: bool = False
    claims: list[tuple[str, datetime, timedelta]] = field(default_factory=list)

    def claim(self, key: str, now: datetime, interval: timedelta) -> datetime | None:
        self.claims.append((key, now, interval))
        if self.fails:
            raise AwsApiError("UpdateItem failed", aws_code="Throttling")
        return self.ran


@dataclass
class Inner:
    """Logs Insights: what it was allowed, and what it reports it scanned (None: unknown)."""

    scanned: float | None = 0.0
    fails: bool = False
    calls: list[tuple[float, float]] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    last_scanned: float | None = 0.0

    def run_query(
        self, log_group: str, query: str, start: datetime, end: datetime, deadline: float, max_bytes: float
    ) -> QueryResult:
        self.calls.append((deadline, max_bytes))
        self.groups.append(log_group)
        self.last_scanned = self.scanned
        if self.fails:
            raise AwsApiError("StartQuery failed", aws_code="Transport", unknown=True)
        return QueryResult("q", [], {})


def _insights(
    *,
    tally: Tally | None = None,
    estimate: float | None = None,
    inner: Inner | None = None,
    gate: Gate | None = None,
    interval: timedelta = timedelta(minutes=10),
    ceiling: float = 1000.0,
) -> tuple[BudgetedInsights, Tally, Inner]:
    tally, inner = tally or Tally(), inner or Inner()
    budget = ScanBudget(ceiling, tally, Incoming(estimate), gate, interval, clock=lambda: NOW)
    return BudgetedInsights(inner, budget), tally, inner  # type: ignore[arg-type]


def _look(insights: BudgetedInsights, deadline: float = 100.0) -> None:
    insights.run_query(GROUP, "fields @message", START, END, deadline)


def _skipped(insights: BudgetedInsights, inner: Inner, match: str) -> None:
    """The look is skipped, naming its log group, before any query."""
    with pytest.raises(LookSkippedError, match=match) as skipped:
        _look(insights)
    assert skipped.value.resource == GROUP
    assert inner.calls == []


@pytest.mark.parametrize(("spent", "runs"), [(999.0, True), (1000.0, False), (1001.0, False)])
def test_a_look_runs_while_any_of_the_hour_is_left(spent: float, runs: bool) -> None:
    insights, tally, inner = _insights(tally=Tally(spent))
    if runs:
        _look(insights)
        assert inner.calls == [(100.0 - SCAN_TALLY_CALL.worst_case_seconds, 1.0)]
        assert inner.groups == [GROUP]
        assert insights.budget.incoming.asked == [GROUP]  # type: ignore[attr-defined]
        return
    with pytest.raises(LookSkippedError) as skipped:
        _look(insights)
    assert (
        skipped.value.message
        == "scan budget: this hour's 1e-06 GB are spent; the look waits for the next hour"
    )
    assert skipped.value.resource == GROUP
    assert (inner.calls, tally.added) == ([], [])


@pytest.mark.parametrize(("estimate", "runs"), [(399.0, True), (400.0, True), (401.0, False)])
def test_a_recheck_runs_when_its_estimate_is_at_most_what_is_left(estimate: float, runs: bool) -> None:
    insights, _, inner = _insights(tally=Tally(600.0), estimate=estimate)
    if runs:
        _look(insights)
        assert inner.calls[0][1] == 400.0
        return
    _skipped(insights, inner, r"^scan budget: 0\.00 GB would pass the 0\.00 GB left")


def test_the_look_a_new_alarm_triggers_runs_past_its_estimate_and_takes_its_slot_once() -> None:
    gate = Gate()
    insights, _, inner = _insights(tally=Tally(600.0), estimate=5000.0, gate=gate)
    insights.policy = LookPolicy(priority=True, alarm="vad")
    _look(insights)
    _look(insights)
    assert [max_bytes for _, max_bytes in inner.calls] == [400.0, 400.0]
    assert gate.claims == [("vad", NOW, timedelta(minutes=10))], "one slot per invocation"
    assert insights.policy.claimed


def test_a_persons_look_and_an_unlimited_alarm_take_no_slot_and_run() -> None:
    gate = Gate(ran=NOW)
    for alarm, interval, with_gate in (
        ("", timedelta(minutes=10), True),
        ("vad", timedelta(0), True),
        ("vad", timedelta(minutes=10), False),
    ):
        insights, _, inner = _insights(estimate=5000.0, gate=gate if with_gate else None, interval=interval)
        insights.policy = LookPolicy(priority=True, alarm=alarm or None)
        _look(insights)
        assert len(inner.calls) == 1
    assert gate.claims == []


def test_an_alarm_whose_slot_is_taken_skips_its_look_saying_when_the_last_one_ran() -> None:
    insights, _, inner = _insights(estimate=5.0, gate=Gate(ran=NOW - timedelta(minutes=3)))
    insights.policy = LookPolicy(priority=True, alarm="vad")
    with pytest.raises(LookSkippedError) as skipped:
        _look(insights)
    assert skipped.value.message == (
        "scan budget: vad flaps; its last look ran at 12:27 UTC and it gets one look per 10 min "
        "(scan_budget.alarm_look_minutes), so this one is skipped"
    )
    assert skipped.value.resource == GROUP
    assert inner.calls == []
    assert not insights.policy.claimed


def test_an_alarm_whose_slot_cannot_be_recorded_waits() -> None:
    insights, _, inner = _insights(estimate=5.0, gate=Gate(fails=True))
    insights.policy = LookPolicy(priority=True, alarm="vad")
    _skipped(insights, inner, r"^scan budget: could not record this look for vad")


def test_an_unreadable_tally_skips_the_look_as_unknown_spend_is_not_zero() -> None:
    insights, tally, inner = _insights(tally=Tally(unreadable=True), estimate=1.0)
    with pytest.raises(LookSkippedError) as skipped:
        _look(insights)
    assert skipped.value.message == (
        "scan budget: this hour's spend is unreadable (GetItem failed); the look waits, "
        "as unknown spend is not zero"
    )
    assert (skipped.value.resource, inner.calls, tally.added) == (GROUP, [], [])


@pytest.mark.usefixtures("seoul")
def test_a_look_is_counted_in_its_utc_hour_whatever_the_local_time_zone() -> None:
    insights, tally, _ = _insights(estimate=10.0)
    _look(insights)
    assert tally.added == [(HOUR, 0.0)]


@pytest.mark.parametrize(
    ("scanned", "estimate", "counted"),
    [
        (250.0, 300.0, 250.0),  # what it reported
        (0.0, 300.0, 0.0),  # a look that reported nothing scanned
        (None, 300.0, 300.0),  # unknown: its estimate
        (None, 900.0, 800.0),  # an estimate past what was left: what was left
        (None, None, 800.0),  # no estimate: all it was allowed
        (None, 0.0, 800.0),  # a zero estimate (IncomingBytes lags): all it was allowed
    ],
)
def test_every_look_counts_what_it_scanned_else_its_estimate_else_all_it_was_allowed(
    scanned: float | None, estimate: float | None, counted: float
) -> None:
    insights, tally, _ = _insights(tally=Tally(200.0), estimate=estimate, inner=Inner(scanned))
    insights.policy = LookPolicy(priority=True)
    _look(insights)
    assert tally.added == [(HOUR, counted)]


def test_a_look_that_failed_is_counted_once_and_a_failed_add_is_the_policys_problem() -> None:
    insights, tally, _ = _insights(estimate=100.0, inner=Inner(None, fails=True))
    with pytest.raises(AwsApiError):
        _look(insights)
    assert tally.added == [(HOUR, 100.0)]
    problems: list[RemediationError] = []
    insights, _, _ = _insights(tally=Tally(add_fails=True), estimate=100.0)
    insights.policy = LookPolicy(problem=problems.append)
    _look(insights)
    assert [p.message for p in problems] == ["UpdateItem failed"]


def test_a_stage_runs_under_its_policy_and_the_previous_one_comes_back() -> None:
    insights, _, _ = _insights()
    before, during = insights.policy, LookPolicy(priority=True, alarm="vad")
    with looking(insights, during):
        assert insights.policy is during
    assert insights.policy is before
    with pytest.raises(RuntimeError), looking(insights, during):
        raise RuntimeError
    assert insights.policy is before
    stand_in = object()
    with looking(stand_in, during):
        pass


@pytest.mark.parametrize(
    ("gb", "table", "is_budgeted"), [(10.0, "tally", True), (0.0, "tally", False), (10.0, None, False)]
)
def test_logs_insights_is_budgeted_with_a_ceiling_and_a_table(
    monkeypatch: pytest.MonkeyPatch, gb: float, table: str | None, is_budgeted: bool
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    inner = object()
    section = ScanBudgetSection(gb_per_hour=gb, alarm_look_minutes=7)
    found = budgeted(inner, section, table)  # type: ignore[arg-type]
    if not is_budgeted:
        assert found is inner
        return
    assert isinstance(found, BudgetedInsights)
    assert found.inner is inner
    budget = found.budget
    assert (budget.bytes_per_hour, budget.alarm_look_interval) == (10e9, timedelta(minutes=7))
    assert isinstance(budget.tally, DynamoDBScanTally)
    assert budget.tally.table_name == "tally"
    assert isinstance(budget.incoming, CloudWatchIncomingBytes)
    assert isinstance(budget.gate, DynamoDBLookGate)
    assert budget.gate.table_name == "tally"
    assert budget.clock().tzinfo is UTC


def test_a_budget_refusal_is_a_skipped_look_and_any_other_error_an_error() -> None:
    noted = Noted()
    note_look_error(noted, LookSkippedError("scan budget: spent", resource="/agents"))
    note_look_error(noted, ScanStoppedError("scan budget: stopped", scanned=1.0))
    failed = AwsApiError("StartQuery failed", aws_code="Throttling")
    note_look_error(noted, failed)
    assert noted.pending == [
        Skipped("/agents", "scan budget: spent"),
        Skipped("logs-insights", "scan budget: stopped"),
        failed,
    ]
    assert budget_refusal(LookSkippedError("x"))
    assert budget_refusal(ScanStoppedError("x", scanned=1.0))
    assert not budget_refusal(failed)
