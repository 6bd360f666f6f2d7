"""A drill's marker: the ECS task tag ``lkfr drill`` writes on the one task it drills, and the agent
package's drill hook reads through the task metadata endpoint (``livekit_fleet_agent.drill`` keeps the
same names and format; a unit test holds the two together).

The value is ``<fault>:<until>:<drill id>``: the fault to fake inside that worker, the Unix second at
which the drill ends by itself whatever happens to the command that started it, and the drill's id.
A marker that is malformed, expired, or ends further ahead than ``MAX_DRILL_SECONDS`` is no drill.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

DRILL_TAG = "livekit-fleet-drill"
# A drill stops by itself: no marker may ask for more than an hour.
MAX_DRILL_SECONDS = 3600
# ECS tag values allow letters, digits, spaces and _ . : / = + - @ (at most 256 characters).
DRILL_ID_PATTERN = r"[a-z0-9-]{4,40}"
_MARKER = re.compile(rf"^(?P<fault>[a-z-]+):(?P<until>[0-9]{{1,12}}):(?P<id>{DRILL_ID_PATTERN})$")


class DrillFault(StrEnum):
    # The worker's first TTS audio frame is withheld: the caller hears nothing (the seed's 17:32).
    TTS_SILENCE = "tts-silence"
    # Busy processes take the task's CPU: VAD inference falls behind real time (the seed's 16:00).
    CPU_STARVED = "cpu-starved"
    # The next job whose caller leaves stays in its room: a session held past its age (the seed's 15:08).
    ABANDONED_SESSION = "abandoned-session"


@dataclass(frozen=True)
class DrillMarker:
    fault: DrillFault
    until: int
    drill_id: str

    def value(self) -> str:
        return f"{self.fault.value}:{self.until}:{self.drill_id}"

    @classmethod
    def parse(cls, value: str, now: float) -> DrillMarker | None:
        """The marker ``value`` names, if it is well formed and current at ``now`` (Unix seconds)."""
        found = _MARKER.match(value.strip())
        if found is None or found["fault"] not in DrillFault.__members__.values():
            return None
        until = int(found["until"])
        if not now < until <= now + MAX_DRILL_SECONDS:
            return None
        return cls(DrillFault(found["fault"]), until, found["id"])
