"""The traffic simulator at fleet scale (development only): per minute and per task, the counts the
detection reads (responses, first audio frames, first-audio timeouts, slow-VAD warnings and their
largest delay), streamed minute by minute in memory bounded by the fleet's size, never by its time.

``devkit.traffic`` writes every log line of every lesson; at 1,000 tasks and 20,000 responses a
minute that is 60 million lines a simulated day. Every evaluator the detection benchmark runs sums
lines per minute (metric filters), per task over minutes (the per-task query, a Contributor Insights
rule) or per job (row counts against a query's limit), so this module draws those sums directly, with
the same assumptions as ``devkit.traffic`` (its lag tables, interruption and isolated-hang rates, VAD
warm-up bursts and the failure families), and the one failing task explicitly, response by response,
so its onset and its timeouts' times are exact:

* calls arrive as a Poisson process (constant, or the diurnal curve), each placed on a random task
  with a free slot (the load function counts jobs only) and never on a cordoned one; a call lasts a
  lognormal time around ``call_minutes`` (sigma 0.6) and its agent responds every
  ``response_gap_seconds`` on average (responses per task per minute ~ Poisson(active calls x rate));
* a response's first frame follows it after a lag from the lag table (the frame lands in the next
  minute with probability mean lag / 60); 0.5 % are interrupted (no frame, no timeout), 0.1 % hang
  (timeout 10 s later, half of them a late frame);
* failures as in ``devkit.traffic``: the silent task's every response from the failure's start times
  out and its callers leave after 45-100 s; ``cpu-starved`` adds a VAD backlog from 15 minutes before
  and ``cpu-starved-zombie`` a test call holding a slot with a growing backlog from 90 minutes before;
  ``provider-outage`` times out every response; ``fleet-slowdown`` multiplies every lag by 2-4.

Not modelled: rolling deploys (a deploy's replacement streams change no count the detection tests);
lessons that end before their frame (a few frames a minute fleet-wide, on healthy and failing tasks
alike).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from devkit.fleet_groups import GROUP_FAILURES, GROUP_FAMILIES, Groups, groups_for
from devkit.fleet_spec import FAMILIES, HEALTHY, Fleet, fleet
from devkit.traffic import SILENT_LESSON_PATIENCE_SECONDS, STARVED_LEAD_SECONDS, FailureKind, diurnal_factor

__all__ = ["FAMILIES", "HEALTHY", "Fleet", "FleetCounts", "Minute", "Truth", "fleet"]

FAILING_GAP_FACTOR = 22 / 26  # the child repeats itself to a silent agent (devkit.traffic)
RING_MINUTES = 256
CALL_SIGMA = 0.6
WARM_UP_WEIGHTS = np.array([30, 25, 20, 12, 7, 4, 2], dtype=float) / 100
ZOMBIE_LEAD_SECONDS = 5400.0
WARM_UP_MINUTES = 60


@dataclass
class Minute:
    """One simulated minute's counts, one entry per task."""

    index: int
    responses: np.ndarray
    frames: np.ndarray
    timeouts: np.ndarray
    vad_warnings: np.ndarray
    vad_max_delay: np.ndarray
    started: np.ndarray  # calls placed on each task this minute
    calls_active: int
    late_frames: np.ndarray | None = None  # first frames after their timeout (None: none)

    @property
    def calls_started(self) -> int:
        return int(self.started.sum())


@dataclass
class Truth:
    bad_task: int | None = None
    fleet_wide: bool = False
    onset_seconds: float | None = None  # the first response that never gets a first frame
    bad_timeouts: list[float] = field(default_factory=list)  # the silent task's timeouts, in time order
    bad_responses: list[float] = field(default_factory=list)  # the silent task's failing responses
    # When each call on the silent task during its failure began to be hurt (failure start for the
    # calls in progress then, placement for those that came later).
    hurt_calls: list[float] = field(default_factory=list)


