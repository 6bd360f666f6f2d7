"""Detection at fleet scale: one silent task in 60 to 1,000 tasks, up to 20,000 responses
a minute, per-task detection options side by side, from ``devkit.fleet_counts``.

    PYTHONPATH=agent:functions:layers/shared/python:src:. .venv/bin/python -m bench.detection \\
        --tasks 60 200 500 1000 --volumes 20000 --days 1 --seeds 2 --json

Per size and family it prints one JSON object. Every option reads the same simulated minutes:

* ``a_tick``: the drainer's tick, every minute, reads one row per task (``task_reach_query``: Logs
  Insights by ``@logStream`` over the last ``window_minutes``) and runs ``assess_task_reach``;
* ``b_contributors``: a Contributor Insights rule keyed on the emitter's task field counts each
  task's timeouts a minute; its alarm (top contributor >= a static count) starts the handler, which
  runs the same per-task test on the rule's report (counts are absolute, the test stays in code);
* ``c_self``: each worker tests its own last two minutes (the agent-side package sees every
  response) against the healthy rate at the same per-task significance, and reports full load at
  once; it cannot see the fleet, so it has no fleet-wide check;
* the deployed fleet-wide alarms (TTS new, VAD) and, while the VAD alarm is in ALARM, the drainer's
  slow-VAD attribution (``assess_fleet``) as it runs today.

Each decision happens when the delay profile (``--profile``, ``bench._detection_timing``) puts it:
the tick after its schedule's jitter, a cold start and its Logs Insights query, missing the lines not
yet searchable; an alarm-driven decision after the alarm evaluates the visible minute and EventBridge
delivers. ``--profile none`` decides at the end of each minute.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np

from bench._detection_timing import CONTRIBUTOR_HANDLER, BenchTiming, Decision
from bench._responder_look import (
    RESPONDER_WINDOW_MINUTES,
    FleetFacts,
    MinuteInsights,
    ResponderVerdicts,
    responder_look,
)
from devkit.fleet_counts import Fleet, FleetCounts, Minute, Truth, fleet
from devkit.fleet_groups import Groups, start_time
from devkit.traffic import EPOCH
from fleet_remediation.contract.alarm_math import MinuteCounts, evaluator_for
from fleet_remediation.contract.detection import DetectionConfig
from fleet_remediation.contract.policies import DrainerPolicy
from fleet_remediation.contract.task_reach import TaskReachSettings
from livekit_fleet_remediation.offline.delays import INSTANT, DelayProfile
from tts_reach_alarm.analysis import MAX_JOBS
from worker_drainer.adapters.worker_logs import MAX_JOB_ROWS, MAX_TTS_JOBS, SlowVadStats
from worker_drainer.decide.attribution import assess_fleet
from worker_drainer.decide.task_reach import TaskFacts, TaskReach, assess_task_reach, binomial_tail
from worker_drainer.read.job_evidence import JOB_LINE_INDEXING_MARGIN, JOB_LINE_READ_SLACK
from worker_drainer.read.task_reach_query import MAX_TASK_ROWS

FAILURE_RUN_MINUTES = 290
TASKS = (60, 200, 500, 1000)
VOLUMES = (2000.0, 20000.0)
SELF_WINDOW_MINUTES = 2
CI_ALARM_MIN_TIMEOUTS = 4  # the Contributor Insights alarm: a task with this many timeouts in a minute
SIGHTINGS_RECENT_MINUTES = (JOB_LINE_INDEXING_MARGIN + JOB_LINE_READ_SLACK) // timedelta(minutes=1)
OPTIONS = ("a_tick", "b_contributors", "c_self", "vad_today")
# us-east-1 list prices (CloudWatch pricing page): Logs Insights per GB scanned; Contributor Insights
# for Logs per rule-month and per million matched log events; a standard alarm per month.
INSIGHTS_PER_GB, CI_PER_RULE, CI_PER_MILLION_EVENTS, ALARM_PER_MONTH = 0.005, 0.50, 0.02, 0.10
MINUTES_PER_MONTH = 1440 * 30.4

TERMS = {
    "onset": "the first response that never gets a first audio frame (the silent task's first failing "
    "response)",
    "latency_minutes": "from onset to the decision that cordons the right task, with the profile's delays: "
    "the tick's schedule jitter, cold start, late lines and Logs Insights queue and run time; an alarm's "
    "metric visibility, once-a-minute evaluation and EventBridge delivery (profile none: the end of the "
    "minute the tick or alarm evaluates); the self-judging worker: the moment of its deciding timeout",
    "delay_minutes": "the part of the latency after the end of the minute whose data decided: what the "
    "profile's delays add",
    "drained": "the cordon: no new job is placed on the task from then on; not the task's stop",
    "false_pages_per_day": "transitions to ALARM of a paging alarm on healthy traffic, per simulated day",
    "calls_hurt_before_cordon": "calls on the silent task that met a failing response before its cordon "
    "(all of them when it was never cordoned: a task that gets no calls hurts nobody and shows nothing)",
    "cordons_on_healthy": "cordons of a task that was not failing, on healthy traffic or beside the silent "
    "task",
    "rows": "the most rows one query returns in the run, against that query's row limit; pieces: the time "
    "splits needed to keep each piece under it (the query is split before it reaches the limit)",
    "families": "healthy: steady, daily (quiet nights, busy afternoons), slow-tts (a slow but healthy "
    "provider day); one task: tts-dead-worker (stops producing first frames, no CPU symptom), cpu-starved, "
    "cpu-starved-zombie; fleet-wide: provider-outage, fleet-slowdown; groups (devkit.fleet_groups, none may "
    "be cordoned): az-outage, endpoint-outage-10/-30, bad-revision-10/-30/-50, spreading (a 30 % endpoint "
    "group failing task by task over 10 min), warm-up (10 % new tasks with late first frames), "
    "mixed-revisions (healthy)",
    "not_modelled": "the ECS calls of the cordon itself (well under a second); option c does not wait for "
    "CloudWatch (its report to LiveKit is taken as instant)",
}


ROW_LIMITS = {
    "a_per_task": MAX_TASK_ROWS,
    "responder_jobs": MAX_JOBS,
    "drainer_job_sightings": MAX_JOB_ROWS,
    "drainer_tts_outcomes": MAX_TTS_JOBS,
}


@dataclass
class OptionState:
    cordons: dict[int, float] = field(default_factory=dict)  # task -> decision time (s)
    # task -> what the first decision waited for after its data's minute (seconds, by cause).
    waits: dict[int, dict[str, float]] = field(default_factory=dict)

    def cordon(self, task: int, at: float, decision: Decision | None = None) -> None:
        """The earliest decision wins: under delays a later tick may decide before an earlier one."""
        if task in self.cordons and self.cordons[task] <= at:
            return
        self.cordons[task] = at
        if decision is not None:
            self.waits[task] = {"minute_end": decision.data_end, **decision.waits}


@dataclass
class Run:
    spec: Fleet
    options: dict[str, OptionState] = field(default_factory=lambda: {o: OptionState() for o in OPTIONS})
    pages: dict[str, int] = field(default_factory=lambda: {"tts_new": 0, "vad": 0, "b_contributors": 0})
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROW_LIMITS, 0))
    truth: Truth = field(default_factory=Truth)
    responder: ResponderVerdicts = field(default_factory=ResponderVerdicts)
    lines: int = 0
    responses: int = 0
    timeouts: int = 0
    seconds: float = 0.0


class Windows:
    """Running per-task sums over the last few minutes (bounded by the fleet's size)."""

    def __init__(self, minutes: int, tasks: int, arrays: int = 3) -> None:
        self.kept: deque[tuple[np.ndarray, ...]] = deque()
        self.minutes = minutes
        self.sums = tuple(np.zeros(tasks, dtype=np.int64) for _ in range(arrays))

    def push(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        self.kept.append(arrays)
        for total, array in zip(self.sums, arrays, strict=True):
            total += array
        if len(self.kept) > self.minutes:
            for total, array in zip(self.sums, self.kept.popleft(), strict=True):
                total -= array
        return self.sums


def rows_of(
    tasks: int,
    responses: np.ndarray,
    frames: np.ndarray,
    timeouts: np.ndarray,
    late: np.ndarray | None = None,
    endpoints: Sequence[str] = (),
) -> list[TaskReach]:
    """What the per-task query returns: a row for each task with TTS lines in the window."""
    seen = np.flatnonzero(responses + frames + timeouts)
    late = np.zeros_like(responses) if late is None else late
    return [
        TaskReach(
            STREAMS[i],
            int(responses[i]),
            int(frames[i]),
            int(timeouts[i]),
            int(late[i]),
            endpoints[i] if endpoints else "",
        )
        for i in seen.tolist()
    ]


STREAMS = [f"agent/livekit-agent/t{i}" for i in range(10_000)]


def task_of(verdict_stream: str) -> int:
    return int(verdict_stream.rsplit("/t", 1)[1])


def task_facts(groups: Groups) -> list[TaskFacts]:
    """What DescribeTasks tells of each simulated task."""
    return [
        TaskFacts(
            STREAMS[i], zone, f"arn:aws:ecs:eu-west-1:1:task-definition/{revision}", start_time(started)
        )
        for i, (zone, revision, started) in enumerate(
            zip(groups.zone, groups.revision, groups.started_seconds.tolist(), strict=True)
        )
    ]


class Bench:
    def __init__(
        self,
        spec: Fleet,
        config: DetectionConfig,
        settings: TaskReachSettings,
        timing: BenchTiming | None = None,
    ) -> None:
        self.spec, self.settings, self.run = spec, settings, Run(spec)
        self.timing = timing or BenchTiming(INSTANT, spec.seed, bytes_per_line=0.0)
        self.sim = FleetCounts(spec)
        self.alarms = {
            "tts_new": evaluator_for(config.tts_reach_alarm.alarm()),
            "vad": evaluator_for(config.vad_alarm.alarm()),
        }
        self.state = {"tts_new": False, "vad": False, "b_contributors": False}
        tasks = spec.tasks
        self.tick = Windows(settings.window_minutes, tasks, arrays=4)
        self.self_window = Windows(SELF_WINDOW_MINUTES, tasks)
        self.policy = DrainerPolicy()
        self.starts = Windows(self.policy.window_minutes, tasks, arrays=1)
        self.vad: deque[tuple[np.ndarray, np.ndarray]] = deque(maxlen=self.policy.window_minutes)
        self.fleet_jobs: deque[tuple[int, int]] = deque(maxlen=RESPONDER_WINDOW_MINUTES)
        self.self_level = settings.level(tasks)
        self.facts = task_facts(self.sim.groups)
        # Job requests per task since the run's start (tasks live for days), and the fleet's per minute.
        self.job_requests = np.zeros(tasks, dtype=np.int64)
        self.recent_requests: deque[int] = deque(maxlen=SIGHTINGS_RECENT_MINUTES)
        self.responder_insights = MinuteInsights(spec.calls_per_task, list(self.sim.groups.endpoint))
        self.responder_facts = FleetFacts(self.sim.groups)
        self.tick_failing: tuple[str, ...] = ()

    def execute(self) -> Run:
        started = time.perf_counter()
        for minute in self.sim.minutes():
            self._minute(minute)
        self._self_judge_silent_task()
        self.run.truth = self.sim.truth
        self.run.seconds = time.perf_counter() - started
        return self.run

    def _minute(self, m: Minute) -> None:
        run, end = self.run, (m.index + 1) * 60.0
        responses, timeouts = int(m.responses.sum()), int(m.timeouts.sum())
        run.responses += responses
        run.timeouts += timeouts
        lines = responses + int(m.frames.sum()) + timeouts + int(m.vad_warnings.sum()) + 2 * m.calls_started
        run.lines += lines
        self.timing.minute_lines(lines)
        counts = MinuteCounts(
            vad_warnings=int(m.vad_warnings.sum()),
            vad_max_delay=float(m.vad_max_delay.max()) if m.vad_warnings.any() else None,
            responses=responses,
            first_frames=int(m.frames.sum()),
            first_audio_timeouts=timeouts,
        )
        late = m.late_frames if m.late_frames is not None else np.zeros_like(m.responses)
        self.responder_insights.push(m.index, m.responses, m.frames, m.timeouts, late, m.started)
        for name, evaluator in self.alarms.items():
            paged = self._transition(name, evaluator.push(counts)[1], end)
            if paged and name == "tts_new":
                self._responder_look(end)
        self.vad.append((m.vad_warnings, m.vad_max_delay))
        self._tick(m, end)
        self._contributors(m, end)
        self._self_judge(m, end)
        self._rows(m)

    def _transition(self, name: str, in_alarm: bool, end: float) -> bool:
        """Record the alarm's state for the minute; True when it went to ALARM (a page)."""
        paged = in_alarm and not self.state[name]
        self.run.pages[name] += paged
        self.state[name] = in_alarm
        self.timing.alarm_state(name, end, in_alarm)
        return paged

    def _responder_look(self, end: float) -> None:
        """The responder's own read and verdict for this page (``bench._responder_look``)."""
        _, share = self.timing.responder_look(end)
        read, verdict = responder_look(
            self.responder_insights, end, share, self.sim.truth.bad_task, self.responder_facts
        )
        self.run.responder.reads[read] += 1
        self.run.responder.verdicts[verdict] += 1

    def _tick(self, m: Minute, end: float) -> None:
        decision = self.timing.tick(end, self.settings.window_minutes)
        late = m.late_frames if m.late_frames is not None else np.zeros_like(m.responses)
        sums = self.tick.push(m.responses, m.frames, m.timeouts, late)
        # The last minute as the query finds it: its late lines are not yet searchable.
        responses, frames, timeouts, lates = (
            total - last + self.timing.visible(last, end, decision.query_start)
            for total, last in zip(sums, (m.responses, m.frames, m.timeouts, late), strict=True)
        )
        rows = rows_of(self.spec.tasks, responses, frames, timeouts, lates, self.sim.groups.endpoint)
        self.run.rows["a_per_task"] = max(self.run.rows["a_per_task"], len(rows))
        # The tick remembers the tasks failing at its previous run (the drainer keeps them in its ledger).
        found = assess_task_reach(
            rows, self.settings, self.spec.tasks, self.facts, start_time(end), self.tick_failing
        )
        self.tick_failing = found.failing
        if found.suspects:
            self.run.options["a_tick"].cordon(task_of(found.suspects[0].log_stream), decision.at, decision)
        if self.timing.in_alarm("vad", decision.query_start):
            self._vad_attribution(end, self.timing.query(decision, self.policy.window_minutes))

    def _contributors(self, m: Minute, end: float) -> None:
        breaching = int(m.timeouts.max()) >= CI_ALARM_MIN_TIMEOUTS
        self._transition("b_contributors", breaching, end)
        if breaching:
            decision = self.timing.alarm_decision("b_contributors", end, CONTRIBUTOR_HANDLER)
            found = assess_task_reach(
                rows_of(self.spec.tasks, m.responses, m.frames, m.timeouts), self.settings, self.spec.tasks
            )
            if found.suspects:
                task = task_of(found.suspects[0].log_stream)
                self.run.options["b_contributors"].cordon(task, decision.at, decision)

    def _self_judge(self, m: Minute, end: float) -> None:
        """Healthy tasks judging themselves, at minute resolution (the silent task: exactly, below)."""
        responses, _, timeouts = self.self_window.push(m.responses, m.frames, m.timeouts)
        bad = self.sim.truth.bad_task
        for task in np.flatnonzero(timeouts >= self.settings.min_timeouts):
            if task == bad and self.sim.start - 60 < end:
                continue
            n, k = max(int(responses[task]), int(timeouts[task])), int(timeouts[task])
            if self._self_suspect(k, n):
                self.run.options["c_self"].cordon(int(task), end)

    def _self_suspect(self, k: int, n: int) -> bool:
        """The worker's own test: the per-task test's floor, share and level, without the fleet."""
        settings = self.settings
        large = k >= settings.min_timeouts and k >= settings.min_failing_share * n
        return large and binomial_tail(k, n, settings.expected_timeout_rate) <= self.self_level

    def _self_judge_silent_task(self) -> None:
        """The silent task tests its own last two minutes at each of its timeouts."""
        truth, window = self.sim.truth, SELF_WINDOW_MINUTES * 60.0
        if truth.bad_task is None or truth.onset_seconds is None:
            return
        responses = np.array(truth.bad_responses)
        for count, due in enumerate(truth.bad_timeouts, start=1):
            lo = due - window
            k = count - int(np.searchsorted(truth.bad_timeouts, lo, side="right"))
            n = int(((responses > lo) & (responses <= due)).sum())
            if self._self_suspect(k, max(n, k)):
                self.run.options["c_self"].cordon(truth.bad_task, due)
                return

    def _vad_attribution(self, end: float, decision: Decision) -> None:
        """Today's path: the drainer's slow-VAD attribution (``assess_fleet``) over the last 30
        minutes' per-task warnings, at each tick while the VAD alarm is in ALARM."""
        warnings = np.stack([w for w, _ in self.vad])
        warnings[-1] = self.timing.visible(warnings[-1], end, decision.query_start)
        delays = np.stack([d for _, d in self.vad])
        total, started = warnings.sum(axis=0), self.starts.sums[0]
        first_minute = end / 60 - len(self.vad)
        stats = []
        for task in np.flatnonzero(total):
            seen = np.flatnonzero(warnings[:, task])
            stats.append(
                SlowVadStats(
                    log_stream=f"agent/livekit-agent/t{task}",
                    warnings=int(total[task]),
                    max_delay=float(delays[:, task].max()),
                    first_seen=EPOCH + timedelta(minutes=first_minute + float(seen[0])),
                    last_seen=EPOCH + timedelta(minutes=first_minute + float(seen[-1]) + 1),
                    jobs=int(min(total[task], started[task] + self.spec.calls_per_task)),
                )
            )
        streams = {f"agent/livekit-agent/t{t}": str(t) for t in range(self.spec.tasks)}
        assessment = assess_fleet(stats, streams, streams.values(), self.policy)
        for worker in assessment.degraded:
            self.run.options["vad_today"].cordon(int(worker.task_id), decision.at, decision)

    def _rows(self, m: Minute) -> None:
        """Rows the other queries would return at this minute (their worst case in the run)."""
        rows = self.run.rows
        (started,) = self.starts.push(m.started)
        self.fleet_jobs.append((m.calls_active, m.calls_started))
        # The responder's jobs: those in progress at its window's start and those started since.
        window_jobs = self.fleet_jobs[0][0] + sum(s for _, s in list(self.fleet_jobs)[1:])
        rows["responder_jobs"] = max(rows["responder_jobs"], window_jobs)
        # The drainer's sightings: a task of interest's job requests since it started, and the fleet's
        # over the accounting margin (``worker_drainer.read.job_evidence``); the larger of the two reads.
        self.job_requests += m.started
        self.recent_requests.append(m.calls_started)
        sightings = max(int(self.job_requests.max()), sum(self.recent_requests))
        rows["drainer_job_sightings"] = max(rows["drainer_job_sightings"], sightings)
        # A suspect's TTS outcomes: its jobs over 30 minutes (those started, and those in progress).
        per_task = int(started.max()) + self.spec.calls_per_task
        rows["drainer_tts_outcomes"] = max(rows["drainer_tts_outcomes"], per_task)


def run_family(
    family: str,
    tasks: int,
    volume: float,
    minutes: int,
    seeds: int,
    profile: DelayProfile = INSTANT,
    bytes_per_line: float = 0.0,
) -> list[Run]:
    config, settings = DetectionConfig(), TaskReachSettings()
    return [
        Bench(
            fleet(family, tasks, volume, minutes, seed),
            config,
            settings,
            BenchTiming(profile, seed, bytes_per_line),
        ).execute()
        for seed in range(1, seeds + 1)
    ]
