"""A realistic agent-traffic simulator (development only): LiveKit Agents workers on ECS serving
lessons, written as the agents' own JSON log lines, minute by minute, from a seeded RNG.

What it models, and the numbers it uses (seed 000/001 where they give one, stated assumptions where
they do not):

* A fleet of ECS tasks (one worker each, log stream ``agent/<container>/<task id>``) with a number
  of job slots; LiveKit places each new lesson on a random worker with a free slot (the seed's load
  function counts jobs only, so any worker with a free slot looks available).
* Lessons arrive as a Poisson process, constant (``steady``) or following a diurnal curve with
  quiet nights and busy late afternoons (peak at 17:00, 3 % of the peak at 05:00). A quarter are
  short (1-5 min), the rest long (median 20 min, 8-55 min).
* In a lesson the agent responds 6-14 s after the child joins, then every 12-40 s. Each response
  logs ``agent_response_started``; its first audio frame ``tts_node_first_audio_frame`` follows
  after a heavy-tailed lag (lognormal, median 3 s, truncated to 0.3-9 s; a slow-but-healthy TTS day
  has median 6 s). 0.5 % of responses are interrupted by the child before any audio (no frame, no
  timeout) and 0.1 % hang once at the provider (no frame within the timeout: the emitter writes
  ``tts_first_audio_timeout``; half of those frames arrive late). A lesson that ends before its
  last frame or timeout loses them, as a real session does.
* Silero VAD warnings (``inference is slower than realtime``, ``delay`` = cumulative backlog):
  a warm-up burst of 0-6 warnings in the first seconds of every lesson (up to 1.2 s behind; 3 more
  and up to 1.9 s for the first lessons of a freshly started task), and a rare isolated warning
  (one per 20 lesson-minutes, 0.2-0.8 s) afterwards: the seed's "1-2 warnings of 0.2-0.8 s are
  normal".
* Rolling deploys: tasks are replaced one by one (a new task every 90 s, the old one takes no new
  lessons and exits when its last lesson ends).
* Failures, from ``Failure.start_minute`` for ``duration_minutes``:
  ``tts-dead-worker`` (one worker's TTS never starts), ``cpu-starved-zombie`` (seed 000: a test
  lesson left open holds a slot for two hours, its VAD backlog grows for 90 minutes, then every
  lesson on that worker responds but never reaches a first frame and falls 6-84 s behind, until the
  abandoned page closes), ``cpu-starved`` (the same starvation without a zombie: the backlog sits in
  the worker's own lessons from 30 minutes before they fail), ``provider-outage`` (no first frame on
  any worker), ``fleet-slowdown`` (every worker CPU-starved: VAD backlog everywhere and first frames
  2-4 times slower). A child whose lesson stays silent leaves after 45-100 s, as in the seed.

Events are generated lesson by lesson into per-minute buckets and released once a minute can no
longer change, so memory holds only the lessons in progress: a week at 2,000 responses a minute is
a stream, never a list. ``TrafficSimulation.minutes()`` yields each minute's events in time order as
compact tuples; ``export()`` writes them as ``aws logs filter-log-events`` does (one JSON event per
line), formatting each line with livekit-agents' own ``JsonFormatter``.

    python -m devkit.traffic --family tts-dead-worker --volume 35 --hours 4 --seed 3 --out events.jsonl
    lkfr backtest --log events.jsonl --env prod --config environments.json
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import logging
import math
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from statistics import NormalDist
from typing import Any, TextIO

from fleet_remediation.contract.signals import SignalCatalog
from livekit_fleet_agent.detection_signals import LOGGER_NAME as EMITTER_LOGGER

EPOCH = datetime(2026, 9, 7, tzinfo=UTC)  # simulated time 0: a Monday, 00:00 UTC
EPOCH_SECONDS = EPOCH.timestamp()

# Event kinds. An event is (seconds since EPOCH, task index, kind, lesson number, value); the value
# is the VAD delay, a first frame's lag, a timeout's deadline, 1 for a lesson that ended silent
# (process exiting) and ZOMBIE_MARK for the test account's job request.
JOB_REQUEST, PROCESS_EXIT, SLOW_VAD, RESPONSE, FIRST_FRAME, TIMEOUT = range(6)
ZOMBIE_MARK = 2.0
Event = tuple[float, int, int, int, float]

FIRST_RESPONSE_SECONDS = (6.0, 14.0)
RESPONSE_GAP_SECONDS = (12.0, 40.0)
FAILING_RESPONSE_GAP_SECONDS = (18.0, 26.0)  # seed: the child repeats itself to a silent agent
SILENT_LESSON_PATIENCE_SECONDS = (45.0, 100.0)
SHORT_LESSON_SHARE = 0.25
RESPONSES_PER_LESSON_MINUTE = 60 / (sum(RESPONSE_GAP_SECONDS) / 2)
MEAN_LESSON_MINUTES = 16.96  # of the lesson-length mixture below (mean of 10^6 draws)
SLOT_USE_AT_PEAK = 0.6
DEPLOY_STEP_SECONDS = 90.0
# Without a zombie, the starved worker's own lessons fall behind this long before their TTS fails.
STARVED_LEAD_SECONDS = 900.0
# Pending events live in a ring of per-minute lists; nothing is scheduled further ahead than this
# (a lesson lasts at most 55 minutes plus a late frame; the zombie is scheduled at its start).
RING_MINUTES = 256
DIURNAL_FLOOR = 0.03
PEAK_HOUR = 17
FLEET_FOR_VOLUME: dict[float, int] = {5: 3, 35: 8, 250: 20, 2000: 60}


@dataclass(frozen=True)
class LagComponent:
    """One part of the first-audio lag: lognormal, truncated to [low, high] seconds."""

    weight: float
    median_seconds: float
    sigma: float
    low: float = 0.3
    high: float = 9.0

    def quantiles(self, count: int) -> list[float]:
        """``count`` equally likely lags: the midpoints of the truncated distribution's quantiles."""
        normal = NormalDist()
        mu = math.log(self.median_seconds)
        low = normal.cdf((math.log(self.low) - mu) / self.sigma)
        high = normal.cdf((math.log(self.high) - mu) / self.sigma)
        return [
            math.exp(mu + self.sigma * normal.inv_cdf(low + (high - low) * (i + 0.5) / count))
            for i in range(count)
        ]


