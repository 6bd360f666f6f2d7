"""What the functions do, per function (``FunctionName`` value), for the cost model: invocations,
Logs Insights looks and the minutes of log they read, report bytes, notifications and LiveKit
secret reads over a run of ``minutes``.

The development tree measures it with the replay (``bench.cost``: the functions' own code over
simulated traffic) and writes it to ``usage_profile.json`` beside this module, which ``lkfr cost``
reads; a test checks the file against a fresh replay, so it cannot drift from the code.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

PROFILE_FILE = "usage_profile.json"


@dataclass
class Usage:
    """What one run did."""

    minutes: int
    invocations: Counter[str] = field(default_factory=Counter)
    looks: Counter[str] = field(default_factory=Counter)
    look_minutes: dict[str, float] = field(default_factory=dict)
    # Minutes of log the looks read per clock hour (by the hour a look's window ends in).
    hour_minutes: dict[str, float] = field(default_factory=dict)
    report_bytes: Counter[str] = field(default_factory=Counter)
    notifications: int = 0
    # GetSecretValue calls: one per five-minute cache per function that made a LiveKit client in it.
    secret_reads: Counter[str] = field(default_factory=Counter)

    def peak_hour_bytes(self, bytes_per_minute: float) -> float:
        """What the looks of the busiest clock hour scanned."""
        return max(self.hour_minutes.values(), default=0.0) * bytes_per_minute

    def to_json(self) -> dict[str, Any]:
        return {
            "minutes": self.minutes,
            "invocations": dict(sorted(self.invocations.items())),
            "looks": dict(sorted(self.looks.items())),
            "look_minutes": {k: round(v, 4) for k, v in sorted(self.look_minutes.items())},
            "hour_minutes": {k: round(v, 4) for k, v in sorted(self.hour_minutes.items())},
            "report_bytes": dict(sorted(self.report_bytes.items())),
            "notifications": self.notifications,
            "secret_reads": dict(sorted(self.secret_reads.items())),
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> Usage:
        return cls(
            minutes=int(document["minutes"]),
            invocations=Counter(document["invocations"]),
            looks=Counter(document["looks"]),
            look_minutes=dict(document["look_minutes"]),
            hour_minutes=dict(document["hour_minutes"]),
            report_bytes=Counter(document["report_bytes"]),
            notifications=int(document["notifications"]),
            secret_reads=Counter(document["secret_reads"]),
        )


@dataclass(frozen=True)
class UsageProfile:
    """A healthy hour and one incident run (a fleet-wide TTS outage of ``incident_hours``), with the
    bytes a response puts in the agent log group: the stock livekit-agents lines and the lines the
    agent package adds (``livekit_fleet_agent.detection_signals``), measured on the simulated agents."""

    baseline: Usage
    incident: Usage
    incident_hours: float
    # The responder re-checking every tick (no back-off) for one hour of the same outage.
    without_backoff: Usage
    stock_bytes_per_response: float
    signal_bytes_per_response: float

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline.to_json(),
            "incident": self.incident.to_json(),
            "incident_hours": self.incident_hours,
            "without_backoff": self.without_backoff.to_json(),
            "stock_bytes_per_response": round(self.stock_bytes_per_response, 1),
            "signal_bytes_per_response": round(self.signal_bytes_per_response, 1),
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> UsageProfile:
        return cls(
            baseline=Usage.from_json(document["baseline"]),
            incident=Usage.from_json(document["incident"]),
            incident_hours=float(document["incident_hours"]),
            without_backoff=Usage.from_json(document["without_backoff"]),
            stock_bytes_per_response=float(document["stock_bytes_per_response"]),
            signal_bytes_per_response=float(document["signal_bytes_per_response"]),
        )


def shipped_profile() -> UsageProfile:
    """The profile measured on the example environment, shipped with the package."""
    text = resources.files(__package__).joinpath(PROFILE_FILE).read_text(encoding="utf-8")
    return UsageProfile.from_json(json.loads(text))
