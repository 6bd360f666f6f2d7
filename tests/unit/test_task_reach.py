"""The per-task TTS reach test (``worker_drainer.decide.task_reach``) and the queries that never decide on a
capped result (``windowed_insights``, the per-task query, the responder's job read in pieces).

The Logs Insights stand-in here is ``CappedInsights``: an explicit fake of ``LogsInsights.run_query``
(moto has no Insights engine) that answers from a list of timed rows and, like the service, returns
at most the query's ``limit`` rows."""

from __future__ import annotations

import math
import re
import time
from datetime import UTC, datetime, timedelta

import pytest

from devkit.fakes.logs_insights import FakeInsightsClient, insights_over
from fleet_remediation.adapters.logs_insights import QueryResult, Row
from fleet_remediation.adapters.windowed_insights import (
    ResultTruncatedError,
    planned_pieces,
    run_in_pieces,
    summed,
)
from fleet_remediation.contract.events import TimeWindow
from fleet_remediation.contract.sections import DrainerSection
from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.contract.signals import SignalCatalog
from fleet_remediation.contract.task_reach import TaskReachSettings
from fleet_remediation.core.errors import AwsApiError
from livekit_fleet_remediation.offline.service_profile import AWS_PROFILE, SimulatedClock
from tts_reach_alarm.analysis import MAX_JOBS
from tts_reach_alarm.investigation import investigate
from worker_drainer.decide.task_reach import TaskFacts, TaskReach, assess_task_reach, binomial_tail
from worker_drainer.read.task_reach_query import read_task_reach, task_reach_query, tick_verdict

START = datetime(2026, 9, 15, 17, 0, tzinfo=UTC)
SETTINGS = TaskReachSettings()


class CappedInsights:
    """Rows stamped with a time; a query returns those inside its window, summed per key when the
    rows carry counts, cut at the query's ``limit`` as the service cuts them."""

    def __init__(self, rows: list[tuple[datetime, Row]], keys: tuple[str, ...]) -> None:
        self.rows, self.keys, self.windows = rows, keys, []

    def run_query(
        self, log_group: str, query: str, start: datetime, end: datetime, deadline: float
    ) -> QueryResult:
        self.windows.append((start, end))
        limit = int(re.findall(r"limit (\d+)", query)[-1])
        merged: dict[tuple[str, ...], Row] = {}
        for at, row in self.rows:
            if start <= at < end:
                key = tuple(row[k] for k in self.keys)
                into = merged.setdefault(key, {k: row[k] for k in self.keys})
                for name, value in row.items():
                    if name not in self.keys:
                        into[name] = str(int(into.get(name, "0")) + int(value))
        return QueryResult(f"q{len(self.windows)}", list(merged.values())[:limit], {})


def fleet(tasks: int, responses: int = 60, timeouts: int = 0) -> list[TaskReach]:
    return [TaskReach(f"agent/a/t{i}", responses, responses - timeouts, timeouts) for i in range(tasks)]


def test_the_binomial_tail_is_the_exact_sum() -> None:
    for k, n, p in [(3, 60, 0.001), (5, 20, 0.01), (40, 60, 0.5), (1, 1, 0.3)]:
        exact = sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))
        assert binomial_tail(k, n, p) == pytest.approx(exact, rel=1e-9)
    assert binomial_tail(2, 1000, 0.01) == 1.0  # at or below the mean: never significant


def test_the_stated_significance_shares_the_daily_budget_over_ticks_and_tasks() -> None:
    assert SETTINGS.level(1000) == pytest.approx(0.01 / (1440 * 1000))


def test_one_silent_task_among_a_thousand_is_the_only_suspect() -> None:
    rows = [*fleet(999, responses=60), TaskReach("agent/a/silent", 20, 0, 8)]
    found = assess_task_reach(rows, SETTINGS, 1000)
    assert [v.log_stream for v in found.suspects] == ["agent/a/silent"]
    assert not found.fleet_wide


def test_a_healthy_fleet_with_isolated_hangs_has_no_suspect() -> None:
    rows = fleet(1000, responses=60)
    rows[3] = TaskReach("agent/a/t3", 60, 58, 2)  # two isolated hangs in three minutes
    assert not assess_task_reach(rows, SETTINGS, 1000).suspects


def test_a_rare_cluster_of_hangs_is_too_small_a_share_to_cordon() -> None:
    # Six hangs in 94 responses: p ~ 8e-10, below the 1,000-task level, but 6 % of the responses.
    rows = [*fleet(499, responses=90), TaskReach("agent/a/unlucky", 94, 88, 6)]
    found = assess_task_reach(rows, SETTINGS, 500)
    assert found.tested[-1].p_value < SETTINGS.level(500)
    assert not found.suspects