@dataclass(frozen=True)
class TtsLatency:
    """First-audio lag after a response starts: a mixture of truncated lognormals."""

    components: tuple[LagComponent, ...]

    def quantiles(self, count: int = 4096) -> list[float]:
        """A table of equally likely lags (each component in proportion to its weight, to within
        one entry in 4096): a draw is one uniform index into it."""
        total = sum(c.weight for c in self.components)
        table: list[float] = []
        for component in self.components:
            table += component.quantiles(round(count * component.weight / total))
        return table


# Seed 000: healthy first audio 3.0-3.6 s; short cached phrases come sooner, and a few long
# responses (or a slow provider moment) take up to 9 s.
NORMAL_TTS = TtsLatency(
    (LagComponent(0.92, 3.0, 0.3), LagComponent(0.05, 0.8, 0.4), LagComponent(0.03, 5.5, 0.35))
)
# A slow-but-healthy provider day: 4-9 s.
SLOW_TTS = TtsLatency(
    (LagComponent(0.9, 6.0, 0.2), LagComponent(0.05, 2.5, 0.4), LagComponent(0.05, 8.0, 0.1))
)


class FailureKind(StrEnum):
    TTS_DEAD_WORKER = "tts-dead-worker"
    CPU_STARVED_ZOMBIE = "cpu-starved-zombie"
    CPU_STARVED = "cpu-starved"
    PROVIDER_OUTAGE = "provider-outage"
    FLEET_SLOWDOWN = "fleet-slowdown"

    @property
    def one_worker(self) -> bool:
        return self in (FailureKind.TTS_DEAD_WORKER, FailureKind.CPU_STARVED_ZOMBIE, FailureKind.CPU_STARVED)


@dataclass(frozen=True)
class Failure:
    kind: FailureKind
    start_minute: float
    duration_minutes: float = 40.0


