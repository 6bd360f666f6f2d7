"""Explicit in-memory fakes for AWS behaviour moto does not implement."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from fleet_remediation.adapters.logs_insights import QueryResult, rows_from_results
from fleet_remediation.core.errors import DeadlineExceededError


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
    polls: int = 0
    stopped: bool = False


@dataclass
class FakeInsightsClient:
    """A strict stand-in for the boto3 ``logs`` client's StartQuery / GetQueryResults / StopQuery,
    so the real ``CloudWatchLogsInsights`` adapter runs its polling, deadline and error handling
    (moto has no Logs Insights engine).

    Like the service: a query is ``Scheduled``, then ``Running`` for ``running_polls`` polls (None:
    for ever), then ends with ``final_status`` (Complete, Failed, Timeout or Cancelled); a stopped
    query reads ``Cancelled``; results are at most the query's ``limit`` and never more than 10,000
    rows; every value is a string and datetimes come in Insights' own format; a query string over
    10,000 characters or a time range that ends before it starts is an InvalidParameterException.
    ``responder(query, start, end)`` produces the rows (e.g. from exported log events).

    Statistics as the service reports them on every GetQueryResults, running or complete:
    ``bytesScanned`` grows by ``bytes_per_poll`` with each poll (cumulative, as a running query's
    does), with ``recordsMatched`` and ``recordsScanned``. A stopped query scans no further.
    """

    responder: Callable[[str, datetime, datetime], list[dict[str, object]]]
    running_polls: int | None = 1
    final_status: str = "Complete"
    bytes_per_poll: float = 0.0
    queries: dict[str, _Query] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)

    def start_query(
        self, *, logGroupName: str, startTime: int, endTime: int, queryString: str, **_: Any
    ) -> dict[str, Any]:
        if len(queryString) > INSIGHTS_MAX_QUERY_CHARS or endTime < startTime:
            raise _client_error("InvalidParameterException", "StartQuery", "query or time range invalid")
        start, end = (datetime.fromtimestamp(t, tz=UTC) for t in (startTime, endTime))
        found = _LIMIT.search(queryString)
        cap = min(int(found.group(1)), INSIGHTS_MAX_ROWS) if found else INSIGHTS_MAX_ROWS
        query_id = f"fake-query-{len(self.started) + 1}"
        self.queries[query_id] = _Query(self.responder(queryString, start, end)[:cap])
        self.started.append(queryString)
        return {"queryId": query_id}

    def get_query_results(self, *, queryId: str) -> dict[str, Any]:
        query = self.queries.get(queryId)
        if query is None:
            raise _client_error("ResourceNotFoundException", "GetQueryResults", f"no query {queryId}")
        if query.stopped:
            return {"status": "Cancelled", "results": [], "statistics": self._statistics(query, 0)}
        query.polls += 1
        if query.polls == 1 and self.running_polls != 0:
            return {"status": "Scheduled", "results": [], "statistics": self._statistics(query, 0)}
        if self.running_polls is None or 1 < query.polls <= self.running_polls + 1:
            return {"status": "Running", "results": [], "statistics": self._statistics(query, 0)}
        if self.final_status != "Complete":
            return {"status": self.final_status, "results": []}
        results = [
            [{"field": key, "value": insights_value(value)} for key, value in row.items()]
            for row in query.rows
        ]
        return {"status": "Complete", "results": results, "statistics": self._statistics(query, len(results))}

    def _statistics(self, query: _Query, matched: int) -> dict[str, float]:
        return {
            "recordsMatched": float(matched),
            "recordsScanned": float(len(query.rows)),
            "bytesScanned": query.polls * self.bytes_per_poll,
        }

    def stop_query(self, *, queryId: str) -> dict[str, Any]:
        query = self.queries.get(queryId)
        if query is None:
            raise _client_error("ResourceNotFoundException", "StopQuery", f"no query {queryId}")
        query.stopped = True
        return {"success": True}


def _client_error(code: str, operation: str, message: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)