def test_a_provider_outage_is_fleet_wide_and_suspects_nobody() -> None:
    found = assess_task_reach(fleet(200, responses=30, timeouts=30), SETTINGS, 200)
    assert found.fleet_wide
    assert not found.suspects


def test_an_outage_seen_early_is_fleet_wide_before_any_task_is_a_large_share() -> None:
    # The outage's first tick: every task's window is mostly healthy minutes (5 of 60 timed out,
    # below the share), one task is already past it: the many small failures make it fleet-wide.
    rows = [*fleet(999, responses=60, timeouts=5), TaskReach("agent/a/first", 30, 18, 12)]
    found = assess_task_reach(rows, SETTINGS, 1000)
    assert found.fleet_wide
    assert not found.suspects


def test_a_task_no_worse_than_a_slow_fleet_is_not_suspect() -> None:
    # Every task loses about 30 % of its first frames to a slowdown: measured against the rest of
    # the fleet, the worst one does not stand out.
    rows = [*fleet(99, responses=60, timeouts=18), TaskReach("agent/a/worst", 60, 36, 24)]
    found = assess_task_reach(rows, SETTINGS.model_copy(update={"fleet_wide_fraction": 1.0}), 100)
    assert not found.suspects
    assert found.tested[-1].baseline_rate == pytest.approx(18 / 60)


def test_the_per_task_query_sums_each_stream_once() -> None:
    query = task_reach_query(SignalCatalog.default())
    assert "by @logStream" in query
    assert "limit 10000" in query
    rows = [
        (
            START + timedelta(minutes=m),
            {"@logStream": f"s{m % 2}", "responses": "10", "first_frames": "9", "timeouts": "1"},
        )
        for m in range(3)
    ]
    found = read_task_reach(
        CappedInsights(rows, ("@logStream",)),
        "g",
        SignalCatalog.default(),
        (START, START + timedelta(minutes=3)),
        time.monotonic() + 5,
    )
    assert sorted((r.log_stream, r.responses, r.timeouts) for r in found) == [("s0", 20, 2), ("s1", 10, 1)]


class OneAnswer:
    """Logs Insights answering every query with ``rows`` (the log group asked is kept)."""

    def __init__(self, rows: list[Row]) -> None:
        self.rows, self.log_groups = rows, []

    def run_query(
        self, log_group: str, query: str, start: datetime, end: datetime, deadline: float
    ) -> QueryResult:
        self.log_groups.append(log_group)
        return QueryResult("q", self.rows, {})


def _read(insights: OneAnswer) -> list[TaskReach]:
    window = (START, START + timedelta(minutes=3))
    return read_task_reach(insights, "agents-logs", SignalCatalog.default(), window, time.monotonic() + 5)


def test_each_row_keeps_the_tts_endpoint_its_stream_named_and_none_is_empty() -> None:
    counts = {"responses": "10", "first_frames": "9", "timeouts": "1"}
    insights = OneAnswer(
        [
            {"@logStream": "s0", **counts, "tts_endpoint": "eu.tts.example"},
            {"@logStream": "s1", **counts},
            {"@logStream": "s2", **counts, "tts_endpoint": ""},
        ]
    )
    found = {row.log_stream: row.tts_endpoint for row in _read(insights)}
    assert found == {"s0": "eu.tts.example", "s1": "", "s2": ""}
    assert insights.log_groups == ["agents-logs"]


@pytest.mark.parametrize("count", ["ten", "nan", "inf"])
def test_a_count_that_is_no_whole_number_is_a_bad_result_not_a_verdict(count: str) -> None:
    bad = OneAnswer([{"@logStream": "s0", "responses": count, "first_frames": "9", "timeouts": "1"}])
    with pytest.raises(AwsApiError) as refused:
        _read(bad)
    assert refused.value.aws_code == "BadResult"
    assert refused.value.message == f"Logs Insights returned a non-numeric responses: {count!r}"


@pytest.mark.parametrize(("age", "suspect"), [(timedelta(minutes=1), False), (timedelta(hours=1), True)])
def test_the_tick_gives_a_task_in_warm_up_its_allowance(age: timedelta, suspect: bool) -> None:
    rows = [*fleet(20), TaskReach("agent/a/new", 20, 5, 15)]
    facts = [TaskFacts(row.log_stream, started_at=START - timedelta(hours=2)) for row in rows]
    facts[-1] = TaskFacts("agent/a/new", started_at=START - age)
    found = tick_verdict(rows, SETTINGS, facts, START)
    assert [v.log_stream for v in found.suspects] == (["agent/a/new"] if suspect else [])


