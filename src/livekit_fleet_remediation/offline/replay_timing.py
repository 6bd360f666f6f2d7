"""The replay's time under a delay profile (``offline.delays``): when each invocation happens and
what its queries can see. Never deployed.

* Work is queued by the moment it happens: an alarm's state change when the alarm evaluates the
  minute (after the metric is visible, at its once-a-minute evaluation), its delivery to the
  functions after EventBridge's delay; a scheduled tick after its jitter; a put event after its
  delivery. A function's work starts after a cold start when it has been idle.
* A Logs Insights query finds only the lines searchable by its start (each line has its own
  ingestion delay) and takes its queue and run time for the bytes in its window: the clock moves on.
* Feedback: the lines a task would have written after it was stopped are gone from what the alarms
  and the queries read (``cut``).

Under the ``none`` profile every draw is zero and the queue keeps the minute-by-minute order.
"""

from __future__ import annotations

import heapq
import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from fleet_remediation.contract.signals import Signal, SignalCatalog
from livekit_fleet_remediation.offline.delays import DelayProfile, Delays, Spread
from livekit_fleet_remediation.offline.insights import OfflineLogsInsights
from livekit_fleet_remediation.offline.log_export import LogEvent
from livekit_fleet_remediation.offline.replay_world import SimulatedClock
from livekit_fleet_remediation.offline.worker_logs import OfflineWorkerLogs

# Work that follows from other work (a put event's delivery) runs before other work of the same moment.
FOLLOW_UP, SCHEDULED = 0, 1
# A task whose first line comes this long after the log's first is one ECS started during the log.
STARTED_DURING_LOG = timedelta(minutes=5)


# Queued work: (when, priority, sequence number, what to run); the sequence keeps the push order.
Work = tuple[datetime, int, int, Callable[[], None]]


class ReplayTiming:
    """The replay's delays (seeded), its queue of timed work, and the lines each query can see."""

    def __init__(self, profile: DelayProfile, seed: int, events: Sequence[LogEvent], clock: SimulatedClock):
        self.profile, self.clock = profile, clock
        self.delays = Delays(profile, seed)
        self._queue: list[Work] = []
        self._seq = itertools.count()
        lag = profile.log_visible
        self._searchable = {id(e): e.at + self.seconds(lag) for e in events}
        self._bytes = {id(e): len(json.dumps(e.record, separators=(",", ":"))) for e in events}
        # stream -> the moment its task stopped: its later lines are never written.
        self.cuts: dict[str, datetime] = {}

    def seconds(self, spread: Spread) -> timedelta:
        return timedelta(seconds=self.delays.draw(spread))

    # --- the queue -------------------------------------------------------------------------------
    def push(self, at: datetime, run: Callable[[], None], priority: int = SCHEDULED) -> None:
        heapq.heappush(self._queue, (at, priority, next(self._seq), run))

    def run_until(self, until: datetime | None) -> None:
        """Run the queued work due by ``until`` (all of it when None), in time order."""
        while self._queue and (until is None or self._queue[0][0] <= until):
            at, _, _, run = heapq.heappop(self._queue)
            self.clock.now = at
            run()

    def alarm_seen(self, alarm: str, period_end: datetime) -> datetime:
        """When the alarm's evaluation of the minute ending at ``period_end`` changes its state."""
        seconds = self.delays.alarm_sees(alarm, period_end.timestamp())
        return datetime.fromtimestamp(seconds, tz=period_end.tzinfo)

    def started(self, function: str) -> None:
        """A function's invocation begins now: after a cold start when it has been idle."""
        now = self.clock.now
        at = self.delays.invoked(function, now.timestamp())
        self.clock.now = datetime.fromtimestamp(at, tz=now.tzinfo)

    # --- what a query sees -----------------------------------------------------------------------
    def written(self, event: LogEvent) -> bool:
        cut = self.cuts.get(event.stream)
        return cut is None or event.at <= cut

    def searchable(self, events: Sequence[LogEvent]) -> list[LogEvent]:
        """The events of a query's window it finds now; the query's run time passes."""
        now = self.clock.now
        scanned = sum(self._bytes.get(id(e), 0) for e in events if self.written(e))
        found = [e for e in events if self.written(e) and self._searchable.get(id(e), e.at) <= now]
        self.clock.now = now + timedelta(seconds=self.delays.insights_seconds(scanned))
        return found


class DelayedWorkerLogs(OfflineWorkerLogs):
    """The drainer's Logs Insights reads over the log, as ``ReplayTiming`` lets them see it."""

    def __init__(
        self, events: Sequence[LogEvent], slow_vad: Signal, catalog: SignalCatalog, timing: ReplayTiming
    ) -> None:
        super().__init__(events, slow_vad, catalog)
        self.timing = timing

    def _in_window(self, start: datetime, end: datetime) -> list[LogEvent]:
        return self.timing.searchable(super()._in_window(start, end))


class DelayedLogsInsights(OfflineLogsInsights):
    """The responder's Logs Insights queries over the log, as ``ReplayTiming`` lets them see it."""

    def __init__(self, events: Sequence[LogEvent], catalog: SignalCatalog, timing: ReplayTiming) -> None:
        super().__init__(events, catalog)
        self.timing = timing

    def _window(self, start: datetime, end: datetime) -> list[LogEvent]:
        return self.timing.searchable(super()._window(start, end))


@dataclass(frozen=True)
class Deployments:
    """The rolling deployments a log shows: when each was in progress, and when each replaced task
    stopped (its last line)."""

    spans: list[tuple[datetime, datetime]]
    retired: dict[str, datetime]


def rolling_deployments(events: Sequence[LogEvent], longest: timedelta) -> Deployments:
    """When the log shows ECS replacing tasks: a task that starts during the log while older tasks
    stop logging within ``longest`` after it (and before the log's end) is a rolling deployment, from
    the new task's first line to the last replaced task's last line. A task that starts while none
    stops (a scale-out) is none."""
    first: dict[str, datetime] = {}
    last: dict[str, datetime] = {}
    for event in events:
        first.setdefault(event.stream, event.at)
        last[event.stream] = event.at
    if not events:
        return Deployments([], {})
    start, end = events[0].at, events[-1].at
    stopped = {stream: at for stream, at in last.items() if end - at > timedelta(minutes=2)}
    spans, retired = [], {}
    for began in first.values():
        if began - start < STARTED_DURING_LOG:
            continue
        replaced = {
            other: at for other, at in stopped.items() if first[other] < began <= at <= began + longest
        }
        if replaced:
            spans.append((began, max(replaced.values())))
            retired.update(replaced)
    merged: list[tuple[datetime, datetime]] = []
    for began, ended in sorted(spans):
        if merged and began <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], ended))
        else:
            merged.append((began, ended))
    return Deployments(merged, retired)


def describe(profile: DelayProfile, seed: int) -> str:
    if profile.instant:
        return (
            "Delays: none (--profile none): alarm times are the end of the breaching minute, every tick "
            "on its minute, every query instant and complete."
        )
    return (
        f"Delays: profile {profile.name} ({profile.version}, seed {seed}): alarms change state when they "
        "evaluate a visible minute, events and ticks arrive late, functions start cold when idle, Logs "
        "Insights misses lines not yet searchable and takes its queue and run time; a stopped task writes "
        "no more lines."
    )
