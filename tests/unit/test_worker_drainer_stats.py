"""The Logs Insights side of the drainer's statistics: the queries built from the slow-VAD signal,
and the rows parsed back (``FakeLogsInsights`` returns canned GetQueryResults payloads)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from devkit.fakes.logs_insights import FakeInsightsClient, FakeLogsInsights, insights_over, insights_row
from fleet_remediation.contract.sections import DrainerSection
from fleet_remediation.contract.signals import SignalCatalog
from fleet_remediation.core.errors import InvalidEventError
from livekit_fleet_remediation.offline.service_profile import SimulatedClock
from worker_drainer.adapters.worker_logs import MAX_QUERY_CHARS, InsightsWorkerLogs, job_sightings_query

START = datetime(2026, 9, 15, 17, 15, tzinfo=UTC)
END = datetime(2026, 9, 15, 17, 45, tzinfo=UTC)
STREAM = "agent/ppi-livekit-agent/b9238a5f30f04c3a9207df1601ba88bf"


def test_worker_stats_query_uses_the_signal_and_rows_become_stats() -> None:
    fake = FakeLogsInsights(
        responses=[
            [
                insights_row(
                    {
                        "@logStream": STREAM,
                        "warnings": 116,
                        "max_delay": 16.04,
                        "first_seen": "2026-09-15 17:15:04.000",
                        "last_seen": "2026-09-15 17:44:58.512",
                        "jobs": 6,
                    }
                )
            ]
        ]
    )
    logs = InsightsWorkerLogs(fake, "/ppi/livekit/prod/agent", SignalCatalog.default())
    (row,) = logs.worker_stats(START, END, deadline=0)
    query = str(fake.calls[0]["query"])
    assert query.startswith('filter message like "inference is slower than realtime"')
    assert "max(delay) as max_delay" in query
    assert "by @logStream" in query
    assert (row.log_stream, row.warnings, row.max_delay, row.jobs) == (STREAM, 116, 16.04, 6)
    assert row.span_seconds == pytest.approx(29 * 60 + 54.512)


def test_job_sightings_are_read_for_the_named_streams_only() -> None:
    fake = FakeLogsInsights(
        responses=[
            [
                insights_row(
                    {
                        "@logStream": STREAM,
                        "@timestamp": "2026-09-15 15:08:03.000",
                        "job_id": "AJ_CLYSMmWdT876",
                        "room": "test-d9ed7fb0-newpp01_up_wjv1",
                        "room_id": "RM_NRTgubzsISjd",
                    }
                )
            ]
        ]
    )
    logs = InsightsWorkerLogs(fake, "/ppi/livekit/prod/agent", SignalCatalog.default())
    (sighting,) = logs.job_sightings([STREAM], START, END, deadline=0)
    assert f'@logStream in ["{STREAM}"]' in str(fake.calls[0]["query"])
    assert 'message = "received job request"' in str(fake.calls[0]["query"])
    assert (sighting.job_id, sighting.room, sighting.room_id) == (
        "AJ_CLYSMmWdT876",
        "test-d9ed7fb0-newpp01_up_wjv1",
        "RM_NRTgubzsISjd",
    )
    assert logs.job_sightings([], START, END, deadline=0) == []
    assert len(fake.calls) == 1  # no streams, no query


def test_a_stream_name_that_could_break_the_query_is_refused() -> None:
    with pytest.raises(InvalidEventError):
        job_sightings_query(['agent/x/"] or true'])


def _fleet_streams(tasks: int) -> list[str]:
    return [f"agent/ppi-livekit-agent/{index:032x}" for index in range(tasks)]


def test_a_small_fleet_names_each_stream_in_the_sightings_query() -> None:
    streams = _fleet_streams(100)
    query = job_sightings_query(streams)
    assert len(query) <= MAX_QUERY_CHARS
    assert all(f'"{stream}"' in query for stream in streams)


def test_a_fleet_too_large_to_list_is_matched_by_its_stream_prefix_in_one_query() -> None:
    """500 tasks' names would take about 25,000 characters, past StartQuery's 10,000: the query
    matches the streams' common prefix, and the rows of streams not asked for are dropped."""
    streams = _fleet_streams(500)
    foreign = "other/ppi-livekit-agent/ffffffffffffffffffffffffffffffff"
    stopped = "agent/ppi-livekit-agent/" + "e" * 32  # an earlier task of the same service

    def respond(query: str, start: datetime, end: datetime) -> list[dict[str, object]]:
        pattern = re.search(r"@logStream like /(.*)/\n", query)
        assert pattern is not None, query
        matches = re.compile(pattern.group(1).replace("\\/", "/"))
        return [
            {"@logStream": s, "@timestamp": START, "job_id": f"AJ_{i}", "room": f"r{i}", "room_id": f"RM_{i}"}
            for i, s in enumerate([*streams[:3], stopped, foreign])
            if matches.search(s)
        ]

    client = FakeInsightsClient(respond, clock=SimulatedClock())
    logs = InsightsWorkerLogs(insights_over(client), "/ppi/livekit/prod/agent", SignalCatalog.default())
    sightings = logs.job_sightings(streams, START, END, deadline=DrainerSection().insights_timeout_seconds)
    (query,) = client.started
    assert len(query) <= MAX_QUERY_CHARS
    assert r"@logStream like /^agent\/ppi-livekit-agent\//" in query
    assert [s.log_stream for s in sightings] == streams[:3]


def test_streams_without_a_common_prefix_are_read_from_the_whole_group_and_kept_by_name() -> None:
    streams = [f"{'ab'[i % 2]}{i}/c/{i:040x}" for i in range(300)]
    query = job_sightings_query(streams)
    assert len(query) <= MAX_QUERY_CHARS
    assert "@logStream in" not in query
    assert "ispresent(@logStream)" in query
