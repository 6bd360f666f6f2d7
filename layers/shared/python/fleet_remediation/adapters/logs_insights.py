"""CloudWatch Logs Insights adapter: StartQuery, then GetQueryResults until the query completes or
the deadline (always shorter than the caller's) passes; failures become typed errors. An API call
starts only while its worst case (``LOGS_INSIGHTS_CALL`` for the adapter's own client) still ends
before the deadline, with one more kept for the StopQuery of a query that does not finish (an
abandoned query keeps counting against the account's concurrency limit): however long the polls
ran, the stop is sent.

A look under the scan budget (``adapters/scan_budget.py``) passes ``max_bytes``: the query is stopped
once its ``bytesScanned`` statistic (GetQueryResults reports it while the query runs) passes it.

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
from fleet_remediation.contract.budgets import LOGS_INSIGHTS_CALL, LOGS_INSIGHTS_STOP
from fleet_remediation.core.errors import AwsApiError, DeadlineExceededError, RemediationError, aws_api_errors

if TYPE_CHECKING:
    from mypy_boto3_logs import CloudWatchLogsClient

Row = dict[str, str]
DONE = "Complete"
FAILED_STATUSES = frozenset({"Failed", "Cancelled", "Timeout", "Unknown"})


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
    """``call_seconds``: the longest one API call can take. The adapter's own clients are built from
    ``LOGS_INSIGHTS_CALL`` (and ``LOGS_INSIGHTS_STOP`` for the stop) and count their worst cases; an
    injected client's calls are its caller's to bound (0 unless given, the stop's too)."""

    def __init__(
        self,
        client: CloudWatchLogsClient | None = None,
        *,
        poll_interval_seconds: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        call_seconds: float | None = None,
    ) -> None:
        self._client = client or aws_client(LOGS_INSIGHTS_CALL)
        self._stop_client = client or aws_client(LOGS_INSIGHTS_STOP)
        if call_seconds is None:
            call_seconds = LOGS_INSIGHTS_CALL.worst_case_seconds if client is None else 0.0
        self._call_seconds = call_seconds
        self._stop_seconds = LOGS_INSIGHTS_STOP.worst_case_seconds if client is None else call_seconds
        self._poll = poll_interval_seconds
        self._sleep = sleep
        self._monotonic = monotonic

    def run_query(
        self,
        log_group: str,
        query: str,
        start: datetime,
        end: datetime,
        deadline: float,
        max_bytes: float | None = None,
    ) -> QueryResult:
        if self._monotonic() + self._call_seconds + self._stop_seconds > deadline:
            raise DeadlineExceededError("no time left to start a Logs Insights query", resource=log_group)
        started: Any = self._call(
            "StartQuery",
            log_group,
            lambda: self._client.start_query(
                logGroupName=log_group,
                startTime=int(start.timestamp()),
                endTime=int(end.timestamp()),
                queryString=query,
            ),
        )
        query_id = str(started["queryId"])
        try:
            return self._results(log_group, query_id, deadline, max_bytes)
        except (DeadlineExceededError, AwsApiError) as exc:
            if not _ended(exc):
                self._stop(query_id)
            raise

    def _results(
        self, log_group: str, query_id: str, deadline: float, max_bytes: float | None
    ) -> QueryResult:
        """Polls until the query completes; one call's time is always left for its stop."""
        while True:
            response: Any = self._call(
                "GetQueryResults", log_group, lambda: self._client.get_query_results(queryId=query_id)
            )
            status = response.get("status")
            statistics = {k: float(v) for k, v in response.get("statistics", {}).items()}
            if status == DONE:
                rows = rows_from_results(response.get("results", []))
                return QueryResult(query_id=query_id, rows=rows, statistics=statistics)
            scanned = statistics.get("bytesScanned", 0.0)
            if max_bytes is not None and scanned > max_bytes:
                self._stop(query_id)
                raise ScanStoppedError(
                    f"scan budget: Logs Insights query {query_id} stopped at {scanned / 1e9:.2f} GB "
                    f"scanned, the budget had {max_bytes / 1e9:.2f} GB left this hour",
                    scanned=scanned,
                    resource=log_group,
                )
            if status in FAILED_STATUSES:
                raise AwsApiError(
                    f"Logs Insights query {query_id} ended with status {status}",
                    aws_code=f"Query{status}",
                    resource=log_group,
                )
            if self._monotonic() + self._poll + self._call_seconds + self._stop_seconds > deadline:
                raise DeadlineExceededError(
                    f"Logs Insights query {query_id} still {status} at the deadline", resource=log_group
                )
            self._sleep(self._poll)

    def _stop(self, query_id: str) -> None:
        # Best effort: an abandoned query keeps counting against the account's concurrency limit.
        with contextlib.suppress(ClientError, BotoCoreError):
            self._stop_client.stop_query(queryId=query_id)

    @staticmethod
    def _call(operation: str, log_group: str, call: Callable[[], object]) -> object:
        with aws_api_errors(f"Logs {operation}", log_group):
            return call()
