"""Explicit in-memory fakes for AWS behaviour moto does not implement."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from fleet_remediation.adapters.logs_insights import CloudWatchLogsInsights, QueryResult, rows_from_results
from fleet_remediation.core.errors import DeadlineExceededError
from livekit_fleet_remediation.offline.service_profile import (
    AWS_PROFILE,
    RateLimiter,
    ServiceProfile,
    SimulatedClock,
)


@dataclass
class FakeLogsInsights:
    """Stands in for ``CloudWatchLogsInsights``: moto has no Logs Insights query engine (StartQuery
    there returns no statistics), so each call returns the next canned ``results`` payload, shaped
    exactly like the real GetQueryResults ``results`` ([[{"field": ..., "value": ...}, ...], ...]),
    and records the query it was asked to run."""

    responses: list[list[list[dict[str, str]]]] = field(default_factory=list)
    calls: list[dict[str, object]] = field(default_factory=list)
    exceed_deadline: bool = False

    def run_query(
        self, log_group: str, query: str, start: datetime, end: datetime, deadline: float
    ) -> QueryResult:
        self.calls.append({"log_group": log_group, "query": query, "start": start, "end": end})
        if self.exceed_deadline:
            raise DeadlineExceededError("fake query still Running at the deadline", resource=log_group)
        results = self.responses.pop(0) if self.responses else []
        return QueryResult(query_id=f"fake-{len(self.calls)}", rows=rows_from_results(results), statistics={})


def insights_row(values: dict[str, object]) -> list[dict[str, str]]:
    """One result row as the API returns it (every value a string, plus the @ptr field)."""
    cells = [{"field": key, "value": str(value)} for key, value in values.items()]
    return [*cells, {"field": "@ptr", "value": "CmAKJwojMTIzNDU2Nzg5MDEyOi9wcGkvbGl2ZWtpdC9wcm9kL2FnZW50"}]


# What the service enforces, as the strict fake below does.
INSIGHTS_MAX_ROWS = 10_000
INSIGHTS_MAX_QUERY_CHARS = 10_000
INSIGHTS_TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f"
_LIMIT = re.compile(r"\|\s*limit\s+(\d+)\s*$", re.MULTILINE)


def insights_value(value: object) -> str:
    """A result value as Insights returns it: a string; timestamps as ``2026-09-15 17:32:53.000``."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime(INSIGHTS_TIME_FORMAT)[:-3]
    return str(value)


@dataclass
class _Query:
    rows: list[dict[str, object]]
    started_at: float = 0.0
    polls: int = 0
    stopped_at: float | None = None

    @property
    def stopped(self) -> bool:
        return self.stopped_at is not None


