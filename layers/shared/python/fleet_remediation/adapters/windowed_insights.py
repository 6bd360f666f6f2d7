"""Queries that never decide blind: a Logs Insights query over a window, split in time so that no
piece's result reaches the query's row limit (a result that size may have been cut).

A query whose rows are sums per key (per job, per task) or lines is split into consecutive pieces of
the window and the pieces' rows merged by the caller: sums add up exactly, lines are a union. With a
row estimate the window is split before the first query (each piece aims at ``FILL`` of the limit);
a piece that still reaches the limit is halved, down to ``min_piece``. A smallest piece at the limit,
or more pieces than ``max_queries``, is ``ResultTruncatedError``: what it does not show is unknown,
and no decision is made on it.
"""

from __future__ import annotations

import math
from collections import deque
from datetime import datetime, timedelta

from fleet_remediation.adapters.logs_insights import LogsInsights, Row
from fleet_remediation.core.errors import AwsApiError

FILL = 0.5
DEFAULT_MIN_PIECE = timedelta(minutes=1)
DEFAULT_MAX_QUERIES = 16


class ResultTruncatedError(AwsApiError):
    """A Logs Insights result reached the row cap: what it does not show is unknown, not absent."""

    code = "ResultTruncated"


def planned_pieces(expected_rows: int | None, limit: int) -> int:
    """How many even pieces keep each piece's estimated rows at ``FILL`` of ``limit``."""
    if not expected_rows or expected_rows <= 0:
        return 1
    return max(1, math.ceil(expected_rows / (limit * FILL)))


def split(start: datetime, end: datetime, pieces: int) -> list[tuple[datetime, datetime]]:
    step = (end - start) / pieces
    bounds = [start + step * i for i in range(pieces)] + [end]
    return [(bounds[i], bounds[i + 1]) for i in range(pieces)]


def run_in_pieces(
    insights: LogsInsights,
    log_group: str,
    query: str,
    window: tuple[datetime, datetime],
    deadline: float,
    *,
    limit: int,
    expected_rows: int | None = None,
    min_piece: timedelta = DEFAULT_MIN_PIECE,
    max_queries: int = DEFAULT_MAX_QUERIES,
) -> list[list[Row]]:
    """Each piece's rows, none of them cut at ``limit``; the pieces cover [start, end) exactly."""
    start, end = window
    todo = deque(split(start, end, min(planned_pieces(expected_rows, limit), max_queries)))
    done: list[list[Row]] = []
    queries = 0
    while todo:
        piece_start, piece_end = todo.popleft()
        queries += 1
        if queries > max_queries:
            raise _truncated(f"more than {max_queries} queries needed to stay under {limit} rows", log_group)
        rows = insights.run_query(log_group, query, piece_start, piece_end, deadline).rows
        if len(rows) < limit:
            done.append(rows)
            continue
        if piece_end - piece_start <= min_piece:
            raise _truncated(
                f"{limit} rows in {(piece_end - piece_start).total_seconds():.0f} s, the smallest piece",
                log_group,
            )
        todo.extendleft(reversed(split(piece_start, piece_end, 2)))
    return done


def _truncated(why: str, log_group: str) -> ResultTruncatedError:
    return ResultTruncatedError(
        f"Logs Insights result at its row limit: {why}; not decided on",
        aws_code="ResultTruncated",
        resource=log_group,
    )


def summed(pieces: list[list[Row]], keys: tuple[str, ...], counts: tuple[str, ...]) -> list[Row]:
    """Rows of per-key sums from consecutive pieces merged into one row per key (sums add up)."""
    merged: dict[tuple[str, ...], list[float]] = {}
    for rows in pieces:
        for row in rows:
            key = tuple(row.get(name, "") for name in keys)
            totals = merged.setdefault(key, [0.0] * len(counts))
            for index, name in enumerate(counts):
                totals[index] += _number(row.get(name) or "0", name)
    return [
        {
            **dict(zip(keys, key, strict=True)),
            **{name: f"{value:g}" for name, value in zip(counts, totals, strict=True)},
        }
        for key, totals in merged.items()
    ]


def _number(raw: str, name: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise AwsApiError(
            f"Logs Insights returned a non-numeric {name}: {raw!r}", aws_code="BadResult"
        ) from None
