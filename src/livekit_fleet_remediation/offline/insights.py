"""The TTS-reach responder's two Logs Insights queries answered over exported log events: the
responder's own ``investigate`` runs unchanged in the backtest and the replay. Never deployed.

This is not a Logs Insights engine. It recognises exactly the query texts the responder builds
(``job_outcomes_query`` for the signal catalog it was given, ``job_rooms_query``, and the per-task
``task_reach_query`` it reads at scale) and answers each
with the rows Logs Insights would return, as strings; any other query is an error, so a responder
that changes its queries fails here loudly instead of being answered wrongly.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from datetime import datetime

from fleet_remediation.adapters.logs_insights import QueryResult, Row
from fleet_remediation.adapters.task_reach_rows import task_reach_query
from fleet_remediation.contract.signals import TTS_COUNTS, TTS_ENDPOINT_FIELD, SignalCatalog
from fleet_remediation.core.errors import AwsApiError
from fleet_remediation.domain.job_outcomes import JobOutcomeCounter
from livekit_fleet_remediation.offline.log_export import LogEvent, tts_counts_by_stream
from tts_reach_alarm.analysis import MAX_JOBS, job_outcomes_query, job_rooms_query

_QUOTED = re.compile(r'"([^"]*)"')


class OfflineLogsInsights:
    """``LogsInsights`` for the responder, evaluated over ``events`` (sorted by time, as
    ``read_events`` returns them). ``calls`` counts the queries answered."""

    def __init__(self, events: Sequence[LogEvent], catalog: SignalCatalog) -> None:
        self.events = list(events)
        self._times = [event.at for event in self.events]
        self.catalog = catalog
        self.calls = 0
        self._outcomes_query = job_outcomes_query(catalog)
        self._task_reach_query = task_reach_query(catalog)
        # job_rooms_query(ids) is this prefix, the quoted ids, then this suffix.
        probe = job_rooms_query(["JOB"])
        self._rooms_prefix, self._rooms_suffix = probe.split('"JOB"')

    def _window(self, start: datetime, end: datetime) -> list[LogEvent]:
        return self.events[bisect.bisect_left(self._times, start) : bisect.bisect_left(self._times, end)]

    def run_query(
        self, log_group: str, query: str, start: datetime, end: datetime, deadline: float
    ) -> QueryResult:
        self.calls += 1
        if query == self._outcomes_query:
            rows = self._job_outcomes(start, end)
        elif query == self._task_reach_query:
            rows = self._task_reach(start, end)
        elif query.startswith(self._rooms_prefix) and query.endswith(self._rooms_suffix):
            listed = query[len(self._rooms_prefix) : len(query) - len(self._rooms_suffix)]
            rows = self._job_rooms(set(_QUOTED.findall(listed)), start, end)
        else:
            raise AwsApiError(
                f"the offline Logs Insights evaluator answers only the responder's queries, not: {query!r}",
                aws_code="UnsupportedOfflineQuery",
                resource=log_group,
            )
        return QueryResult(query_id=f"offline-{self.calls}", rows=rows[:MAX_JOBS], statistics={})

    def _job_outcomes(self, start: datetime, end: datetime) -> list[Row]:
        """``stats sum(...) as responses, ..., latest(tts_endpoint) as tts_endpoint by job_id,
        @logStream``."""
        counter = JobOutcomeCounter(self.catalog)
        endpoints: dict[tuple[str, str], str] = {}
        for event in self._window(start, end):
            named = event.record.get(TTS_ENDPOINT_FIELD)
            if counter.add(event.stream, event.record) and isinstance(named, str) and named:
                endpoints[(str(event.record["job_id"]), event.stream)] = named
        return [
            {
                "job_id": job.job_id,
                "@logStream": job.log_stream,
                "responses": str(job.responses),
                "first_frames": str(job.first_frames),
                "timeouts": str(job.timeouts),
                "late_frames": str(job.late_frames),
                TTS_ENDPOINT_FIELD: endpoints.get((job.job_id, job.log_stream), ""),
            }
            for job in counter.outcomes()
        ]

    def _task_reach(self, start: datetime, end: datetime) -> list[Row]:
        """``task_reach_query``: per stream, the TTS counts and the latest endpoint its lines name."""
        found = tts_counts_by_stream(self._window(start, end), self.catalog)
        return [
            {
                "@logStream": stream,
                **dict(zip(TTS_COUNTS, map(str, counts), strict=True)),
                TTS_ENDPOINT_FIELD: endpoint,
            }
            for stream, (counts, endpoint) in sorted(found.items())
        ]

    def _job_rooms(self, job_ids: set[str], start: datetime, end: datetime) -> list[Row]:
        """``stats latest(room), latest(room_id) by job_id`` over the listed jobs' job requests."""
        latest: dict[str, Row] = {}
        for event in self._window(start, end):
            record = event.record
            job_id = record.get("job_id")
            if record.get("message") == "received job request" and job_id in job_ids:
                latest[str(job_id)] = {
                    "job_id": str(job_id),
                    "room": str(record.get("room", "")),
                    "room_id": str(record.get("room_id", "")),
                }
        return list(latest.values())
