"""The Logs Insights scan budget (``ScanBudgetSection``): a ceiling on the bytes the functions' looks
scan per clock hour, kept in one DynamoDB item per hour that the responder and the drainer of every
agent service of the environment add to atomically (``ADD``; the item expires after two hours).

Before a look: the hour's tally and the log group's ``IncomingBytes`` over the look's window (what
the look will scan, near enough: a look scans every byte of its range). Any look is skipped when the
tally cannot be read (unknown spend is not zero) or the hour is spent; a re-check is also skipped
when its estimate passes what is left. A look a new ALARM triggers (``priority``) is not held back
by its estimate, but at most one runs per alarm per ``alarm_look_minutes`` (a flapping alarm), and
every look that runs is stopped when its ``bytesScanned`` passes what is left. After every look,
however it ended (complete, stopped, past its deadline, failed, or a StartQuery whose reply was
lost), its bytes are added to the tally once: the last ``bytesScanned`` seen, else its estimate,
else all it was allowed (a query that may have run is not free); an ADD
that may have landed is never sent again (docs/decisions/0008-one-outcome-rule.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.adapters.logs_insights import CloudWatchLogsInsights, QueryResult, ScanStoppedError
from fleet_remediation.adapters.scan_look_gate import DynamoDBLookGate
from fleet_remediation.contract.budgets import SCAN_ESTIMATE_READ, SCAN_TALLY_CALL
from fleet_remediation.core.errors import AwsApiError, RemediationError, aws_api_errors
from fleet_remediation.core.notes import Noted

if TYPE_CHECKING:
    from fleet_remediation.contract.sections import ScanBudgetSection

TALLY_TTL = timedelta(hours=2)


class LookSkippedError(RemediationError):
    """A re-check was not run: the hour's scan budget could not take it."""

    code = "ScanBudgetSkipped"


class ScanTally(Protocol):
    def spent(self, hour: str) -> float:
        """Bytes the hour's looks scanned so far; ``AwsApiError`` when unreadable."""
        ...

    def add(self, hour: str, scanned: float) -> None: ...


class LookGate(Protocol):
    def claim(self, key: str, now: datetime, interval: timedelta) -> datetime | None:
        """Take ``key``'s look slot until ``now + interval``: None when taken, else when the look
        that holds it ran; ``AwsApiError`` when the outcome is unknown."""
        ...


class IncomingBytes(Protocol):
    def estimate(self, log_group: str, start: datetime, end: datetime) -> float | None:
        """The bytes ``log_group`` took in over [start, end); None when unknown."""
        ...


class DynamoDBScanTally:
    def __init__(self, table_name: str, client: Any = None) -> None:
        self.table_name = table_name
        self._client = client or aws_client(SCAN_TALLY_CALL)

    def spent(self, hour: str) -> float:
        with aws_api_errors("DynamoDB GetItem (scan tally)", self.table_name):
            found = self._client.get_item(
                TableName=self.table_name, Key={"hour": {"S": hour}}, ConsistentRead=True
            )
        if "Item" not in found:
            return 0.0  # no look this hour yet: the first ADD creates the item
        try:
            return float(found["Item"]["scanned_bytes"]["N"])
        except (KeyError, TypeError, ValueError):
            # Unknown spend is not zero: an item without a readable count is unreadable.
            raise AwsApiError(
                "DynamoDB GetItem (scan tally) failed: the hour's item holds no readable scanned_bytes",
                aws_code="MalformedTally",
                resource=self.table_name,
            ) from None

    def add(self, hour: str, scanned: float) -> None:
        expires = int((datetime.strptime(hour, "%Y-%m-%dT%H").replace(tzinfo=UTC) + TALLY_TTL).timestamp())
        with aws_api_errors("DynamoDB UpdateItem (scan tally)", self.table_name):
            self._client.update_item(
                TableName=self.table_name,
                Key={"hour": {"S": hour}},
                UpdateExpression="ADD scanned_bytes :scanned SET expires_at = :expires",
                ExpressionAttributeValues={
                    ":scanned": {"N": str(int(scanned))},
                    ":expires": {"N": str(expires)},
                },
            )


class CloudWatchIncomingBytes:
    """``AWS/Logs IncomingBytes`` of a log group, summed over a window (one datapoint per window)."""

    def __init__(self, client: Any = None) -> None:
        self._client = client or aws_client(SCAN_ESTIMATE_READ)

    def estimate(self, log_group: str, start: datetime, end: datetime) -> float | None:
        period = max(60, int((end - start).total_seconds() + 59) // 60 * 60)
        try:
            with aws_api_errors("CloudWatch GetMetricStatistics (IncomingBytes)", log_group):
                found = self._client.get_metric_statistics(
                    Namespace="AWS/Logs",
                    MetricName="IncomingBytes",
                    Dimensions=[{"Name": "LogGroupName", "Value": log_group}],
                    StartTime=start,
                    EndTime=end,
                    Period=period,
                    Statistics=["Sum"],
                )
        except AwsApiError:
            return None
        return float(sum(point.get("Sum", 0.0) for point in found.get("Datapoints", [])))


@dataclass
class ScanBudget:
    bytes_per_hour: float
    tally: ScanTally
    incoming: IncomingBytes
    gate: LookGate | None = None
    alarm_look_interval: timedelta = timedelta(0)
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))


