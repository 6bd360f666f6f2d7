"""The per-task TTS reach rows: one Logs Insights row per task (log stream), within the row limit
at any fleet size Insights can list. The drainer's tick and the responder read the same rows and
judge them with the same verdict (``fleet_remediation.domain.task_reach``)."""

from __future__ import annotations

from datetime import datetime

from fleet_remediation.adapters.logs_insights import LogsInsights, Row
from fleet_remediation.adapters.windowed_insights import run_in_pieces, summed
from fleet_remediation.contract.signals import TTS_COLUMNS, TTS_ENDPOINT_FIELD, SignalCatalog
from fleet_remediation.core.errors import AwsApiError
from fleet_remediation.domain.task_reach import TaskReach

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


def latest_endpoints(pieces: list[list[Row]]) -> dict[str, str]:
    """Per log stream, the TTS endpoint its rows name: the latest piece that names one (pieces run
    in order)."""
    return {
        row["@logStream"]: row[TTS_ENDPOINT_FIELD]
        for rows in pieces
        for row in rows
        if row.get("@logStream") and row.get(TTS_ENDPOINT_FIELD)
    }


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
    endpoints = latest_endpoints(pieces)
    return [
        _row(row, endpoints.get(row["@logStream"], ""))
        for row in summed(pieces, ("@logStream",), TTS_COLUMNS)
        if row.get("@logStream")
    ]
