"""The per-task TTS reach read by the drainer's tick: one Logs Insights row per task (log stream),
within the row limit at any fleet size Insights can list, and the tick's decision over it.

The drainer's scheduled tick reads these rows (``WorkerLogs.task_reach``) and judges them with
``tick_verdict`` (``silent_task``): a suspect goes to the ladder as a suspect worker, under every
guardrail a suspect-worker event has; a fleet-wide verdict drains nobody.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime

from fleet_remediation.adapters.logs_insights import LogsInsights, Row
from fleet_remediation.adapters.windowed_insights import run_in_pieces, summed
from fleet_remediation.contract.signals import TTS_COLUMNS, TTS_ENDPOINT_FIELD, SignalCatalog
from fleet_remediation.contract.task_reach import TaskReachSettings
from fleet_remediation.core.errors import AwsApiError
from worker_drainer.task_reach import TaskFacts, TaskReach, TaskReachAssessment, assess_task_reach

# Logs Insights returns at most 10,000 rows; one row per task keeps a fleet far below it.
MAX_TASK_ROWS = 10000


def task_reach_query(catalog: SignalCatalog) -> str:
    """Responses started, first audio frames, first-audio timeouts and late first frames per log
    stream, with the TTS endpoint its lines name (the agent package's group label, if any)."""
    return "\n| ".join(
        [
            f"filter {catalog.tts_selector()}",
            f"stats {catalog.tts_sums()}, latest({TTS_ENDPOINT_FIELD}) as {TTS_ENDPOINT_FIELD} by @logStream",
            f"limit {MAX_TASK_ROWS}",
        ]
    )


def _row(row: Row, endpoint: str) -> TaskReach:
    try:
        counts = SignalCatalog.tts_totals(row)
    except ValueError as exc:
        raise AwsApiError(f"Logs Insights returned a {exc}", aws_code="BadResult") from None
    return TaskReach(row["@logStream"], *counts, tts_endpoint=endpoint)


def read_task_reach(
    insights: LogsInsights,
    log_group: str,
    catalog: SignalCatalog,
    window: tuple[datetime, datetime],
    deadline: float,
) -> list[TaskReach]:
    """One row per task over ``window``; a result at the row limit is split, never decided on."""
    pieces = run_in_pieces(
        insights, log_group, task_reach_query(catalog), window, deadline, limit=MAX_TASK_ROWS
    )
    # The latest piece that names an endpoint for a stream is the latest endpoint (pieces run in order).
    endpoints = {
        row["@logStream"]: row[TTS_ENDPOINT_FIELD]
        for rows in pieces
        for row in rows
        if row.get("@logStream") and row.get(TTS_ENDPOINT_FIELD)
    }
    return [
        _row(row, endpoints.get(row["@logStream"], ""))
        for row in summed(pieces, ("@logStream",), TTS_COLUMNS)
        if row.get("@logStream")
    ]


def tick_verdict(
    rows: Sequence[TaskReach], settings: TaskReachSettings, running: Sequence[TaskFacts], now: datetime
) -> TaskReachAssessment:
    """The per-task verdict over the tick's rows and what ECS says of the running tasks; only
    running tasks' streams can be suspects (a replaced task's stream is history)."""
    streams = {task.log_stream for task in running}
    found = assess_task_reach(rows, settings, len(streams), running, now)
    kept = tuple(v for v in found.tested if v.log_stream in streams or not v.suspect)
    return dataclasses.replace(found, tested=kept)
