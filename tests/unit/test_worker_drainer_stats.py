"""The Logs Insights side of the drainer's statistics: the queries built from the slow-VAD signal,
and the rows parsed back (``FakeLogsInsights`` returns canned GetQueryResults payloads)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from devkit.fakes.logs_insights import FakeLogsInsights, insights_row
from fleet_remediation.contract.signals import SignalCatalog
from fleet_remediation.core.errors import InvalidEventError
from worker_drainer.adapters.worker_logs import InsightsWorkerLogs, job_sightings_query

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
