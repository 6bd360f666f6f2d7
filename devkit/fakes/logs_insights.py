"""Explicit in-memory fakes for AWS behaviour moto does not implement."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

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