@dataclass
class LookPolicy:
    """This invocation's rule: whether its looks answer a new ALARM (not held back by their
    estimate), the alarm whose looks are rate-limited (None: a person's run, not limited), and
    where problems with the tally go (the run's notes)."""

    priority: bool = False
    problem: Callable[[RemediationError], None] = lambda _: None
    alarm: str | None = None
    # Set once this invocation holds its alarm's look slot: its further looks are the same answer.
    claimed: bool = False


class BudgetedInsights:
    """``LogsInsights`` under the scan budget: Logs Insights itself, estimated, stopped and counted."""

    def __init__(self, inner: CloudWatchLogsInsights, budget: ScanBudget) -> None:
        self.inner, self.budget = inner, budget
        self.policy = LookPolicy()

    def run_query(
        self, log_group: str, query: str, start: datetime, end: datetime, deadline: float
    ) -> QueryResult:
        hour = self.budget.clock().astimezone(UTC).strftime("%Y-%m-%dT%H")
        left, estimate = self._left(hour, log_group, start, end)
        # The tally's ADD is kept free after the look.
        query_deadline = deadline - SCAN_TALLY_CALL.worst_case_seconds
        try:
            result = self.inner.run_query(log_group, query, start, end, query_deadline, max_bytes=left)
        finally:
            self._count(hour, self._scanned(estimate, left))
        return result

    def _scanned(self, estimate: float | None, left: float) -> float:
        """What the look scanned, however it ended: the last ``bytesScanned`` its query reported;
        unknown, its estimate (a look scans at most its window), or without one (or a zero one:
        IncomingBytes lags) all it might have."""
        if self.inner.last_scanned is not None:
            return self.inner.last_scanned
        return min(estimate, left) if estimate else left

    def _left(self, hour: str, log_group: str, start: datetime, end: datetime) -> tuple[float, float | None]:
        """What this look may scan and its estimate; a look that cannot run is skipped."""
        try:
            left = self.budget.bytes_per_hour - self.budget.tally.spent(hour)
        except AwsApiError as exc:
            raise LookSkippedError(
                f"scan budget: this hour's spend is unreadable ({exc.message}); the look waits, "
                "as unknown spend is not zero",
                resource=log_group,
            ) from None
        ceiling = f"{self.budget.bytes_per_hour / 1e9:g} GB"
        if left <= 0:
            raise LookSkippedError(
                f"scan budget: this hour's {ceiling} are spent; the look waits for the next hour",
                resource=log_group,
            )
        estimate = self.budget.incoming.estimate(log_group, start, end)
        if not self.policy.priority and estimate is not None and estimate > left:
            raise LookSkippedError(
                f"scan budget: {estimate / 1e9:.2f} GB would pass the {left / 1e9:.2f} GB left this hour "
                f"of {ceiling}",
                resource=log_group,
            )
        if self.policy.priority and self.policy.alarm is not None and not self.policy.claimed:
            self._claim(self.policy.alarm, log_group)
            self.policy.claimed = True
        return left, estimate

    def _claim(self, alarm: str, log_group: str) -> None:
        """At most one look per alarm per interval, whichever function and invocation asks."""
        interval, gate = self.budget.alarm_look_interval, self.budget.gate
        if gate is None or interval <= timedelta(0):
            return
        try:
            ran = gate.claim(alarm, self.budget.clock(), interval)
        except AwsApiError as exc:
            raise LookSkippedError(
                f"scan budget: could not record this look for {alarm} ({exc.message}); it waits, "
                "as another may be running",
                resource=log_group,
            ) from None
        if ran is not None:
            minutes = interval.total_seconds() / 60
            raise LookSkippedError(
                f"scan budget: {alarm} flaps; its last look ran at {ran:%H:%M} UTC and it gets one "
                f"look per {minutes:g} min (scan_budget.alarm_look_minutes), so this one is skipped",
                resource=log_group,
            )

    def _count(self, hour: str, scanned: float) -> None:
        try:
            self.budget.tally.add(hour, scanned)
        except AwsApiError as exc:
            self.policy.problem(exc)


@contextlib.contextmanager
def looking(insights: object, policy: LookPolicy) -> Iterator[None]:
    """Run a stage under ``policy`` when ``insights`` is budgeted (in tests and the replay it may be
    a stand-in without a budget: nothing to do)."""
    if not isinstance(insights, BudgetedInsights):
        yield
        return
    previous, insights.policy = insights.policy, policy
    try:
        yield
    finally:
        insights.policy = previous


def budgeted(inner: CloudWatchLogsInsights, section: ScanBudgetSection, table_name: str | None) -> Any:
    """Logs Insights under the budget when one is configured, else as it is."""
    if section.bytes_per_hour is None or table_name is None:
        return inner
    return BudgetedInsights(
        inner,
        ScanBudget(
            section.bytes_per_hour,
            DynamoDBScanTally(table_name),
            CloudWatchIncomingBytes(),
            gate=DynamoDBLookGate(table_name),
            alarm_look_interval=timedelta(minutes=section.alarm_look_minutes),
        ),
    )


def budget_refusal(exc: RemediationError) -> bool:
    """A look the scan budget skipped or stopped: a skipped candidate in the report (the log group,
    and why), not an error: the budget did its job, the invocation did not fail."""
    return isinstance(exc, LookSkippedError | ScanStoppedError)


def note_look_error(noted: Noted, exc: RemediationError) -> None:
    if budget_refusal(exc):
        noted.skip(exc.resource or "logs-insights", exc.message)
    else:
        noted.error(exc)
