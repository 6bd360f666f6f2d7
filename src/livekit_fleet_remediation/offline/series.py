"""Per-minute counts over exported log events, for the incident page's time axis."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from fleet_remediation.contract.naming import task_id_from_log_stream
from fleet_remediation.contract.signals import SignalCatalog
from livekit_fleet_remediation.offline.log_export import LogEvent


def minute_series(
    events: Sequence[LogEvent], catalog: SignalCatalog, start: datetime, minutes: int
) -> dict[str, Any]:
    """Per minute from ``start``: responses started, first audio frames, and slow-VAD warnings per log
    stream (only streams that logged any)."""
    responses, frames = [0] * minutes, [0] * minutes
    vad: dict[str, list[int]] = {}
    for event in events:
        index = int((event.at - start).total_seconds() // 60)
        if not 0 <= index < minutes:
            continue
        responses[index] += catalog.response_started.count(event.record)
        frames[index] += catalog.first_audio_frame.count(event.record)
        if catalog.slow_vad.matches(event.record):
            vad.setdefault(event.stream, [0] * minutes)[index] += 1
    ranked = sorted(vad.items(), key=lambda item: -sum(item[1]))
    return {
        "start": int(start.timestamp() * 1000),
        "minutes": minutes,
        "responses": responses,
        "frames": frames,
        "vad": [{"worker": task_id_from_log_stream(stream), "counts": counts} for stream, counts in ranked],
    }