class FleetCounts:
    """``minutes()`` streams the counts; ``cordon(task)`` stops new calls on a task from then on."""

    def __init__(self, spec: Fleet) -> None:
        self.spec = spec
        self.rng = np.random.default_rng(spec.seed)
        tasks = spec.tasks
        self.active = np.zeros(tasks, dtype=np.int64)
        self.ends = np.zeros((RING_MINUTES, tasks), dtype=np.int64)
        self.carry_frames = np.zeros(tasks, dtype=np.int64)
        self.carry_timeouts = np.zeros(tasks, dtype=np.int64)
        self.cordoned = np.zeros(tasks, dtype=bool)
        self.truth = Truth()
        lags = np.array(spec.tts.quantiles())
        self.frame_spill = float(lags.mean()) / 60
        self.slow_timeout_share = float(
            (lags[:, None] * np.linspace(2, 4, 9)[None, :] > spec.timeout_seconds).mean()
        )
        self.arrivals_per_minute = spec.concurrent_calls / spec.call_minutes
        self.zombie_delay = 0.0
        self.start = self.end = math.inf
        kind = spec.failure
        if kind is not None and spec.failure_start_minute is not None:
            self.start = spec.failure_start_minute * 60
            self.end = self.start + spec.failure_minutes * 60
            self.truth.fleet_wide = not kind.one_worker
            if kind.one_worker:
                self.truth.bad_task = int(self.rng.integers(tasks))
        if spec.family in GROUP_FAMILIES and spec.failure_start_minute is not None:
            self.start = spec.failure_start_minute * 60
            self.end = self.start + spec.failure_minutes * 60
            self.truth.fleet_wide = spec.family in GROUP_FAILURES
            self.truth.onset_seconds = self.start if self.truth.fleet_wide else None
        # Its own generator: the other families' draws stay as they were.
        self.groups: Groups = groups_for(
            spec.family, tasks, self.start, np.random.default_rng(spec.seed + 104729)
        )

    def cordon(self, task: int) -> None:
        self.cordoned[task] = True

    def minutes(self) -> Iterator[Minute]:
        """Minutes 0 .. ``minutes - 1``, after ``WARM_UP_MINUTES`` unreported ones that fill the
        fleet with calls in progress (a fleet does not start empty at minute 0)."""
        for minute in range(-WARM_UP_MINUTES, self.spec.minutes):
            counts = self._minute(minute)
            if minute >= 0:
                yield counts

    # --- one minute ----------------------------------------------------------------------------------
    def _failing(self, kind: FailureKind, at: float) -> bool:
        return self.spec.failure is kind and self.start <= at < self.end

    def _minute(self, minute: int) -> Minute:
        spec, rng = self.spec, self.rng
        slot = minute % RING_MINUTES
        self.active -= self.ends[slot]
        self.ends[slot] = 0
        at = minute * 60.0
        rate = self.arrivals_per_minute * (diurnal_factor(at + 30) if spec.diurnal else 1.0)
        bad = self.truth.bad_task
        silent = bad is not None and self.start - 60 < at < self.end
        if silent and bad is not None and at <= self.start:
            self._callers_leave(bad, minute)
        if silent and bad is not None and at <= self.start:
            self.truth.hurt_calls.extend([self.start] * int(self.active[bad]))
        placed = self._place(int(rng.poisson(rate)), minute, bad if silent else None)
        if silent and bad is not None:
            self.truth.hurt_calls.extend([max(at, self.start)] * int(placed[bad]))
        responses = rng.poisson(self.active * (60 / spec.response_gap_seconds))
        carried = (int(self.carry_frames[bad]), int(self.carry_timeouts[bad])) if bad is not None else (0, 0)
        frames, timeouts = self._outcomes(responses, at)
        late = self._shared(responses, frames, timeouts, at)
        warnings, delay = self._vad(placed, at)
        if silent and bad is not None:
            self._silent_task(bad, minute, carried, (responses, frames, timeouts))
        if bad is not None:
            warnings[bad], delay[bad] = self._starved(bad, at, placed[bad], warnings[bad], delay[bad])
        active = int(self.active.sum())
        return Minute(minute, responses, frames, timeouts, warnings, delay, placed, active, late)

    def _place(self, calls: int, minute: int, silent: int | None) -> np.ndarray:
        """Each call on a random task with a free slot; calls finding none are not placed. A call
        placed on the ``silent`` task lasts only its caller's patience."""
        spec, rng = self.spec, self.rng
        free = np.where(self.cordoned, 0, spec.calls_per_task - self.active)
        placed = np.zeros(spec.tasks, dtype=np.int64)
        for _ in range(4):
            open_tasks = np.flatnonzero(free > placed)
            if calls == 0 or open_tasks.size == 0:
                break
            drawn = rng.multinomial(calls, np.full(open_tasks.size, 1 / open_tasks.size))
            taken = np.minimum(drawn, free[open_tasks] - placed[open_tasks])
            placed[open_tasks] += taken
            calls -= int(taken.sum())
        owners = np.repeat(np.arange(spec.tasks), placed)
        mu = math.log(spec.call_minutes) - CALL_SIGMA**2 / 2
        length = np.clip(rng.lognormal(mu, CALL_SIGMA, owners.size), 0.5, RING_MINUTES - 16)
        if silent is not None and placed[silent]:
            on_silent = owners == silent
            length[on_silent] = rng.uniform(*SILENT_LESSON_PATIENCE_SECONDS, int(placed[silent])) / 60
        ends = minute + np.maximum(1, np.floor(rng.random(owners.size) + length)).astype(np.int64)
        np.add.at(self.ends, (ends % RING_MINUTES, owners), 1)
        self.active += placed
        return placed

    def _outcomes(self, responses: np.ndarray, at: float) -> tuple[np.ndarray, np.ndarray]:
        """First frames and timeouts written this minute (some follow last minute's responses)."""
        spec, rng = self.spec, self.rng
        if self._failing(FailureKind.PROVIDER_OUTAGE, at):
            hung, ok, late = responses, np.zeros_like(responses), np.zeros_like(responses)
        else:
            hung = rng.binomial(responses, spec.isolated_timeout_probability)
            ok = responses - hung - rng.binomial(responses - hung, spec.interrupt_probability)
            late = rng.binomial(hung, 0.5)
            if self._failing(FailureKind.FLEET_SLOWDOWN, at):
                hung = hung + rng.binomial(ok, self.slow_timeout_share)
        spill = rng.binomial(
            ok, min(1.0, self.frame_spill * (3 if self._failing(FailureKind.FLEET_SLOWDOWN, at) else 1))
        )
        frames = ok - spill + self.carry_frames
        self.carry_frames = spill + late
        late_timeouts = rng.binomial(hung, spec.timeout_seconds / 60)
        timeouts = hung - late_timeouts + self.carry_timeouts
        self.carry_timeouts = late_timeouts
        return frames, timeouts

    def _shared(
        self, responses: np.ndarray, frames: np.ndarray, timeouts: np.ndarray, at: float
    ) -> np.ndarray:
        """The group families: a failing group's tasks answer nothing (every response times out);
        a warming task's responses time out and then play (a timeout and a late first frame)."""
        failing = self.groups.failing(at, self.end)
        frames[failing] = 0
        timeouts[failing] = responses[failing]
        warming = self.groups.warming_up(at)
        late = np.where(warming, responses, 0)
        timeouts[warming] = responses[warming]
        frames[warming] = responses[warming]
        return late

    def _silent_task(
        self,
        bad: int,
        minute: int,
        carried: tuple[int, int],
        counts: tuple[np.ndarray, np.ndarray, np.ndarray],
    ) -> None:
        """The failing task, response by response: from the failure's start no response gets a first
        frame and each times out (``carried``: its frames and timeouts due from the minute before)."""
        spec, rng, truth = self.spec, self.rng, self.truth
        responses, frames, timeouts = counts
        at = minute * 60.0
        rate = self.active[bad] * 60 / (spec.response_gap_seconds * FAILING_GAP_FACTOR)
        times = np.sort(rng.uniform(at, at + 60, int(rng.poisson(rate))))
        failing = times[(times >= self.start) & (times < self.end)]
        if failing.size and truth.onset_seconds is None:
            truth.onset_seconds = float(failing[0])
        truth.bad_responses.extend(failing.tolist())
        due = failing + spec.timeout_seconds
        truth.bad_timeouts.extend(due.tolist())
        written_now = int((due < at + 60).sum())
        responses[bad] = times.size
        # Responses outside the failure (before its start, after its end) get their frame at once.
        frames[bad] = carried[0] + times.size - failing.size
        timeouts[bad] = carried[1] + written_now
        self.carry_frames[bad] = 0
        self.carry_timeouts[bad] = due.size - written_now

    def _callers_leave(self, bad: int, minute: int) -> None:
        """At the failure's start every call on the silent task ends within its caller's patience."""
        active = int(self.active[bad])
        self.ends[:, bad] = 0
        patience = self.rng.uniform(*SILENT_LESSON_PATIENCE_SECONDS, active) / 60
        ends = minute + np.maximum(1, np.ceil(patience)).astype(np.int64)
        np.add.at(self.ends[:, bad], ends % RING_MINUTES, 1)

    def _vad(self, placed: np.ndarray, at: float) -> tuple[np.ndarray, np.ndarray]:
        """Warm-up bursts of new calls (0-6 warnings, up to 1.2 s behind), isolated warnings (one
        per 20 call-minutes, 0.2-0.8 s), and a fleet slowdown's backlog everywhere."""
        rng, tasks = self.rng, self.spec.tasks
        owners = np.repeat(np.arange(tasks), placed)
        bursts = rng.choice(WARM_UP_WEIGHTS.size, size=owners.size, p=WARM_UP_WEIGHTS)
        warnings = np.bincount(owners, weights=bursts, minlength=tasks).astype(np.int64)
        delay = np.zeros(tasks)
        np.maximum.at(delay, owners, np.where(bursts > 0, np.minimum(1.2, 0.3 + 0.135 * (bursts - 1)), 0.0))
        isolated = rng.poisson(self.active / 20)
        warnings += isolated
        delay = np.maximum(delay, np.where(isolated > 0, rng.uniform(0.2, 0.8, tasks), 0.0))
        if self._failing(FailureKind.FLEET_SLOWDOWN, at):
            warnings += rng.poisson(self.active * 2.5)
            backlog = 0.5 * min((at - self.start) / 60 + 1, self.spec.call_minutes)
            delay = np.maximum(delay, np.where(self.active > 0, backlog * rng.uniform(0.6, 1.4, tasks), 0.0))
        return warnings, delay

    def _starved(self, bad: int, at: float, placed: int, warnings: int, delay: float) -> tuple[int, float]:
        """The starved task's backlog: its own calls from 15 minutes before (cpu-starved), or the
        zombie's from 90 minutes before; each call placed during the failure falls 5.9-83.6 s behind."""
        kind, rng = self.spec.failure, self.rng
        if kind not in (FailureKind.CPU_STARVED, FailureKind.CPU_STARVED_ZOMBIE) or at >= self.end:
            return warnings, delay
        if kind is FailureKind.CPU_STARVED and at >= self.start - STARVED_LEAD_SECONDS:
            warnings += int(rng.poisson(max(int(self.active[bad]), 1) * 2.0))
            minutes_in = (at - self.start + STARVED_LEAD_SECONDS) / 60 + 1
            delay = max(delay, 0.5 * min(minutes_in, self.spec.call_minutes) * float(rng.uniform(0.6, 1.4)))
        if kind is FailureKind.CPU_STARVED_ZOMBIE and at >= self.start - ZOMBIE_LEAD_SECONDS:
            minutes_in = (at - self.start + ZOMBIE_LEAD_SECONDS) / 60
            count = int(
                rng.poisson(0.4 + 1.6 * min(minutes_in / 90, 1.0) + (0.8 if at >= self.start else 0.0))
            )
            for _ in range(count):
                self.zombie_delay = (
                    0.0 if rng.random() < 0.02 else self.zombie_delay + float(rng.uniform(0.18, 0.57))
                )
            warnings += count
            delay = max(delay, self.zombie_delay if count else 0.0)
        if at >= self.start - 60 and placed:
            warnings += int(placed) * int(rng.integers(6, 10))
            delay = max(delay, float(rng.uniform(5.9, 83.6)))
        return warnings, delay