@dataclass(frozen=True)
class Scenario:
    name: str
    workers: int
    responses_per_minute: float  # throughout (steady) or at the busiest hour (diurnal)
    minutes: int
    seed: int = 1
    diurnal: bool = False
    tts: TtsLatency = NORMAL_TTS
    rolling_deploys_at_minutes: tuple[float, ...] = ()
    failure: Failure | None = None
    emitter: bool = True  # the agents write tts_first_audio_timeout
    first_audio_timeout_seconds: float = 10.0
    interrupt_probability: float = 0.005
    isolated_timeout_probability: float = 0.001
    slots_per_worker: int | None = None
    container: str = "livekit-agent"

    def slots(self) -> int:
        """Enough slots that the busiest hour uses about 60 % of them (at least the seed's 2)."""
        if self.slots_per_worker is not None:
            return self.slots_per_worker
        lessons = self.responses_per_minute / RESPONSES_PER_LESSON_MINUTE
        return max(2, math.ceil(lessons / (self.workers * SLOT_USE_AT_PEAK)))


def diurnal_factor(seconds: float) -> float:
    """Share of the peak arrival rate at this time of day (1 at 17:00, 0.03 at 05:00)."""
    hour = (seconds / 3600) % 24
    phase = (1 - math.cos(2 * math.pi * (hour - PEAK_HOUR + 12) / 24)) / 2
    return DIURNAL_FLOOR + (1 - DIURNAL_FLOOR) * float(phase**1.5)


@dataclass
class Task:
    index: int
    task_id: str
    stream: str
    slots: int
    started: float
    main_pid: int
    active: int = 0
    stopping: bool = False
    exited: float | None = None
    last_end: float = 0.0
    lessons_started: int = 0


@dataclass
class GroundTruth:
    """What actually went wrong, for judging detection and attribution."""

    bad_task: int | None = None
    fleet_wide: bool = False
    first_failed_response: float | None = None
    failed_responses: int = 0
    lessons: int = 0


