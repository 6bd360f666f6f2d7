"""Windowed Logs Insights reads in their own unit (``adapters.windowed_insights``): how many pieces an
estimate plans, at and beside each edge; pieces that cover the window exactly; a piece at the row
limit halved, one under it kept; the smallest piece at the limit, or one query past the cap, refused
as truncated (what it does not show is unknown); sums merged per key; a count that is no number."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from fleet_remediation.adapters.logs_insights import QueryResult, Row
from fleet_remediation.adapters.windowed_insights import (
    ResultTruncatedError,
    planned_pieces,
    run_in_pieces,
    split,
    summed,
)
from fleet_remediation.core.errors import AwsApiError

START = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


@pytest.mark.parametrize(
    ("rows", "pieces"),
    [(None, 1), (0, 1), (-5, 1), (1, 1), (50, 1), (51, 2), (100, 2), (101, 3)],
)
def test_an_estimate_plans_pieces_of_at_most_half_the_limit(rows: int | None, pieces: int) -> None:
    assert planned_pieces(rows, 100) == pieces


def test_pieces_cover_the_window_exactly_and_evenly() -> None:
    assert split(START, START + 3 * MINUTE, 3) == [
        (START, START + MINUTE),
        (START + MINUTE, START + 2 * MINUTE),
        (START + 2 * MINUTE, START + 3 * MINUTE),
    ]
    assert split(START, START + MINUTE, 1) == [(START, START + MINUTE)]


@dataclass
class Counted:
    """Logs Insights answering ``rows_for(start, end)`` rows per window; the windows asked, in order."""

    per_minute: int
    windows: list[tuple[datetime, datetime]] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)

    def run_query(
        self, log_group: str, query: str, start: datetime, end: datetime, deadline: float
    ) -> QueryResult:
        self.windows.append((start, end))
        self.groups.append(log_group)
        minutes = int((end - start) / MINUTE)
        return QueryResult("q", [{"n": str(i)} for i in range(self.per_minute * minutes)], {})


def test_a_piece_under_the_limit_is_kept_and_one_at_it_is_halved_in_order() -> None:
    insights = Counted(per_minute=3)
    pieces = run_in_pieces(insights, "g", "q", (START, START + 4 * MINUTE), 9.0, limit=12, min_piece=MINUTE)
    # 4 minutes is 12 rows (at the limit): halved; each half of 6 rows is kept.
    assert insights.windows == [
        (START, START + 4 * MINUTE),
        (START, START + 2 * MINUTE),
        (START + 2 * MINUTE, START + 4 * MINUTE),
    ]
    assert [len(p) for p in pieces] == [6, 6]
    assert insights.groups == ["g", "g", "g"]
    insights = Counted(per_minute=3)
    (whole,) = run_in_pieces(insights, "g", "q", (START, START + 4 * MINUTE), 9.0, limit=13)
    assert len(whole) == 12


def test_the_planned_pieces_are_queried_first_capped_at_the_most_queries() -> None:
    insights = Counted(per_minute=1)
    window = (START, START + 8 * MINUTE)
    run_in_pieces(insights, "g", "q", window, 9.0, limit=100, expected_rows=201, max_queries=8)
    assert insights.windows == split(*window, 5)
    insights = Counted(per_minute=1)
    run_in_pieces(insights, "g", "q", window, 9.0, limit=100, expected_rows=100_000, max_queries=4)
    assert insights.windows == split(*window, 4)


def test_the_smallest_piece_at_the_limit_is_refused_as_truncated_and_one_above_it_is_halved() -> None:
    insights = Counted(per_minute=10)
    with pytest.raises(ResultTruncatedError) as raised:
        run_in_pieces(insights, "/agents", "q", (START, START + 2 * MINUTE), 9.0, limit=10, min_piece=MINUTE)
    assert raised.value.message == (
        "Logs Insights result at its row limit: 10 rows in 60 s, the smallest piece; not decided on"
    )
    assert (raised.value.code, raised.value.aws_code, raised.value.resource) == (
        "ResultTruncated",
        "ResultTruncated",
        "/agents",
    )
    # Two minutes were halved (above the smallest piece); the first one-minute half was the end.
    assert insights.windows == [(START, START + 2 * MINUTE), (START, START + MINUTE)]


@pytest.mark.parametrize(("max_queries", "refused"), [(3, False), (2, True)])
def test_one_query_past_the_most_queries_is_refused_as_truncated(max_queries: int, refused: bool) -> None:
    insights = Counted(per_minute=3)
    args = (insights, "/agents", "q", (START, START + 4 * MINUTE), 9.0)
    if not refused:
        assert len(run_in_pieces(*args, limit=12, max_queries=max_queries)) == 2
        return
    with pytest.raises(ResultTruncatedError) as raised:
        run_in_pieces(*args, limit=12, max_queries=max_queries)
    assert raised.value.message == (
        "Logs Insights result at its row limit: more than 2 queries needed to stay under 12 rows; "
        "not decided on"
    )
    assert raised.value.resource == "/agents"


def test_sums_from_consecutive_pieces_merge_into_one_row_per_key() -> None:
    first: list[Row] = [{"job": "a", "task": "t", "n": "2", "m": "1"}, {"job": "b", "task": "t", "n": "1"}]
    second: list[Row] = [{"job": "a", "task": "t", "n": "3", "m": ""}, {"task": "u", "n": "0.5"}]
    merged = summed([first, second], ("job", "task"), ("n", "m"))
    assert merged == [
        {"job": "a", "task": "t", "n": "5", "m": "1"},
        {"job": "b", "task": "t", "n": "1", "m": "0"},
        {"job": "", "task": "u", "n": "0.5", "m": "0"},
    ]


def test_a_count_that_is_no_number_is_a_bad_result_naming_it() -> None:
    with pytest.raises(AwsApiError) as raised:
        summed([[{"job": "a", "n": "three"}]], ("job",), ("n",))
    assert raised.value.message == "Logs Insights returned a non-numeric n: 'three'"
    assert raised.value.aws_code == "BadResult"
