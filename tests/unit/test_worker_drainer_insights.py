"""The drainer's Logs Insights reads through the real ``CloudWatchLogsInsights`` adapter, against
``FakeInsightsClient``: an explicit fake of StartQuery/GetQueryResults/StopQuery (moto has no Logs
Insights engine) that is as strict as the service — Scheduled/Running before Complete for as long as
the service profile's p99 says, Failed, Timeout and Cancelled endings, the 10,000-row cap and
Insights' own timestamp format — on a simulated clock, under the drainer's default query deadline."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devkit.fakes.logs_insights import FakeInsightsClient, insights_over
from fleet_remediation.contract.budgets import LOGS_INSIGHTS_STOP
from fleet_remediation.contract.sections import DrainerSection
from fleet_remediation.contract.signals import SignalCatalog
from fleet_remediation.core.errors import AwsApiError, DeadlineExceededError, RemediationError
from fleet_remediation.domain.job_outcomes import JobOutcome
from livekit_fleet_remediation.offline.service_profile import SimulatedClock
from worker_drainer.adapters.worker_logs import InsightsWorkerLogs, ResultTruncatedError, tts_outcomes_query

START = datetime(2026, 9, 15, 17, 15, tzinfo=UTC)
END = datetime(2026, 9, 15, 17, 45, tzinfo=UTC)
STREAM = "agent/ppi-livekit-agent/b9238a5f30f04c3a9207df1601ba88bf"
GROUP = "/ppi/livekit/prod/agent"


# The drainer's per-query deadline, on a simulated clock that starts at 0.
DEADLINE = DrainerSection().insights_timeout_seconds


def clocked(
    responder: Callable[[str, datetime, datetime], list[dict[str, object]]], **options: Any
) -> FakeInsightsClient:
    return FakeInsightsClient(responder, clock=SimulatedClock(), **options)


def logs_over(client: FakeInsightsClient) -> InsightsWorkerLogs:
    return InsightsWorkerLogs(insights_over(client), GROUP, SignalCatalog.default())


def stats_row(**changes: Any) -> dict[str, object]:
    row: dict[str, object] = {
        "@logStream": STREAM,
        "warnings": 116,
        "max_delay": 16.04,
        "first_seen": START + timedelta(seconds=4),
        "last_seen": END - timedelta(seconds=2),
        "jobs": 6,
    }
    return row | changes


def test_a_query_is_polled_through_scheduled_and_running_to_complete_at_the_profiles_p99() -> None:
    client = clocked(lambda *_: [stats_row()], scan_bytes=0.1e9)
    (row,) = logs_over(client).worker_stats(START, END, DEADLINE)
    assert (row.warnings, row.jobs) == (116, 6)
    assert row.last_seen == END - timedelta(seconds=2)  # parsed back from "2026-09-15 17:44:58.000"
    # Scheduled 6 s, Running 5 s (p99): polled every second until Complete at 11 s.
    assert client.queries["fake-query-1"].polls == 12
    assert client.clock is not None
    assert client.clock.monotonic() == 11.0


@pytest.mark.parametrize("status", ["Failed", "Timeout", "Cancelled"])
def test_a_query_that_ends_badly_is_a_typed_error(status: str) -> None:
    client = clocked(lambda *_: [stats_row()], final_status=status)
    with pytest.raises(AwsApiError) as failed:
        logs_over(client).worker_stats(START, END, DEADLINE)
    assert failed.value.aws_code == f"Query{status}"


def test_a_query_still_running_at_the_deadline_is_stopped_within_it() -> None:
    client = clocked(lambda *_: [stats_row()], scan_bytes=50e9)  # 500 s at p99
    with pytest.raises(DeadlineExceededError):
        logs_over(client).worker_stats(START, END, DEADLINE)
    assert client.clock is not None
    assert client.clock.monotonic() + LOGS_INSIGHTS_STOP.worst_case_seconds <= DEADLINE
    assert client.queries["fake-query-1"].stopped  # no abandoned query left counting against the quota


def test_a_timestamp_in_another_format_is_a_typed_error_not_a_crash() -> None:
    client = clocked(lambda *_: [stats_row(last_seen="2026-09-15T17:44:58Z")])
    with pytest.raises(AwsApiError) as bad:
        logs_over(client).worker_stats(START, END, DEADLINE)
    assert bad.value.aws_code == "BadResult"
    client = clocked(lambda *_: [stats_row(warnings="many")])
    with pytest.raises(AwsApiError, match="non-numeric warnings"):
        logs_over(client).worker_stats(START, END, DEADLINE)


def test_job_sightings_at_the_row_cap_are_unknown_not_complete() -> None:
    def many(query: str, start: datetime, end: datetime) -> list[dict[str, object]]:
        return [
            {
                "@logStream": STREAM,
                "@timestamp": end,
                "job_id": f"AJ_{n}",
                "room": f"r{n}",
                "room_id": f"RM_{n}",
            }
            for n in range(12_000)
        ]

    # Median latency: the halving re-queries add up under one deadline (at p99 the look ends past
    # its deadline instead, which is no decision either); this test is about the cap.
    client = clocked(many, quantile=0.5)
    with pytest.raises(ResultTruncatedError) as cut:
        logs_over(client).job_sightings([STREAM], START, END, DEADLINE)
    assert isinstance(cut.value, RemediationError)
    assert len(client.queries["fake-query-1"].rows) == 10_000  # the service's cap, from "limit 10000"


def test_a_query_too_long_for_insights_is_a_typed_error() -> None:
    client = clocked(lambda *_: [])
    too_long = "filter " + " or ".join(f'job_id = "AJ_{n:012d}"' for n in range(500))
    with pytest.raises(AwsApiError) as refused:
        insights_over(client).run_query("/ppi/livekit/prod/agent", too_long, START, END, DEADLINE)
    assert refused.value.aws_code == "InvalidParameterException"


def test_the_sightings_of_a_fleet_of_300_tasks_fit_one_query() -> None:
    client = clocked(lambda *_: [])
    streams = [f"agent/ppi-livekit-agent/{n:032x}" for n in range(300)]
    assert logs_over(client).job_sightings(streams, START, END, DEADLINE) == []
    assert len(client.started) == 1


def test_tts_outcomes_count_responses_first_frames_and_timeouts_per_job() -> None:
    query = tts_outcomes_query(SignalCatalog.default(), STREAM)
    assert f'@logStream = "{STREAM}"' in query
    for text in ("agent_response_started", "tts_node_first_audio_frame", "tts_first_audio_timeout"):
        assert text in query
    rows: list[dict[str, object]] = [
        {"job_id": "AJ_ok", "@logStream": STREAM, "responses": 4, "first_frames": 4, "timeouts": 0},
        {"job_id": "AJ_silent", "@logStream": STREAM, "responses": 2, "first_frames": 0, "timeouts": 0},
        {"job_id": "AJ_late", "@logStream": STREAM, "responses": 3, "first_frames": 3, "timeouts": 1},
    ]
    client = clocked(lambda *_: rows)
    outcomes = logs_over(client).tts_outcomes(STREAM, START, END, DEADLINE)
    assert [(o.job_id, o.failed) for o in outcomes] == [
        ("AJ_ok", False),
        ("AJ_silent", True),
        ("AJ_late", True),
    ]
    assert client.started == [query]
    assert JobOutcome(STREAM, "j", 0, 0, 0).failed is False