@dataclass
class TrafficSimulation:
    scenario: Scenario
    rng: random.Random = field(init=False)
    tasks: list[Task] = field(default_factory=list, init=False)
    truth: GroundTruth = field(default_factory=GroundTruth, init=False)

    def __post_init__(self) -> None:
        s = self.scenario
        self.rng = random.Random(s.seed)
        self._ring: list[list[Event]] = [[] for _ in range(RING_MINUTES)]
        self._ends: list[tuple[float, int]] = []  # (lesson end, task index): slots to free
        self._controls: list[tuple[float, int, Callable[[float], None]]] = []
        self._arrival = 0.0
        self._lesson = 0
        self._slots = s.slots()
        self._lags = s.tts.quantiles()
        for _ in range(s.workers):
            self._start_task(0.0)
        for minute in s.rolling_deploys_at_minutes:
            for step in range(s.workers):
                self._control(minute * 60 + step * DEPLOY_STEP_SECONDS, self._replace_oldest)
        failure = s.failure
        if failure is not None:
            self._failure_start = failure.start_minute * 60
            self._failure_end = self._failure_start + failure.duration_minutes * 60
            self.truth.fleet_wide = not failure.kind.one_worker
            if failure.kind.one_worker:
                self.truth.bad_task = self.rng.randrange(s.workers)
            if failure.kind is FailureKind.CPU_STARVED_ZOMBIE:
                self._control(self._failure_start - 2 * 3600, self._zombie)
        self._arrival = self._next_arrival(0.0)

    # --- the stream ------------------------------------------------------------------------------
    def minutes(self, *, ordered: bool = True) -> Iterator[tuple[int, list[Event]]]:
        """Each simulated minute's events, released once nothing can add to them; in time order
        unless ``ordered`` is false (aggregates need no order, and sorting is a third of the cost)."""
        for minute in range(self.scenario.minutes):
            self._advance((minute + 1) * 60.0)
            slot = minute % RING_MINUTES
            events, self._ring[slot] = self._ring[slot], []
            if ordered:
                events.sort()
            yield minute, events

    def running_tasks(self, at: float) -> list[Task]:
        return [t for t in self.tasks if t.started <= at and (t.exited is None or t.exited > at)]

    # --- fleet -------------------------------------------------------------------------------------
    def _start_task(self, at: float) -> Task:
        task_id = f"{self.rng.getrandbits(128):032x}"
        task = Task(
            index=len(self.tasks),
            task_id=task_id,
            stream=f"agent/{self.scenario.container}/{task_id}",
            slots=self._slots,
            started=at,
            main_pid=7,
        )
        self.tasks.append(task)
        return task

    def _replace_oldest(self, at: float) -> None:
        """One step of a rolling deploy: a new task starts, the oldest running one drains and exits
        when its last lesson ends."""
        old = next(t for t in self.tasks if not t.stopping and t.index != self.truth.bad_task)
        self._start_task(at)
        old.stopping = True
        if old.active == 0:
            old.exited = at

    def _control(self, at: float, action: Callable[[float], None]) -> None:
        heapq.heappush(self._controls, (at, len(self._controls), action))

    def _advance(self, until: float) -> None:
        while True:
            next_control = self._controls[0][0] if self._controls else math.inf
            if self._arrival >= until and next_control >= until:
                return
            if next_control <= self._arrival:
                at, _, action = heapq.heappop(self._controls)
                self._free_slots(at)
                action(at)
                continue
            self._free_slots(self._arrival)
            self._place_lesson(self._arrival)
            self._arrival = self._next_arrival(self._arrival)

    def _next_arrival(self, now: float) -> float:
        """Poisson arrivals whose rate is constant within each minute (memoryless across minutes)."""
        s = self.scenario
        while True:
            minute_end = (math.floor(now / 60) + 1) * 60
            rate = s.responses_per_minute / RESPONSES_PER_LESSON_MINUTE / MEAN_LESSON_MINUTES / 60
            if s.diurnal:
                rate *= diurnal_factor(now)
            step = self.rng.expovariate(rate)
            if now + step < minute_end:
                return now + step
            now = minute_end

    def _free_slots(self, now: float) -> None:
        while self._ends and self._ends[0][0] <= now:
            end, index = heapq.heappop(self._ends)
            task = self.tasks[index]
            task.active -= 1
            if task.stopping and task.active == 0:
                task.exited = end

    def _place_lesson(self, at: float) -> None:
        free = [t for t in self.tasks if not t.stopping and t.active < t.slots]
        self.truth.lessons += 1
        if not free:
            return
        task = self.rng.choice(free)
        end = self._lesson_on(task, at)
        task.active += 1
        task.lessons_started += 1
        task.last_end = max(task.last_end, end)
        heapq.heappush(self._ends, (end, task.index))

    # --- events --------------------------------------------------------------------------------
    def _add(self, at: float, task: int, kind: int, lesson: int, value: float = 0.0) -> None:
        self._ring[int(at // 60) % RING_MINUTES].append((at, task, kind, lesson, value))

    def _lesson_length(self) -> float:
        rng = self.rng
        if rng.random() < SHORT_LESSON_SHARE:
            return rng.uniform(60, 300)
        return min(max(rng.lognormvariate(math.log(1200), 0.4), 480), 3300)

    def _failing_tts(self, task: Task, at: float) -> bool:
        failure = self.scenario.failure
        if failure is None or not self._failure_start <= at < self._failure_end:
            return False
        if failure.kind is FailureKind.PROVIDER_OUTAGE:
            return True
        return failure.kind.one_worker and task.index == self.truth.bad_task

    def _slowed(self, at: float) -> bool:
        failure = self.scenario.failure
        return (
            failure is not None
            and failure.kind is FailureKind.FLEET_SLOWDOWN
            and self._failure_start <= at < self._failure_end
        )

    def _lesson_on(self, task: Task, start: float) -> float:
        """Every event of one lesson placed on ``task`` at ``start``; returns when it ends."""
        s = self.scenario
        self._lesson += 1
        lesson, index = self._lesson, task.index
        end = start + self._lesson_length()
        self._add(start, index, JOB_REQUEST, lesson)
        self._warm_up(task, start, lesson)
        failure = s.failure
        touches_failure = (
            failure is not None
            and start < self._failure_end
            and end > self._failure_start - STARVED_LEAD_SECONDS
        )
        if touches_failure:
            end, silent = self._responses_in_failure(task, start, end, lesson)
            self._starvation(task, start, end, lesson)
        else:
            self._healthy_responses(index, start, end, lesson)
            silent = False
        self._isolated_vad(task, start, end, lesson)
        self._add(end, index, PROCESS_EXIT, lesson, 1.0 if silent else 0.0)
        return end

    def _healthy_responses(self, index: int, start: float, end: float, lesson: int) -> None:
        """The hot loop of every healthy lesson (most of a week's events): locals only, the lag
        drawn from a quantile table, uniforms inlined."""
        s, rng, ring = self.scenario, self.rng, self._ring
        draw_unit, lags, size = rng.random, self._lags, len(self._lags)
        interrupted = s.interrupt_probability
        hung = interrupted + s.isolated_timeout_probability
        hung_then_late = interrupted + s.isolated_timeout_probability / 2
        timeout, emitter = s.first_audio_timeout_seconds, s.emitter
        gap_low, gap_span = RESPONSE_GAP_SECONDS[0], RESPONSE_GAP_SECONDS[1] - RESPONSE_GAP_SECONDS[0]
        response = start + rng.uniform(*FIRST_RESPONSE_SECONDS)
        while response < end:
            ring[int(response // 60) % RING_MINUTES].append((response, index, RESPONSE, lesson, 0.0))
            draw = draw_unit()
            if draw >= hung:
                lag = lags[int(draw_unit() * size)]
                frame = response + lag
                if frame < end:
                    ring[int(frame // 60) % RING_MINUTES].append((frame, index, FIRST_FRAME, lesson, lag))
            elif draw >= interrupted:
                if emitter and response + timeout < end:
                    self._add(response + timeout, index, TIMEOUT, lesson, timeout)
                late = timeout + rng.uniform(0, 2 * timeout)
                if draw < hung_then_late and response + late < end:
                    self._add(response + late, index, FIRST_FRAME, lesson, late)
            response += gap_low + gap_span * draw_unit()

    def _latency(self) -> float:
        return self._lags[int(self.rng.random() * len(self._lags))]

    def _responses_in_failure(self, task: Task, start: float, end: float, lesson: int) -> tuple[float, bool]:
        """Responses of a lesson that overlaps the failure: failing ones get no first frame (and a
        timeout from the emitter), and the child leaves a silent lesson; a slowdown delays frames.
        Returns the lesson's (possibly earlier) end and whether it fell silent."""
        s, rng, add, index = self.scenario, self.rng, self._add, task.index
        timeout = s.first_audio_timeout_seconds
        response = start + rng.uniform(*FIRST_RESPONSE_SECONDS)
        silent_since: float | None = None
        while response < end:
            add(response, index, RESPONSE, lesson)
            if self._failing_tts(task, response):
                self._failed_response(response)
                if silent_since is None:
                    silent_since = response
                    end = min(end, response + rng.uniform(*SILENT_LESSON_PATIENCE_SECONDS))
                if s.emitter and response + timeout < end:
                    add(response + timeout, index, TIMEOUT, lesson, timeout)
                response += rng.uniform(*FAILING_RESPONSE_GAP_SECONDS)
                continue
            draw = rng.random()
            if draw < s.interrupt_probability:
                pass
            elif draw < s.interrupt_probability + s.isolated_timeout_probability:
                if s.emitter and response + timeout < end:
                    add(response + timeout, index, TIMEOUT, lesson, timeout)
                late = timeout + rng.uniform(0, 2 * timeout)
                if (
                    draw < s.interrupt_probability + s.isolated_timeout_probability / 2
                    and response + late < end
                ):
                    add(response + late, index, FIRST_FRAME, lesson, late)
            else:
                lag = self._latency()
                if self._slowed(response):
                    lag *= rng.uniform(2.0, 4.0)
                    if lag > timeout:  # the child waited longer than the emitter's deadline
                        self._failed_response(response)
                        if s.emitter and response + timeout < end:
                            add(response + timeout, index, TIMEOUT, lesson, timeout)
                if response + lag < end:
                    add(response + lag, index, FIRST_FRAME, lesson, lag)
            response += rng.uniform(*RESPONSE_GAP_SECONDS)
        return end, silent_since is not None

    def _failed_response(self, at: float) -> None:
        truth = self.truth
        truth.failed_responses += 1
        if truth.first_failed_response is None or at < truth.first_failed_response:
            truth.first_failed_response = at

    def _warm_up(self, task: Task, start: float, lesson: int) -> None:
        rng = self.rng
        fresh = task.lessons_started < 2
        count = rng.choices(range(7), weights=(30, 25, 20, 12, 7, 4, 2))[0] + (3 if fresh else 0)
        cap = 1.9 if fresh else 1.2
        delay = rng.uniform(0.2, 0.4)
        for _ in range(count):
            self._add(start + rng.uniform(0.5, 12.0), task.index, SLOW_VAD, lesson, round(delay, 3))
            delay = min(cap, delay + rng.uniform(0.02, 0.25))

    def _isolated_vad(self, task: Task, start: float, end: float, lesson: int) -> None:
        rng = self.rng
        at = start + rng.expovariate(1 / 1200)
        while at < end:
            self._add(at, task.index, SLOW_VAD, lesson, round(rng.uniform(0.2, 0.8), 3))
            at += rng.expovariate(1 / 1200)

    def _starvation(self, task: Task, start: float, end: float, lesson: int) -> None:
        """The VAD backlog of a CPU-starved lesson (the bad worker's, or every worker's in a slowdown)."""
        failure = self.scenario.failure
        assert failure is not None
        rng, kind = self.rng, failure.kind
        if kind is FailureKind.FLEET_SLOWDOWN:
            self._backlog(task, max(start, self._failure_start), min(end, self._failure_end), lesson, 2.5)
            return
        if not kind.one_worker or task.index != self.truth.bad_task:
            return
        if kind is FailureKind.CPU_STARVED:
            self._backlog(
                task,
                max(start, self._failure_start - STARVED_LEAD_SECONDS),
                min(end, self._failure_end),
                lesson,
                2.0,
            )
        if kind is FailureKind.TTS_DEAD_WORKER or not self._failure_start <= start < self._failure_end:
            return
        # Seed: each lesson placed on the starved worker falls 5.9-83.6 s behind in 6-9 warnings.
        worst = rng.uniform(5.9, 83.6)
        warnings = rng.randint(6, 9)
        length = end - start
        for step in range(warnings):
            at = start + 4 + step * max(length - 6, 1) / warnings
            self._add(at, task.index, SLOW_VAD, lesson, round(worst * (step + 1) / warnings, 3))

    def _backlog(self, task: Task, start: float, end: float, lesson: int, per_minute: float) -> None:
        """Resident slow inference: warnings at ``per_minute`` with a growing cumulative delay
        (0.2-0.6 s per window over the 32 ms budget; the VAD resets its state now and then)."""
        rng, at, delay = self.rng, start, 0.0
        while True:
            at += rng.expovariate(per_minute / 60)
            if at >= end:
                return
            delay = 0.0 if rng.random() < 0.02 else delay + rng.uniform(0.21, 0.6) - 0.032
            self._add(at, task.index, SLOW_VAD, lesson, round(delay, 3))

    def _zombie(self, at: float) -> None:
        """Seed 000: a test lesson left open on the bad worker, silent, holding a slot, its VAD
        falling behind at a growing rate from 90 minutes before lessons fail until its page closes."""
        bad = self.tasks[self.truth.bad_task or 0]
        self._lesson += 1
        lesson, end = self._lesson, self._failure_end
        self._add(at, bad.index, JOB_REQUEST, lesson, ZOMBIE_MARK)
        rng, when, delay = self.rng, self._failure_start - 90 * 60, 0.0
        while when < end - 17:
            minutes_in = (when - (self._failure_start - 90 * 60)) / 60
            per_minute = 0.4 + 1.6 * min(minutes_in / 90, 1.0) + (0.8 if when >= self._failure_start else 0.0)
            delay = 0.0 if rng.random() < 0.02 else delay + rng.uniform(0.21, 0.6) - 0.032
            self._add(when, bad.index, SLOW_VAD, lesson, round(delay, 3))
            when += rng.expovariate(per_minute / 60)
        self._add(end, bad.index, PROCESS_EXIT, lesson, 1.0)
        bad.active += 1
        heapq.heappush(self._ends, (end, bad.index))


# --- scenarios -------------------------------------------------------------------------------------
HEALTHY_FAMILIES = ("steady", "daily", "slow-tts")
FAILURE_FAMILIES = tuple(kind.value for kind in FailureKind)


def fleet_size(volume: float) -> int:
    """3 workers at 5 responses a minute, 8 at 35, 20 at 250, 60 at 2,000 (interpolated)."""
    if volume in FLEET_FOR_VOLUME:
        return FLEET_FOR_VOLUME[volume]
    points = sorted(FLEET_FOR_VOLUME.items())
    for (v0, w0), (v1, w1) in itertools.pairwise(points):
        if v0 <= volume <= v1:
            share = (math.log(volume) - math.log(v0)) / (math.log(v1) - math.log(v0))
            return round(w0 + share * (w1 - w0))
    return points[0][1] if volume < points[0][0] else points[-1][1]


def scenario(family: str, volume: float, minutes: int, seed: int, *, emitter: bool = True) -> Scenario:
    """A named scenario family at a volume (responses a minute, at the busiest hour for the daily
    families). Failure families start failing 2.5-3.5 hours in (after the zombie's two hours) and
    last 40 minutes."""
    workers = fleet_size(volume)
    base = Scenario(
        name=family, workers=workers, responses_per_minute=volume, minutes=minutes, seed=seed, emitter=emitter
    )
    days = range(math.ceil(minutes / 1440))
    if family == "steady":
        return base
    if family in ("daily", "slow-tts"):
        # One rolling deploy a day, at a seeded hour between 09:00 and 18:00.
        deploy_rng = random.Random(seed * 7919)
        deploys = tuple(day * 1440 + deploy_rng.uniform(540, 1080) for day in days)
        tts = SLOW_TTS if family == "slow-tts" else NORMAL_TTS
        return Scenario(
            **{**base.__dict__, "diurnal": True, "tts": tts, "rolling_deploys_at_minutes": deploys}
        )
    kind = FailureKind(family)
    start = 150 + random.Random(seed * 104729).uniform(0, 60)
    return Scenario(**{**base.__dict__, "failure": Failure(kind, start_minute=start)})


# --- export as aws logs filter-log-events ---------------------------------------------------------
ROOM_ALPHABET = "0123456789abcdef"
ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
SITE_PACKAGES = "/app/.venv/lib/python3.11/site-packages"
SOURCE_OF_LOGGER = {
    "livekit.agents": (f"{SITE_PACKAGES}/livekit/agents/worker.py", "_handle", 120),
    "livekit.plugins.silero": (f"{SITE_PACKAGES}/livekit/plugins/silero/vad.py", "_main_task", 133),
    EMITTER_LOGGER: ("/app/livekit_fleet_agent/detection_signals.py", "_write", 256),
}


def _scrambled(number: int, alphabet: str, length: int, salt: int) -> str:
    """A stable id that looks random: the number through a multiplicative hash, in ``alphabet``."""
    mixed = ((number + 1) * 0x9E3779B97F4A7C15 ^ salt * 0xBF58476D1CE4E5B9) * 0x94D049BB133111EB
    value = (mixed >> 17) % (len(alphabet) ** length)
    digits = []
    for _ in range(length):
        value, digit = divmod(value, len(alphabet))
        digits.append(alphabet[digit])
    return "".join(digits)


def job_id(lesson: int) -> str:
    return "AJ_" + _scrambled(lesson, ID_ALPHABET, 12, 1)


def room_fields(lesson: int, *, test_account: bool = False) -> dict[str, str]:
    """``job_id``, ``room``, ``room_id`` of a lesson, as ``received job request`` carries them."""
    prefix = "test" if test_account else "lesson"
    return {
        "job_id": job_id(lesson),
        "room": f"{prefix}-{_scrambled(lesson, ROOM_ALPHABET, 8, 2)}",
        "room_id": "RM_" + _scrambled(lesson, ID_ALPHABET, 12, 3),
    }


def record_of(
    event: Event, sim: TrafficSimulation, catalog: SignalCatalog
) -> tuple[str, int, str, dict[str, Any]]:
    """(logger, level, message, extra fields) of one event, as the agents log it."""
    at, task_index, kind, lesson, value = event
    job, pid = job_id(lesson), 100 + lesson % 60000
    if kind == JOB_REQUEST:
        extra: dict[str, Any] = {
            **room_fields(lesson, test_account=value == ZOMBIE_MARK),
            "dispatch_id": "",
            "agent_name": "lesson-agent",
            "resuming": False,
            "enable_recording": False,
            "pid": sim.tasks[task_index].main_pid,
        }
        return "livekit.agents", logging.INFO, "received job request", extra
    if kind == PROCESS_EXIT:
        reason = "closing agent session due to participant disconnect" if value else "job completed"
        return (
            "livekit.agents",
            logging.INFO,
            "process exiting",
            {"reason": reason, "pid": pid, "job_id": job},
        )
    if kind == SLOW_VAD:
        extra = {"delay": value, "pid": pid, "job_id": job}
        return "livekit.plugins.silero", logging.WARNING, catalog.slow_vad.text, extra
    # The agent-side emitter's lines (livekit_fleet_agent): the job's fields and the speech they follow.
    response_at = at - value if kind in (FIRST_FRAME, TIMEOUT) else at
    extra = {
        **room_fields(lesson),
        "worker_id": "AW_" + _scrambled(task_index, ID_ALPHABET, 12, 4),
        "speech_id": "speech_"
        + _scrambled(lesson * 100_003 + round(response_at * 1000), ROOM_ALPHABET, 12, 5),
        "pid": pid,
    }
    if kind == RESPONSE:
        return (
            EMITTER_LOGGER,
            logging.INFO,
            catalog.response_started.text,
            {**extra, "source": "generate_reply"},
        )
    if kind == FIRST_FRAME:
        frame = {**extra, "first_audio_seconds": round(value, 3)}
        return EMITTER_LOGGER, logging.INFO, catalog.first_audio_frame.text, frame
    timeout = {**extra, "reason": "deadline", "timeout_seconds": value, "waited_seconds": value}
    return EMITTER_LOGGER, logging.WARNING, catalog.first_audio_timeout.text, timeout


def export(sim: TrafficSimulation, handle: TextIO, catalog: SignalCatalog | None = None) -> int:
    """Write the whole simulation as ``filter-log-events`` JSON lines; returns the event count."""
    from livekit.agents.cli.log import JsonFormatter  # heavy import: only when writing files

    catalog = catalog or SignalCatalog.default()
    formatter, written = JsonFormatter(), 0
    for _, events in sim.minutes():
        for event in events:
            logger, level, message, extra = record_of(event, sim, catalog)
            path, function, line_number = SOURCE_OF_LOGGER[logger]
            record = logging.LogRecord(logger, level, path, line_number, message, None, None, function)
            record.__dict__.update(extra)
            record.created = EPOCH_SECONDS + event[0]
            millis = int(record.created * 1000)
            line = {
                "logStreamName": sim.tasks[event[1]].stream,
                "timestamp": millis,
                "message": formatter.format(record),
                "ingestionTime": millis + 200 + written % 2300,
                "eventId": f"{millis:020d}{written:036d}",
            }
            handle.write(json.dumps(line, separators=(",", ":")) + "\n")
            written += 1
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--family", choices=HEALTHY_FAMILIES + FAILURE_FAMILIES, default="steady")
    parser.add_argument("--volume", type=float, default=35, help="responses a minute (at the peak hour)")
    parser.add_argument("--hours", type=float, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-emitter", action="store_true", help="agents without tts_first_audio_timeout")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    chosen = scenario(
        args.family, args.volume, round(args.hours * 60), args.seed, emitter=not args.no_emitter
    )
    sim = TrafficSimulation(chosen)
    with args.out.open("w", encoding="utf-8") as handle:
        count = export(sim, handle)
    truth = sim.truth
    bad = f", bad task {sim.tasks[truth.bad_task].task_id}" if truth.bad_task is not None else ""
    print(
        f"wrote {count} events ({chosen.workers} workers x {chosen.slots()} slots, {truth.lessons} lessons"
        f"{bad}) to {args.out}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