@dataclass
class FakeInsightsClient:
    """A strict stand-in for the boto3 ``logs`` client's StartQuery / GetQueryResults / StopQuery,
    so the real ``CloudWatchLogsInsights`` adapter runs its polling, deadline and error handling
    (moto has no Logs Insights engine).

    Like the service: results are at most the query's ``limit`` and never more than 10,000 rows;
    every value is a string and datetimes come in Insights' own format; a query string over 10,000
    characters or a time range that ends before it starts is an InvalidParameterException; more than
    the profile's concurrent queries running is a LimitExceededException, StartQuery or
    GetQueryResults calls over their rate a ThrottlingException. ``responder(query, start, end)``
    produces the rows (e.g. from exported log events).

    Timing, on ``clock`` (a ``SimulatedClock`` the adapter sleeps on, so no wall time passes): a
    query is ``Scheduled`` for the profile's queue time, ``Running`` for its run time over
    ``scan_bytes``, then ends with ``final_status`` (Complete, Failed, Timeout or Cancelled), all at
    ``quantile`` (the p99 unless a test asks for another): the slow query is the default. A stopped
    query reads ``Cancelled``. Without a clock (tests that count polls) a query is ``Scheduled``,
    then ``Running`` for ``running_polls`` polls (None: for ever).

    Statistics on every GetQueryResults, running or complete: ``bytesScanned`` cumulative (with a
    clock, the share of ``scan_bytes`` its run has reached; without, ``bytes_per_poll`` per poll),
    with ``recordsMatched`` and ``recordsScanned``. A stopped query scans no further.
    """

    responder: Callable[[str, datetime, datetime], list[dict[str, object]]]
    running_polls: int | None = 1
    final_status: str = "Complete"
    bytes_per_poll: float = 0.0
    clock: SimulatedClock | None = None
    scan_bytes: float = 0.0
    quantile: float = 0.99
    profile: ServiceProfile = AWS_PROFILE
    queries: dict[str, _Query] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        now = self._now()
        self._start_rate = RateLimiter(self.profile.insights_start_query, now)
        self._poll_rate = RateLimiter(self.profile.insights_get_query_results, now)

    def _now(self) -> float:
        return self.clock.monotonic() if self.clock is not None else time.monotonic()

    def start_query(
        self, *, logGroupName: str, startTime: int, endTime: int, queryString: str, **_: Any
    ) -> dict[str, Any]:
        if len(queryString) > INSIGHTS_MAX_QUERY_CHARS or endTime < startTime:
            raise _client_error("InvalidParameterException", "StartQuery", "query or time range invalid")
        if not self._start_rate.take(self._now()):
            raise _client_error("ThrottlingException", "StartQuery", "Rate exceeded")
        running = sum(1 for query in self.queries.values() if self._status(query)[0] in _LIVE)
        if running >= self.profile.insights_concurrent_queries:
            raise _client_error(
                "LimitExceededException", "StartQuery", f"{running} concurrent queries: the account's quota"
            )
        start, end = (datetime.fromtimestamp(t, tz=UTC) for t in (startTime, endTime))
        found = _LIMIT.search(queryString)
        cap = min(int(found.group(1)), INSIGHTS_MAX_ROWS) if found else INSIGHTS_MAX_ROWS
        query_id = f"fake-query-{len(self.started) + 1}"
        self.queries[query_id] = _Query(self.responder(queryString, start, end)[:cap], started_at=self._now())
        self.started.append(queryString)
        return {"queryId": query_id}

    def get_query_results(self, *, queryId: str) -> dict[str, Any]:
        query = self.queries.get(queryId)
        if query is None:
            raise _client_error("ResourceNotFoundException", "GetQueryResults", f"no query {queryId}")
        if not self._poll_rate.take(self._now()):
            raise _client_error("ThrottlingException", "GetQueryResults", "Rate exceeded")
        if not query.stopped:
            query.polls += 1
        status, scanned = self._status(query)
        statistics = {
            "recordsMatched": float(len(query.rows) if status == "Complete" else 0),
            "recordsScanned": float(len(query.rows)),
            "bytesScanned": scanned,
        }
        if status != "Complete":
            return {"status": status, "results": [], "statistics": statistics}
        results = [
            [{"field": key, "value": insights_value(value)} for key, value in row.items()]
            for row in query.rows
        ]
        return {"status": "Complete", "results": results, "statistics": statistics}

    def _status(self, query: _Query) -> tuple[str, float]:
        """The query's status and bytes scanned now (at its stop, once stopped)."""
        if self.clock is None:
            return self._status_by_polls(query)
        at = query.stopped_at if query.stopped_at is not None else self._now()
        elapsed = at - query.started_at
        queue = self.profile.insights_queue_seconds.at(self.quantile)
        run = self.profile.insights_queue_and_run_seconds(self.scan_bytes, self.quantile) - queue
        if elapsed < queue:
            status, share = "Scheduled", 0.0
        elif elapsed < queue + run:
            status, share = "Running", (elapsed - queue) / run
        elif queue + run > self.profile.insights_query_timeout_seconds:
            status, share = "Timeout", self.profile.insights_query_timeout_seconds / run
        else:
            status, share = self.final_status, 1.0
        return ("Cancelled" if query.stopped else status), self.scan_bytes * min(share, 1.0)

    def _status_by_polls(self, query: _Query) -> tuple[str, float]:
        scanned = query.polls * self.bytes_per_poll
        if query.stopped:
            return "Cancelled", scanned
        if query.polls <= 1 and self.running_polls != 0:
            return "Scheduled", 0.0
        if self.running_polls is None or 1 < query.polls <= self.running_polls + 1:
            return "Running", scanned
        return self.final_status, scanned

    def stop_query(self, *, queryId: str) -> dict[str, Any]:
        query = self.queries.get(queryId)
        if query is None:
            raise _client_error("ResourceNotFoundException", "StopQuery", f"no query {queryId}")
        if query.stopped_at is None:
            query.stopped_at = self._now()
        return {"success": True}


def insights_over(client: FakeInsightsClient) -> CloudWatchLogsInsights:
    """The real adapter over ``client``, sleeping on the client's clock (the production budgets)."""
    clock = client.clock or SimulatedClock()
    return CloudWatchLogsInsights(client, sleep=clock.sleep, monotonic=clock.monotonic)  # type: ignore[arg-type]


# The statuses of a query that still counts against the account's concurrent-query quota.
_LIVE = frozenset({"Scheduled", "Running"})


def _client_error(code: str, operation: str, message: str) -> ClientError:
    """A refusal as botocore builds it: the service answered 400 and did nothing."""
    response: Any = {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": 400}}
    return ClientError(response, operation)