def test_the_tick_reads_through_the_insights_adapter_and_suspects_only_running_tasks() -> None:
    """Through the real ``CloudWatchLogsInsights`` adapter against ``FakeInsightsClient`` (an explicit
    fake of StartQuery/GetQueryResults: moto has no Insights engine), whose query takes the service
    profile's p99 for a per-task look (on a simulated clock), under the drainer's default deadline."""
    rows: list[dict[str, object]] = [
        {"@logStream": f"agent/a/t{i}", "responses": 60, "first_frames": 60, "timeouts": 0}
        for i in range(300)
    ]
    rows += [
        {"@logStream": "agent/a/silent", "responses": 20, "first_frames": 0, "timeouts": 9},
        {"@logStream": "agent/a/replaced", "responses": 20, "first_frames": 0, "timeouts": 9},
    ]
    seen: list[str] = []

    def answer(query: str, start: datetime, end: datetime) -> list[dict[str, object]]:
        seen.append(query)
        assert end - start == timedelta(minutes=SETTINGS.window_minutes)
        return rows

    clock = SimulatedClock()
    client = FakeInsightsClient(answer, clock=clock, scan_bytes=AWS_PROFILE.per_task_look_bytes)
    running = [f"agent/a/t{i}" for i in range(300)] + ["agent/a/silent"]
    window = (START - timedelta(minutes=SETTINGS.window_minutes), START)
    deadline = DrainerSection().insights_timeout_seconds
    read = read_task_reach(insights_over(client), "g", SignalCatalog.default(), window, deadline)
    assert clock.monotonic() >= AWS_PROFILE.insights_queue_and_run_seconds(
        AWS_PROFILE.per_task_look_bytes, 0.99
    )
    found = tick_verdict(read, SETTINGS, [TaskFacts(stream) for stream in running], START)
    assert seen == [task_reach_query(SignalCatalog.default())]
    assert [v.log_stream for v in found.suspects] == ["agent/a/silent"]


def job_rows(jobs: int, minutes: int) -> list[tuple[datetime, Row]]:
    """``jobs`` jobs over ``minutes``: each writes two responses, its frames a minute later."""
    rows = []
    for job in range(jobs):
        at = START + timedelta(seconds=job * minutes * 60 / jobs)
        key = {"job_id": f"AJ_{job}", "@logStream": f"agent/a/t{job % 40}"}
        failed = job % 40 == 7
        rows.append((at, {**key, "responses": "2", "first_frames": "0", "timeouts": "0"}))
        frame = at + timedelta(minutes=1)
        rows.append(
            (
                frame,
                {
                    **key,
                    "responses": "0",
                    "first_frames": "0" if failed else "2",
                    "timeouts": "2" if failed else "0",
                },
            )
        )
    return rows


def test_a_result_at_its_limit_is_split_and_merged_never_decided_on_cut() -> None:
    rows = job_rows(3000, 30)
    insights = CappedInsights(rows, ("job_id", "@logStream"))
    window = (START, START + timedelta(minutes=32))
    query = "stats ... by job_id, @logStream\n| limit 1000"
    pieces = run_in_pieces(insights, "g", query, window, time.monotonic() + 5, limit=1000)
    assert all(len(piece) < 1000 for piece in pieces)
    assert insights.windows[0] == window
    assert len(insights.windows) > 1
    merged = summed(pieces, ("job_id", "@logStream"), ("responses", "first_frames", "timeouts"))
    assert len(merged) == 3000  # every job once, its lines from two pieces added up
    assert sum(float(row["responses"]) for row in merged) == 6000
    with pytest.raises(ResultTruncatedError):
        run_in_pieces(
            insights, "g", query, window, time.monotonic() + 5, limit=10, min_piece=timedelta(minutes=4)
        )
    assert planned_pieces(21_000, 5000) == 9


def test_the_responder_reads_a_window_beyond_max_jobs_whole_and_names_the_worker() -> None:
    rows = job_rows(MAX_JOBS + 3000, 30)
    insights = CappedInsights(rows, ("job_id", "@logStream"))
    settings = TtsReachSettings.model_validate(
        {
            "environment_name": "it",
            "mode_parameter_name": "/m",
            "notification_topic_arn": "arn:aws:sns:eu-west-1:123456789012:t",
            "runbook_base_url": "https://runbooks.example.com/repo",
            "aws_region": "eu-west-1",
            "agent_log_group": "/ppi/livekit/it/agent",
            "idempotency_table_name": "once",
        }
    )
    window = TimeWindow(start=START, end=START + timedelta(minutes=32))
    findings = investigate(window, settings, insights, time.monotonic() + 20)
    assert not findings.truncated
    assert len(findings.jobs) == MAX_JOBS + 3000
    assert findings.concentration.concentrated
    assert findings.concentration.top is not None
    assert findings.concentration.top.log_stream == "agent/a/t7"
