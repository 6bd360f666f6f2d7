"""CloudWatch Logs Insights adapter: StartQuery, then GetQueryResults until the query completes or
the deadline (always shorter than the caller's) passes; failures become typed errors.

Each call has its own client and budget (``LOGS_INSIGHTS_START``, ``_POLL``, ``_STOP``), injected
clients included: a test runs under the same budgets production does. StartQuery creates a query,
so it is sent once; a lost reply (a read timeout, a 5xx, a reset) leaves a query that may be running
and cannot be stopped without its id: an ``AwsApiError`` with ``unknown`` set. A failed poll is a
poll missed: the loop polls again while time is left. A poll starts only while its call and the
StopQuery still fit before the deadline: only the stop is kept free, so however long the polls ran,
an abandoned query (which keeps counting against the account's concurrency quota) is stopped.

A look under the scan budget (``adapters/scan_budget.py``) passes ``max_bytes``: the query is stopped
once its ``bytesScanned`` statistic (GetQueryResults reports it while the query runs) passes it.
``last_scanned`` keeps what the last look scanned however it ended: its last statistics, 0 when no
query was started, None when one may run but no statistics were seen.

Rows come back as plain dicts (``{"@logStream": "...", "failed": "3"}``; Insights returns every
value as a string) without the ``@ptr`` field.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.contract.budgets import (
    LOGS_INSIGHTS_POLL,
    LOGS_INSIGHTS_POLL_INTERVAL_SECONDS,
    LOGS_INSIGHTS_QUERY_FLOOR_SECONDS,
    LOGS_INSIGHTS_START,
    LOGS_INSIGHTS_STOP,
    SCAN_BUDGET_LOOK_SECONDS,
)
from fleet_remediation.core.errors import (
    NO_REPLY,
    AwsApiError,
    DeadlineExceededError,
    RemediationError,
    aws_api_errors,
)

if TYPE_CHECKING:
    from mypy_boto3_logs import CloudWatchLogsClient

Row = dict[str, str]
DONE = "Complete"
FAILED_STATUSES = frozenset({"Failed", "Cancelled", "Timeout", "Unknown"})
# A poll that failed this way read nothing and changed nothing: the next poll reads again.
_MISSED_POLL_CODES = frozenset({"ThrottlingException", "ServiceUnavailableException", NO_REPLY})
# Kept free after a poll starts: its own call and the stop of a query it finds still running.
_POLL_AND_STOP_SECONDS = LOGS_INSIGHTS_POLL.worst_case_seconds + LOGS_INSIGHTS_STOP.worst_case_seconds


class ScanStoppedError(RemediationError):
    """A running look was stopped: its bytes scanned passed what the hour's scan budget had left."""

    code = "ScanBudgetStopped"

    def __init__(self, message: str, *, scanned: float, resource: str | None = None) -> None:
        super().__init__(message, resource=resource)
        self.scanned = scanned


@dataclass(frozen=True)
class QueryResult:
    query_id: str
    rows: list[Row]
    statistics: dict[str, float]


class LogsInsights(Protocol):
    def run_query(
        self, log_group: str, query: str, start: datetime, end: datetime, deadline: float
    ) -> QueryResult:
        """Run ``query`` over [start, end); ``deadline`` is a ``time.monotonic()`` instant."""
        ...


def rows_from_results(results: list[list[dict[str, str]]]) -> list[Row]:
    """``[[{"field": ..., "value": ...}, ...], ...]`` → ``[{field: value, ...}, ...]`` minus ``@ptr``."""
    return [
        {cell["field"]: cell.get("value", "") for cell in row if cell.get("field") != "@ptr"}
        for row in results
    ]


def _ended(error: Exception) -> bool:
    """The query itself ended (failed, cancelled, timed out): there is nothing left to stop."""
    return isinstance(error, AwsApiError) and error.aws_code.startswith("Query")


