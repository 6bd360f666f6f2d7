"""The Logs Insights scan budget (``ScanBudgetSection``): a ceiling on the bytes the functions' looks
scan per clock hour, kept in one DynamoDB item per hour that the responder and the drainer both add
to atomically (``ADD``; the item expires after two hours).

Before a look: the hour's tally and the log group's ``IncomingBytes`` over the look's window (what
the look will scan, near enough: a look scans every byte of its range). A re-check whose estimate
passes what is left, or whose tally cannot be read (unknown spend is not zero), is skipped; one
that runs is stopped when its ``bytesScanned`` passes what is left. A look triggered by a new ALARM
(``priority``) always runs to its end. After every look its bytes scanned are added to the tally,
once: an ADD that may have landed is never sent again (docs/decisions/0008-one-outcome-rule.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.adapters.logs_insights import CloudWatchLogsInsights, QueryResult, ScanStoppedError
from fleet_remediation.contract.budgets import SCAN_ESTIMATE_READ, SCAN_TALLY_CALL
from fleet_remediation.core.errors import AwsApiError, RemediationError, aws_api_errors
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Decision

TALLY_TTL = timedelta(hours=2)


class LookSkippedError(RemediationError):
    """A re-check was not run: the hour's scan budget could not take it."""

    code = "ScanBudgetSkipped"


class ScanTally(Protocol):
    def spent(self, hour: str) -> float:
        """Bytes the hour's looks scanned so far; ``AwsApiError`` when unreadable."""
        ...

    def add(self, hour: str, scanned: float) -> None: ...


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
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))


@dataclass
class LookPolicy:
    """This invocation's rule: whether its looks go ahead whatever the budget, and where problems
    with the tally go (the report)."""

    priority: bool = False
    problem: Callable[[RemediationError], None] = lambda _: None


class BudgetedInsights:
    """``LogsInsights`` under the scan budget: Logs Insights itself, estimated, stopped and counted."""

    def __init__(self, inner: CloudWatchLogsInsights, budget: ScanBudget) -> None:
        self.inner, self.budget = inner, budget
        self.policy = LookPolicy()

    def run_query(
        self, log_group: str, query: str, start: datetime, end: datetime, deadline: float
    ) -> QueryResult:
        hour = self.budget.clock().astimezone(UTC).strftime("%Y-%m-%dT%H")
        left = self._left(hour, log_group, start, end)
        # The tally's ADD is kept free after the look.
        query_deadline = deadline - SCAN_TALLY_CALL.worst_case_seconds
        try:
            result = self.inner.run_query(log_group, query, start, end, query_deadline, max_bytes=left)
        except ScanStoppedError as exc:
            self._count(hour, exc.scanned)
            raise
        self._count(hour, result.statistics.get("bytesScanned", 0.0))
        return result

    def _left(self, hour: str, log_group: str, start: datetime, end: datetime) -> float | None:
        """What this look may scan (None: no limit); a re-check that cannot fit is skipped."""
        try:
            left = self.budget.bytes_per_hour - self.budget.tally.spent(hour)
        except AwsApiError as exc:
            if self.policy.priority:
                self.policy.problem(exc)
                return None
            raise LookSkippedError(
                f"scan budget: this hour's spend is unreadable ({exc.message}); a re-check waits",
                resource=log_group,
            ) from None
        if self.policy.priority:
            return None
        estimate = self.budget.incoming.estimate(log_group, start, end)
        if left <= 0 or (estimate is not None and estimate > left):
            gb = f"{(estimate or 0) / 1e9:.2f} GB" if estimate is not None else "its window"
            raise LookSkippedError(
                f"scan budget: {gb} would pass the {max(left, 0) / 1e9:.2f} GB left this hour "
                f"of {self.budget.bytes_per_hour / 1e9:g} GB",
                resource=log_group,
            )
        return left

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


def budgeted(inner: CloudWatchLogsInsights, bytes_per_hour: float | None, table_name: str | None) -> Any:
    """Logs Insights under the budget when one is configured, else as it is."""
    if bytes_per_hour is None or table_name is None:
        return inner
    return BudgetedInsights(
        inner, ScanBudget(bytes_per_hour, DynamoDBScanTally(table_name), CloudWatchIncomingBytes())
    )


def budget_refusal(exc: RemediationError) -> bool:
    """A look the scan budget skipped or stopped: a skipped candidate in the report (the log group,
    and why), not an error: the budget did its job, the invocation did not fail."""
    return isinstance(exc, LookSkippedError | ScanStoppedError)


def note_look_error(report: ReportBuilder, exc: RemediationError) -> None:
    if budget_refusal(exc):
        report.candidate(exc.resource or "logs-insights", Decision.SKIP, exc.message)
    else:
        report.error(exc)
