"""Agent log events as ``aws logs filter-log-events`` exports them, parsed once: the input of every
offline evaluation (the backtest, the drainer's offline statistics, tests)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from fleet_remediation.contract.signals import TTS_ENDPOINT_FIELD, SignalCatalog, parse_log_line


@dataclass(frozen=True)
class LogEvent:
    stream: str
    at: datetime
    record: dict[str, Any]


class UnreadableLogError(Exception):
    """An exported log that cannot be read: one line for the user, no traceback."""


def load_events(path: Path) -> list[LogEvent]:
    """``read_events`` of a file, every way it can fail said in one ``UnreadableLogError`` line."""
    try:
        with path.open(encoding="utf-8") as handle:
            return read_events(handle)
    except OSError as exc:
        raise UnreadableLogError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UnreadableLogError(f"{path} is not UTF-8 text: {exc.reason}") from None
    except ExportShapeError as exc:
        raise UnreadableLogError(f"{path}: {exc}") from None
    except ValueError as exc:
        raise UnreadableLogError(f"{path} is not filter-log-events JSON: {exc}") from None


class ExportShapeError(ValueError):
    """The input is JSON, but not events as ``filter-log-events`` exports them."""


def read_events(handle: TextIO) -> list[LogEvent]:
    """The export shapes seen in practice: the CLI's ``{"events": [...]}`` document, one event per
    line (JSON Lines), a JSON array of events (``--query events``), or pages of the document one per
    line. Lines whose message is not a JSON object are kept out, as metric filters with JSON
    patterns ignore them. An event without a string ``message`` and a millisecond ``timestamp`` is
    an ``ExportShapeError`` naming its position."""
    text = handle.read()
    try:
        documents: list[Any] = [json.loads(text)]
    except json.JSONDecodeError:  # several lines: one event (or one page) per line
        documents = [json.loads(line) for line in text.splitlines() if line.strip()]
    events = []
    for position, item in enumerate(_flattened(documents), start=1):
        message, moment = _message_and_time(item, position)
        record = parse_log_line(message)
        if record is not None:
            stream = item.get("logStreamName", "")
            events.append(LogEvent(stream if isinstance(stream, str) else "", moment, record))
    return sorted(events, key=lambda e: e.at)


def _flattened(documents: list[Any]) -> Iterator[Any]:
    for document in documents:
        if isinstance(document, dict) and "events" in document:
            yield from document["events"] if isinstance(document["events"], list) else [document["events"]]
        elif isinstance(document, list):
            yield from document
        else:
            yield document


def _message_and_time(item: Any, position: int) -> tuple[str, datetime]:
    if not isinstance(item, dict):
        raise ExportShapeError(f"event {position} is a {type(item).__name__}, not an object")
    message, stamp = item.get("message"), item.get("timestamp")
    if not isinstance(message, str):
        raise ExportShapeError(f"event {position} has no string 'message'")
    if isinstance(stamp, str) and stamp.isdigit():
        stamp = int(stamp)
    if not isinstance(stamp, int | float) or isinstance(stamp, bool) or not 0 <= stamp < 10**14:
        raise ExportShapeError(f"event {position}: 'timestamp' must be milliseconds since the epoch")
    return message, datetime.fromtimestamp(stamp / 1000, tz=UTC)


def tts_counts_by_stream(
    events: Iterable[LogEvent], catalog: SignalCatalog
) -> dict[str, tuple[list[int], str]]:
    """Per log stream with TTS lines: its ``TTS_COUNTS`` summed and the latest TTS endpoint its lines
    name ("" when none): what the per-task query answers, for the offline Insights and worker logs."""
    found: dict[str, tuple[list[int], str]] = {}
    for event in events:
        hits = catalog.tts_counts(event.record)
        if not any(hits):
            continue
        counts, endpoint = found.get(event.stream, ([0] * len(hits), ""))
        named = event.record.get(TTS_ENDPOINT_FIELD)
        found[event.stream] = (
            [a + b for a, b in zip(counts, hits, strict=True)],
            named if isinstance(named, str) and named else endpoint,
        )
    return found