class CloudWatchLogsInsights:
    """``client``: one boto3 ``logs`` client for every call (tests, the replay); otherwise each call's
    own, built from its budget. The budgets bound the calls either way."""

    def __init__(
        self,
        client: CloudWatchLogsClient | None = None,
        *,
        poll_interval_seconds: float = LOGS_INSIGHTS_POLL_INTERVAL_SECONDS,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._start_client = client or aws_client(LOGS_INSIGHTS_START)
        self._client = client or aws_client(LOGS_INSIGHTS_POLL)
        self._stop_client = client or aws_client(LOGS_INSIGHTS_STOP)
        self._poll = poll_interval_seconds
        self._sleep = sleep
        self._monotonic = monotonic
        self.last_scanned: float | None = 0.0

    def run_query(
        self,
        log_group: str,
        query: str,
        start: datetime,
        end: datetime,
        deadline: float,
        max_bytes: float | None = None,
    ) -> QueryResult:
        self.last_scanned = 0.0
        if self._monotonic() + LOGS_INSIGHTS_QUERY_FLOOR_SECONDS - SCAN_BUDGET_LOOK_SECONDS > deadline:
            raise DeadlineExceededError("no time left to start a Logs Insights query", resource=log_group)
        query_id = self._start(log_group, query, start, end)
        self.last_scanned = None
        try:
            return self._results(log_group, query_id, deadline, max_bytes)
        except (DeadlineExceededError, AwsApiError) as exc:
            if not _ended(exc):
                self._stop(query_id)
            raise

    def _start(self, log_group: str, query: str, start: datetime, end: datetime) -> str:
        try:
            started: Any = self._call(
                "StartQuery",
                log_group,
                lambda: self._start_client.start_query(
                    logGroupName=log_group,
                    startTime=int(start.timestamp()),
                    endTime=int(end.timestamp()),
                    queryString=query,
                ),
            )
        except AwsApiError as exc:
            if not exc.unknown:
                raise
            self.last_scanned = None
            raise AwsApiError(
                f"{exc.message}; the reply was lost, so a query may be running that cannot be stopped "
                "without its id (not sent again; its scan is counted as the estimate)",
                aws_code=exc.aws_code,
                resource=log_group,
                unknown=True,
            ) from exc
        return str(started["queryId"])

    def _results(
        self, log_group: str, query_id: str, deadline: float, max_bytes: float | None
    ) -> QueryResult:
        """Polls until the query completes; the stop's time is always left free."""
        while True:
            response = self._poll_once(log_group, query_id)
            status = response.get("status") if response is not None else "unread (its polls failed)"
            if response is not None:
                statistics = {k: float(v) for k, v in response.get("statistics", {}).items()}
                self.last_scanned = statistics.get("bytesScanned", self.last_scanned)
                if status == DONE:
                    rows = rows_from_results(response.get("results", []))
                    return QueryResult(query_id=query_id, rows=rows, statistics=statistics)
                self._check_scan(log_group, query_id, max_bytes)
                if status in FAILED_STATUSES:
                    raise AwsApiError(
                        f"Logs Insights query {query_id} ended with status {status}",
                        aws_code=f"Query{status}",
                        resource=log_group,
                    )
            wait = min(self._poll, deadline - self._monotonic() - _POLL_AND_STOP_SECONDS)
            if wait <= 0:
                raise DeadlineExceededError(
                    f"Logs Insights query {query_id} still {status} at the deadline", resource=log_group
                )
            self._sleep(wait)

    def _poll_once(self, log_group: str, query_id: str) -> dict[str, Any] | None:
        """One GetQueryResults; None when the poll was missed (throttled, no reply, a 5xx)."""
        try:
            response: Any = self._call(
                "GetQueryResults", log_group, lambda: self._client.get_query_results(queryId=query_id)
            )
        except AwsApiError as exc:
            if exc.unknown or exc.aws_code in _MISSED_POLL_CODES:
                return None
            raise
        return dict(response)

    def _check_scan(self, log_group: str, query_id: str, max_bytes: float | None) -> None:
        scanned = self.last_scanned or 0.0
        if max_bytes is not None and scanned > max_bytes:
            self._stop(query_id)
            raise ScanStoppedError(
                f"scan budget: Logs Insights query {query_id} stopped at {scanned / 1e9:.2f} GB "
                f"scanned, the budget had {max_bytes / 1e9:.2f} GB left this hour",
                scanned=scanned,
                resource=log_group,
            )

    def _stop(self, query_id: str) -> None:
        # Best effort: an abandoned query keeps counting against the account's concurrency limit.
        with contextlib.suppress(ClientError, BotoCoreError):
            self._stop_client.stop_query(queryId=query_id)

    @staticmethod
    def _call(operation: str, log_group: str, call: Callable[[], object]) -> object:
        with aws_api_errors(f"Logs {operation}", log_group):
            return call()
