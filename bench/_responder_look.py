"""The TTS-reach responder's own verdict in the fleet-scale bench: at each page its real
``investigate`` runs (the per-job read in time pieces, or one row per task when the jobs do not fit
its row limit) against a Logs Insights stand-in that answers its queries from the bench's per-task
minutes. A job's counts are its task's counts in the piece shared evenly over the task's jobs there
(the calls placed on it in the piece and those in progress): the bench keeps no single job. ECS's
facts of its tasks (zone, revision, start) come from the simulated fleet's groups, as DescribeTasks
would tell them."""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

from devkit.fleet_groups import Groups
from devkit.traffic import EPOCH
from fleet_remediation.adapters.logs_insights import QueryResult, Row
from fleet_remediation.adapters.task_reach_rows import MAX_TASK_ROWS, task_reach_query
from fleet_remediation.contract.events import TimeWindow
from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.contract.signals import TTS_COUNTS, TTS_ENDPOINT_FIELD
from fleet_remediation.core.errors import AwsApiError
from fleet_remediation.domain.group_verdict import TaskFacts
from tts_reach_alarm.adapters.task_facts import FactsRead
from tts_reach_alarm.analysis import MAX_JOBS, Verdict, job_outcomes_query, job_rooms_query
from tts_reach_alarm.investigation import investigate

RESPONDER_WINDOW_MINUTES = 32
STREAM_PREFIX = "agent/livekit-agent/t"
SETTINGS = TtsReachSettings.model_validate(
    {
        "environment_name": "bench",
        "mode_parameter_name": "/bench/mode",
        "notification_topic_arn": "arn:aws:sns:eu-west-1:123456789012:bench",
        "runbook_base_url": "https://runbooks.example.com/bench",
        "aws_region": "eu-west-1",
        "agent_log_group": "/bench/agent",
        "idempotency_table_name": "bench-once",
    }
)


@dataclass
class ResponderVerdicts:
    """Per page: which read decided and what it found."""

    reads: Counter[str] = field(default_factory=Counter)
    verdicts: Counter[str] = field(default_factory=Counter)


class MinuteInsights:
    """``LogsInsights`` over the last minutes' per-task counts; only the responder's queries."""

    def __init__(self, calls_per_task: int, endpoints: list[str]) -> None:
        catalog = SETTINGS.detection.catalog()
        self.outcomes_query, self.reach_query = job_outcomes_query(catalog), task_reach_query(catalog)
        self.rooms_prefix = job_rooms_query(["JOB"]).split('"JOB"')[0]
        self.calls_per_task, self.endpoints = calls_per_task, endpoints
        # (minute index, responses, frames, timeouts, late frames, calls placed) per kept minute
        self.kept: deque[tuple[int, tuple[np.ndarray, ...]]] = deque(maxlen=RESPONDER_WINDOW_MINUTES)
        self.last_share = 1.0  # of the newest minute, searchable when the look's query starts

    def push(self, index: int, *arrays: np.ndarray) -> None:
        self.kept.append((index, arrays))

    def run_query(
        self, log_group: str, query: str, start: datetime, end: datetime, deadline: float
    ) -> QueryResult:
        if query.startswith(self.rooms_prefix):
            return QueryResult("bench-rooms", [], {})  # the rooms do not change the verdict
        counts = self._sums(start, end)
        if query == self.reach_query:
            rows = list(self._task_rows(counts))[:MAX_TASK_ROWS]
        elif query == self.outcomes_query:
            rows = [row for row, _ in zip(self._job_rows(counts), range(MAX_JOBS), strict=False)]
        else:
            raise AwsApiError(
                f"the bench's Insights stand-in does not answer {query!r}", aws_code="Unsupported"
            )
        return QueryResult("bench", rows, {})

    def _sums(self, start: datetime, end: datetime) -> tuple[np.ndarray, ...]:
        newest = self.kept[-1][0]
        inside = [
            tuple(np.floor(a * self.last_share).astype(np.int64) for a in arrays)
            if index == newest
            else arrays
            for index, arrays in self.kept
            if start <= EPOCH + timedelta(minutes=index) < end
        ]
        width = len(self.kept[0][1])
        return tuple(
            sum((arrays[i] for arrays in inside), np.zeros_like(self.kept[0][1][i])) for i in range(width)
        )

    def _task_rows(self, counts: tuple[np.ndarray, ...]) -> Iterator[Row]:
        for task in np.flatnonzero(counts[0] + counts[2]).tolist():
            values = {name: str(int(counts[i][task])) for i, name in enumerate(TTS_COUNTS)}
            yield {"@logStream": f"{STREAM_PREFIX}{task}", **values, TTS_ENDPOINT_FIELD: self.endpoints[task]}

    def _job_rows(self, counts: tuple[np.ndarray, ...]) -> Iterator[Row]:
        lines = counts[0] + counts[2]
        jobs = np.minimum(counts[4] + self.calls_per_task, lines)
        for task in np.flatnonzero(lines).tolist():
            n = int(jobs[task])
            for job in range(n):
                shares = {
                    name: str(int(counts[i][task]) // n + (job < int(counts[i][task]) % n))
                    for i, name in enumerate(TTS_COUNTS)
                }
                stream, endpoint = f"{STREAM_PREFIX}{task}", self.endpoints[task]
                yield {
                    "job_id": f"AJ_{task}_{job}",
                    "@logStream": stream,
                    **shares,
                    TTS_ENDPOINT_FIELD: endpoint,
                }


class FleetFacts:
    """``TaskFactsReader`` over the simulated fleet: every task runs, and ECS tells each one's zone,
    revision and start (on the responder's clock, ``devkit.traffic.EPOCH``)."""

    def __init__(self, groups: Groups) -> None:
        self.facts = {
            f"{STREAM_PREFIX}{task}": TaskFacts(
                f"{STREAM_PREFIX}{task}",
                zone,
                f"arn:aws:ecs:eu-west-1:1:task-definition/{revision}",
                EPOCH + timedelta(seconds=started),
            )
            for task, (zone, revision, started) in enumerate(
                zip(groups.zone, groups.revision, groups.started_seconds.tolist(), strict=True)
            )
        }

    def read(self, streams: Sequence[str], deadline: float) -> FactsRead:
        return FactsRead(tuple(self.facts[stream] for stream in streams))


def responder_look(
    insights: MinuteInsights,
    data_end: float,
    share: float,
    bad_task: int | None,
    ecs: FleetFacts | None = None,
) -> tuple[str, str]:
    """The responder's read and verdict for the page whose alarm window ends at ``data_end``
    (seconds), with ``share`` of that window's last minute searchable when it queries."""
    insights.last_share = share
    end = EPOCH + timedelta(seconds=data_end)
    window = TimeWindow(start=end - timedelta(minutes=RESPONDER_WINDOW_MINUTES), end=end)
    findings = investigate(window, SETTINGS, insights, time.monotonic() + 60, ecs=ecs)
    concentration = findings.concentration
    read = "per-task rows" if findings.truncated else "per-job rows"
    if concentration.group is not None:
        return read, f"{Verdict.GROUP.value}: {concentration.group.dimension}"
    if concentration.verdict is not Verdict.CONCENTRATED or concentration.top is None:
        return read, concentration.verdict.value
    task = int(concentration.top.log_stream.rsplit("/t", 1)[1])
    if bad_task is None:
        return read, "concentrated: one task (no single silent task in this family)"
    return read, "concentrated: the silent task" if task == bad_task else "concentrated: another task"
