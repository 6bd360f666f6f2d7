"""The warning a live room gets before it is reaped: recorded in the room's own metadata (so it
survives across runs without a database) and sent to its participants as a data message."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

# The room-metadata key (in a JSON object) that records when the reaper warned the room, in Unix
# seconds, and the topic of the data message participants receive.
WARNED_AT_KEY = "lkfr_reaper_warned_at"


WARNING_TOPIC = "lkfr.room-ending"


@dataclass(frozen=True)
class WarningRecord:
    """What a room's metadata says about the reaper's warning."""

    writable: bool
    warned_at: datetime | None = None


def read_warning(metadata: str) -> WarningRecord:
    """Empty metadata or a JSON object can carry the record; anything else is the application's
    own text, which the reaper never overwrites."""
    if not metadata.strip():
        return WarningRecord(writable=True)
    try:
        value = json.loads(metadata)
    except ValueError:
        return WarningRecord(writable=False)
    if not isinstance(value, dict):
        return WarningRecord(writable=False)
    stamp = value.get(WARNED_AT_KEY)
    if isinstance(stamp, int | float) and not isinstance(stamp, bool) and stamp > 0:
        return WarningRecord(writable=True, warned_at=datetime.fromtimestamp(stamp, tz=UTC))
    return WarningRecord(writable=True)


def with_warning(metadata: str, warned_at: datetime) -> str:
    """The metadata with the warning's time added, every other key kept."""
    value: dict[str, Any] = json.loads(metadata) if metadata.strip() else {}
    value[WARNED_AT_KEY] = int(warned_at.timestamp())
    return json.dumps(value, separators=(",", ":"))


def warning_message(
    room: str, age_seconds: float | None, max_age_seconds: float | None, grace_seconds: float, now: datetime
) -> bytes:
    """The data message participants receive (JSON; an app shows it as it likes)."""
    return json.dumps(
        {
            "type": "room-ending",
            "reason": "max-age",
            "room": room,
            "age_seconds": round(age_seconds or 0.0),
            "max_age_seconds": max_age_seconds,
            "ends_after": datetime.fromtimestamp(now.timestamp() + grace_seconds, tz=UTC).isoformat(),
        }
    ).encode()
