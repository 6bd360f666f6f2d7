"""When the fleet-scale benchmark's decisions happen and what they see, under a delay profile
(``livekit_fleet_remediation.offline.delays``): the drainer's tick fires after the schedule's jitter
(and a cold start when its environment went idle), its Logs Insights query misses the lines not yet
searchable at its end and takes the queue and run time of the bytes it scans; an alarm sees a minute
only once its metric is visible and its next evaluation comes, and its target runs after EventBridge
delivers. The traffic is the same under every profile (its own seed); these draws have theirs.

The tick reads the minutes up to the end of its scheduled minute: lines from the seconds after it
(before the tick started) are not counted, which is never kinder than the real window.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from livekit_fleet_remediation.offline.delays import DelayProfile, Delays

# The seed of the delays' draws is the traffic's plus this: the same traffic under every profile.
DELAY_SEED_OFFSET = 7919
# The responder's own draws (delivery, cold start) have theirs: adding its look changes no other draw.
RESPONDER_SEED_OFFSET = 104729
DRAINER, CONTRIBUTOR_HANDLER, RESPONDER = "drainer", "contributor-handler", "responder"


@dataclass(frozen=True)
class Decision:
    """A decision's moment (seconds) and what it waited for after the end of its data's minute."""

    at: float
    data_end: float
    # When its query starts (its data's cut-off), for the tick.
    query_start: float
    waits: dict[str, float]


class BenchTiming:
    """One run's delays: ``tick`` and ``alarm_decision`` turn the end of a minute into the moment
    a decision over it is made; ``visible`` thins the minute a query ends in."""

    def __init__(self, profile: DelayProfile, seed: int, bytes_per_line: float) -> None:
        self.profile = profile
        self.delays = Delays(profile, seed + DELAY_SEED_OFFSET)
        self.responder_delays = Delays(profile, seed + RESPONDER_SEED_OFFSET)
        self.rng = np.random.default_rng(seed + DELAY_SEED_OFFSET)
        self.bytes_per_line = bytes_per_line
        self.lines: deque[int] = deque(maxlen=60)
        # (visible at, in ALARM) of each alarm's state changes, as DescribeAlarms would show them.
        self._states: dict[str, deque[tuple[float, bool]]] = {}
        self._shown: dict[str, bool] = {}

    def minute_lines(self, lines: int) -> None:
        self.lines.append(lines)

    def tick(self, end: float, window_minutes: int) -> Decision:
        """The scheduled tick for the minute ending at ``end`` reading ``window_minutes``."""
        delays = self.delays
        fired = end + delays.draw(self.profile.schedule_jitter)
        started = delays.invoked(DRAINER, fired)
        scanned = sum(list(self.lines)[-window_minutes:]) * self.bytes_per_line
        decided = started + delays.insights_seconds(scanned)
        waits = {"schedule": fired - end, "cold_start": started - fired, "insights": decided - started}
        return Decision(decided, end, started, waits)

    def query(self, decision: Decision, window_minutes: int) -> Decision:
        """A second query of the same tick over ``window_minutes``, started when the first decided."""
        scanned = sum(list(self.lines)[-window_minutes:]) * self.bytes_per_line
        decided = decision.at + self.delays.insights_seconds(scanned)
        waits = {**decision.waits, "second_query": decided - decision.at}
        return Decision(decided, decision.data_end, decision.query_start, waits)

    def visible(self, counts: np.ndarray, minute_end: float, query_start: float) -> np.ndarray:
        """The part of the last minute's per-task ``counts`` a query started at ``query_start`` finds."""
        share = self.delays.share_visible(minute_end - 60.0, minute_end, query_start)
        if share >= 1.0:
            return counts
        return self.rng.binomial(counts, share)

    def alarm_decision(self, alarm: str, end: float, function: str) -> Decision:
        """The alarm breaching on the minute ending at ``end``: when its target decides."""
        delays = self.delays
        seen = delays.alarm_sees(alarm, end)
        delivered = seen + delays.draw(self.profile.event_delivery)
        started = delays.invoked(function, delivered)
        waits = {"alarm": seen - end, "delivery": delivered - seen, "cold_start": started - delivered}
        return Decision(started, end, started, waits)

    def responder_look(self, end: float) -> tuple[float, float]:
        """The TTS-reach alarm's change to ALARM on the minute ending at ``end``, just recorded by
        ``alarm_state``: when the responder starts, and the share of that minute it can search."""
        seen = self._states["tts_new"][-1][0]
        delays = self.responder_delays
        started = delays.invoked(RESPONDER, seen + delays.draw(self.profile.event_delivery))
        return started, self.delays.share_visible(end - 60.0, end, started)

    def alarm_state(self, alarm: str, end: float, in_alarm: bool) -> None:
        """Record the alarm's state for the minute ending at ``end`` (a change shows when evaluated)."""
        states = self._states.setdefault(alarm, deque())
        last = states[-1][1] if states else self._shown.get(alarm, False)
        if in_alarm != last:
            seen = self.delays.alarm_sees(alarm, end)
            states.append((max(seen, states[-1][0]) if states else seen, in_alarm))

    def in_alarm(self, alarm: str, at: float) -> bool:
        """The alarm's state as DescribeAlarms shows it at ``at``."""
        states = self._states.get(alarm, deque())
        while states and states[0][0] <= at:
            self._shown[alarm] = states.popleft()[1]
        return self._shown.get(alarm, False)
