"""Agent log events as ``aws logs filter-log-events`` exports them, parsed once: the input of every
offline evaluation (the backtest, the drainer's offline statistics, tests)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

from fleet_remediation.contract.signals import parse_log_line


@dataclass(frozen=True)
class LogEvent:
    stream: str
    at: datetime
    record: dict[str, Any]


def read_events(handle: TextIO) -> list[LogEvent]:
    """Both export shapes (one event per line, or the ``{"events": [...]}`` document); lines whose
    message is not a JSON object are kept out, as metric filters with JSON patterns ignore them."""
    text = handle.read()
    raw: list[dict[str, Any]]
    try:
        document = json.loads(text)
    except json.JSONDecodeError:  # several lines: one event per line
        raw = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        raw = document["events"] if isinstance(document, dict) and "events" in document else [document]
    events = []
    for item in raw:
        record = parse_log_line(item["message"])
        if record is not None:
            moment = datetime.fromtimestamp(item["timestamp"] / 1000, tz=UTC)
            events.append(LogEvent(item.get("logStreamName", ""), moment, record))
    return sorted(events, key=lambda e: e.at)
