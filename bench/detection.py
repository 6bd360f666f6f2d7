"""Detection benchmark: the alarms, the drainer's attribution and the TTS responder's verdict over
simulated traffic (``devkit.traffic``), healthy and failing, at 5 to 2,000 responses a minute.

For every scenario family and volume it streams the simulated fleet minute by minute (never the
whole week in memory), feeds each minute's metric-filter counts to the alarms exactly as deployed
(``fleet_remediation.contract.detection``: the same definitions the CDK stack renders), and at every
transition to ALARM runs what the alarm would trigger: the drainer's ``assess_fleet`` over
per-worker slow-VAD statistics of the last 30 minutes (VAD alarm), and the responder's
``assess_concentration`` over per-job outcomes of its window followed by the drainer's suspect-worker
rule (TTS alarm). While an alarm stays in ALARM it also runs what the deployed schedules run: the
drainer's tick every minute (a cordon when the attribution finds a degraded worker) and the
responder's re-check every 2 minutes until a worker is named (at the re-check's spent alpha). Those
act, but they are not pages. It prints:

* healthy families (steady, daily with quiet nights and a rolling deploy a day, slow-but-healthy
  TTS every day): false pages per simulated day for the old TTS alarm (per-minute reach < 0.97 in
  3 of 5 minutes: the baseline), the new one with the agent-side emitter's timeout line and without
  it (reach rule only), and the VAD alarm; drains of healthy workers;
* failure families: detection latency after onset (the first response that never reaches a first
  audio frame; for a fleet-wide slowdown, the first one whose frame comes after the timeout) for
  each alarm and for the first page of either deployed alarm, pages per incident (transitions to
  ALARM from onset to ten minutes after the failure ends), what the VAD attribution and the
  responder said at each of their ALARMs (right / nobody named / wrong), and drains: of the bad
  worker, of healthy workers, and in fleet-wide events.

Times are when the alarm's state changes under the delay profile (``--profile aws``, the default:
the minute's lines ingested, the metric visible, then the alarm's next once-a-minute evaluation;
``--profile none``: the end of the minute whose evaluation changes the state), for the old and the
new alarm alike.

    PYTHONPATH=agent:functions:layers/shared/python:src:. .venv/bin/python -m bench.detection [--quick]

With ``--tasks`` or ``--json`` it runs the fleet-scale benchmark instead (``bench._task_detection``:
60 to 1,000 tasks, per-task detection options side by side, one JSON object per size and family):

    ... -m bench.detection --tasks 60 200 500 1000 --volumes 20000 --days 1 --seeds 2 --json

There each decision waits for the services' delays (``--profile aws``, the default: the service
profile's schedule jitter, cold starts, late log lines, Logs Insights time, metric visibility and
alarm evaluation, EventBridge delivery; ``--profile none`` for the instant model).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta

from devkit.traffic import (
    EPOCH,
    FAILURE_FAMILIES,
    FIRST_FRAME,
    HEALTHY_FAMILIES,
    RESPONSE,
    SLOW_VAD,
    TIMEOUT,
    Event,
    FailureKind,
    TrafficSimulation,
    scenario,
)
from fleet_remediation.contract.alarm_math import (
    AlarmDefinition,
    AlarmEvaluator,
    AlarmInput,
    Arithmetic,
    Compare,
    Const,
    If,
    Logical,
    MinuteCounts,
    Series,
    Statistic,
    evaluator_for,
)
from fleet_remediation.contract.detection import DetectionConfig
from fleet_remediation.contract.policies import DrainerPolicy
from fleet_remediation.contract.sections import DrainerSection, TtsReachSection
from fleet_remediation.domain.job_outcomes import JobOutcome
from livekit_fleet_remediation.offline.delay_profiles import PROFILES, profile_named
from livekit_fleet_remediation.offline.delays import INSTANT, DelayProfile, Delays
from tts_reach_alarm.analysis import Concentration, Verdict, assess_concentration
from tts_reach_alarm.investigation import recheck_alpha
from tts_reach_alarm.transition import analysis_window_minutes
from worker_drainer.adapters.worker_logs import SlowVadStats
from worker_drainer.decide.attribution import FleetAssessment, assess_fleet

VOLUMES = (5, 35, 250, 2000)
FULL_DAYS, QUICK_DAYS = 7, 1
FULL_SEEDS, QUICK_SEEDS = 3, 1
# A failure run: two hours of normal traffic (and the zombie's), 40 minutes of failure, then calm.
FAILURE_RUN_MINUTES = 290


def legacy_tts_reach() -> AlarmDefinition:
    """The alarm this work replaces, as it was deployed: per-minute reach = first frames ÷ responses
    below 0.97 with >= 10 responses, in 3 of 5 minutes (``frames < 0.97 x responses`` is the same
    breach as ``frames / responses < 0.97`` for a positive count)."""
    responses, frames = Series("responses"), Series("frames")
    breach = Logical(
        "AND",
        (
            Compare(">=", responses, Const(10)),
            Compare("<", frames, Arithmetic("*", Const(0.97), responses)),
        ),
    )
    return AlarmDefinition(
        expression=If(breach, Const(1), Const(0)),
        inputs=(
            AlarmInput("responses", "response_started", Statistic.SUM, "responses"),
            AlarmInput("frames", "first_audio_frame", Statistic.SUM, "first_frames"),
        ),
        period_minutes=1,
        evaluation_periods=5,
        datapoints_to_alarm=3,
    )


ALARMS = ("tts_old", "tts_new", "tts_new_no_emitter", "vad")


@dataclass(slots=True)
class VadRow:
    """Slow-VAD warnings of one task: what the drainer's Insights statistics query returns."""

    warnings: int
    max_delay: float
    first: float
    last: float
    lessons: set[int]

    def add(self, at: float, lesson: int, delay: float) -> None:
        self.warnings += 1
        self.max_delay = max(self.max_delay, delay)
        # A minute's events come unordered (the bench asks the simulator not to sort them).
        self.first = min(self.first, at)
        self.last = max(self.last, at)
        self.lessons.add(lesson)

    def merge(self, other: VadRow) -> None:
        self.warnings += other.warnings
        self.max_delay = max(self.max_delay, other.max_delay)
        self.first = min(self.first, other.first)
        self.last = max(self.last, other.last)
        self.lessons |= other.lessons


@dataclass
class Transition:
    alarm: str
    minute: int  # the alarm goes to ALARM at the end of this minute
    drained: frozenset[str] = frozenset()
    fleet: FleetAssessment | None = None
    verdict: Concentration | None = None
    # A scheduled run during the ALARM that acted (not a page): the responder's re-check that named
    # a worker, the drainer's tick that found a degraded one.
    recheck: bool = False


@dataclass
class RunResult:
    family: str
    volume: float
    workers: int
    slots: int
    minutes: int
    responses: int
    transitions: list[Transition] = field(default_factory=list)
    # Minutes (indexes) at whose end each alarm was in ALARM.
    alarm_minutes: dict[str, list[int]] = field(default_factory=dict)
    bad_task_id: str | None = None
    # Seconds from the end of each ALARM minute until the alarm's evaluation of it (the profile's delay).
    seen_after: dict[str, dict[int, float]] = field(default_factory=dict)
    fleet_wide: bool = False
    onset_minute: float | None = None
    cause_minute: float | None = None
    end_minute: float | None = None
    seconds: float = 0.0


class Watch:
    """Everything the deployed system would see, minute by minute, in bounded memory."""

    def __init__(self, sim: TrafficSimulation, config: DetectionConfig, policy: DrainerPolicy) -> None:
        self.sim, self.config, self.policy = sim, config, policy
        tts = config.tts_reach_alarm
        self.evaluators = {
            "tts_old": AlarmEvaluator(legacy_tts_reach()),
            "tts_new": evaluator_for(tts.alarm()),
            "tts_new_no_emitter": evaluator_for(tts.alarm()),
            "vad": evaluator_for(config.vad_alarm.alarm()),
        }
        self.state = dict.fromkeys(ALARMS, False)
        self.alarm_minutes: dict[str, list[int]] = {name: [] for name in ALARMS}
        # Per minute: slow-VAD statistics per task; [task, responses, frames] per job. Only the
        # windows the drainer and the responder read are kept.
        self.vad_minutes: deque[dict[int, VadRow]] = deque(maxlen=policy.window_minutes)
        self.job_minutes: deque[dict[int, list[int]]] = deque(maxlen=analysis_window_minutes(config))
        self.responses = 0
        self.recheck_minutes = TtsReachSection().recheck_minutes
        self.drainer_tick_minutes = DrainerSection().schedule_minutes
        # Per TTS alarm in ALARM: the minute it fired, and whether its incident has a named worker.
        self.incident: dict[str, tuple[int, bool]] = {}

    def minute(self, minute: int, events: Sequence[Event]) -> list[Transition]:
        counts = MinuteCounts()
        vad: dict[int, VadRow] = {}
        jobs: dict[int, list[int]] = {}
        responses = frames = timeouts = warnings = 0
        max_delay: float | None = None
        for at, task, kind, lesson, value in events:
            if kind == RESPONSE:
                responses += 1
                job = jobs.get(lesson)
                if job is None:
                    jobs[lesson] = [task, 1, 0]
                else:
                    job[1] += 1
            elif kind == FIRST_FRAME:
                frames += 1
                job = jobs.get(lesson)
                if job is None:
                    jobs[lesson] = [task, 0, 1]
                else:
                    job[2] += 1
            elif kind == TIMEOUT:
                timeouts += 1
            elif kind == SLOW_VAD:
                warnings += 1
                max_delay = value if max_delay is None else max(max_delay, value)
                row = vad.get(task)
                if row is None:
                    vad[task] = VadRow(1, value, at, at, {lesson})
                else:
                    row.add(at, lesson, value)
        counts.responses, counts.first_frames, counts.first_audio_timeouts = responses, frames, timeouts
        counts.vad_warnings, counts.vad_max_delay = warnings, max_delay
        self.responses += responses
        self.vad_minutes.append(vad)
        self.job_minutes.append(jobs)
        without_timeouts = replace(counts, first_audio_timeouts=0)
        fired = []
        for name, evaluator in self.evaluators.items():
            _, in_alarm = evaluator.push(without_timeouts if name == "tts_new_no_emitter" else counts)
            if in_alarm and not self.state[name]:
                fired.append(self._act(name, minute))
                self.incident[name] = (
                    minute,
                    fired[-1].verdict is not None and fired[-1].verdict.concentrated,
                )
            elif in_alarm and (found := self._recheck(name, minute) or self._tick(name, minute)):
                fired.append(found)
            if in_alarm:
                self.alarm_minutes[name].append(minute)
            self.state[name] = in_alarm
        return fired

    # --- what each alarm triggers ----------------------------------------------------------------
    def _act(self, alarm: str, minute: int, alpha: float | None = None) -> Transition:
        fleet = self._assess_fleet(minute)
        if alarm == "vad":
            return Transition(alarm, minute, frozenset(w.task_id for w in fleet.degraded), fleet)
        verdict = self._responder(alpha)
        drained: frozenset[str] = frozenset()
        if verdict.concentrated and verdict.top is not None and not fleet.fleet_wide:
            drained = frozenset({verdict.top.log_stream.rsplit("/", 1)[-1]})
        return Transition(alarm, minute, drained, fleet, verdict)

    def _recheck(self, alarm: str, minute: int) -> Transition | None:
        """The responder's scheduled re-check of the new TTS alarm's open incident (every
        ``recheck_minutes`` while in ALARM, until a worker is named): a worker named for the first
        time in the incident."""
        if alarm != "tts_new" or not self.recheck_minutes or alarm not in self.incident:
            return None
        since, named = self.incident[alarm]
        if named or (minute - since) % self.recheck_minutes:
            return None
        look = (minute - since) // self.recheck_minutes
        found = self._act(alarm, minute, recheck_alpha(self.config.tts_reach_alarm.concentration_alpha, look))
        if found.verdict is None or not found.verdict.concentrated:
            return None
        self.incident[alarm] = (since, True)
        found.recheck = True
        return found

    def _tick(self, alarm: str, minute: int) -> Transition | None:
        """The drainer's scheduled tick while the VAD alarm stays in ALARM: it attributes as the
        transition did (a cordon when a worker is degraded and the fleet is not)."""
        if alarm != "vad" or minute % self.drainer_tick_minutes:
            return None
        fleet = self._assess_fleet(minute)
        if fleet.fleet_wide or not fleet.degraded:
            return None
        return Transition(alarm, minute, frozenset(w.task_id for w in fleet.degraded), fleet, recheck=True)

    def _assess_fleet(self, minute: int) -> FleetAssessment:
        """The drainer's attribution at the end of ``minute`` over its window's statistics."""
        totals: dict[int, VadRow] = {}
        for per_task in self.vad_minutes:
            for task, row in per_task.items():
                total = totals.get(task)
                if total is None:
                    totals[task] = VadRow(row.warnings, row.max_delay, row.first, row.last, set(row.lessons))
                else:
                    total.merge(row)
        tasks = self.sim.tasks
        stats = [
            SlowVadStats(
                log_stream=tasks[task].stream,
                warnings=row.warnings,
                max_delay=row.max_delay,
                first_seen=EPOCH + timedelta(seconds=row.first),
                last_seen=EPOCH + timedelta(seconds=row.last),
                jobs=len(row.lessons),
            )
            for task, row in sorted(totals.items())
        ]
        running = self.sim.running_tasks((minute + 1) * 60.0)
        return assess_fleet(
            stats, {t.stream: t.task_id for t in running}, [t.task_id for t in running], self.policy
        )

    def _responder(self, alpha: float | None = None) -> Concentration:
        totals: dict[int, list[int]] = {}
        for per_job in self.job_minutes:
            for lesson, (task, responses, frames) in per_job.items():
                row = totals.setdefault(lesson, [task, 0, 0])
                row[1] += responses
                row[2] += frames
        tasks = self.sim.tasks
        jobs = [
            JobOutcome(str(lesson), tasks[task].stream, responses, frames)
            for lesson, (task, responses, frames) in totals.items()
            if responses > 0
        ]
        alarm = self.config.tts_reach_alarm
        return assess_concentration(
            jobs,
            alpha=alarm.concentration_alpha if alpha is None else alpha,
            min_failed_jobs=alarm.min_failed_jobs,
        )


def run(
    family: str,
    volume: float,
    minutes: int,
    seed: int,
    config: DetectionConfig,
    profile: DelayProfile = INSTANT,
) -> RunResult:
    started = time.perf_counter()
    sim = TrafficSimulation(scenario(family, volume, minutes, seed))
    watch = Watch(sim, config, DrainerPolicy())
    s = sim.scenario
    result = RunResult(family, volume, s.workers, s.slots(), minutes, 0)
    for minute, events in sim.minutes(ordered=False):
        result.transitions.extend(watch.minute(minute, events))
    truth = sim.truth
    result.responses = watch.responses
    result.alarm_minutes = watch.alarm_minutes
    delays = Delays(profile, seed)
    result.seen_after = {
        alarm: {m: delays.alarm_sees(alarm, (m + 1) * 60.0) - (m + 1) * 60.0 for m in in_alarm}
        for alarm, in_alarm in watch.alarm_minutes.items()
    }
    result.fleet_wide = truth.fleet_wide
    if truth.bad_task is not None:
        result.bad_task_id = sim.tasks[truth.bad_task].task_id
    failure = s.failure
    if failure is not None:
        onset = truth.first_failed_response
        result.onset_minute = onset / 60 if onset is not None else failure.start_minute
        lead = {FailureKind.CPU_STARVED_ZOMBIE: 90.0, FailureKind.CPU_STARVED: 15.0}.get(failure.kind, 0.0)
        result.cause_minute = failure.start_minute - lead
        result.end_minute = failure.start_minute + failure.duration_minutes
    result.seconds = time.perf_counter() - started
    return result


# --- figures ---------------------------------------------------------------------------------------
def false_pages_per_day(result: RunResult, alarm: str) -> float:
    return sum(t.alarm == alarm for t in result.transitions) / (result.minutes / 1440)


def healthy_drains(results: Iterable[RunResult], alarms: Sequence[str]) -> int:
    drained = set()
    for result in results:
        for t in result.transitions:
            if t.alarm in alarms:
                drained |= {
                    (result.family, result.volume, task) for task in t.drained if task != result.bad_task_id
                }
    return len(drained)


def judged_from(result: RunResult, alarm: str) -> float:
    """A TTS alarm can only see a failure once responses fail; the VAD alarm sees its cause."""
    assert result.onset_minute is not None
    assert result.cause_minute is not None
    return result.cause_minute if alarm == "vad" else result.onset_minute


def latency(result: RunResult, alarm: str) -> float | None:
    """Minutes from onset to the end of the first minute, from when this alarm could see the failure
    until ten minutes after it ended, at which the alarm is in ALARM (an alarm already in ALARM
    from a false page counts as having detected: the baseline gets the benefit of the doubt)."""
    assert result.onset_minute is not None
    assert result.end_minute is not None
    start = judged_from(result, alarm)
    found = next(
        (m for m in result.alarm_minutes[alarm] if start <= m + 1 <= result.end_minute + 10),
        None,
    )
    if found is None:
        return None
    return found + 1 + result.seen_after.get(alarm, {}).get(found, 0.0) / 60 - result.onset_minute


def first_of(*latencies: float | None) -> float | None:
    found = [value for value in latencies if value is not None]
    return min(found) if found else None


def latency_text(values: Sequence[float | None]) -> str:
    found = [v for v in values if v is not None]
    missed = len(values) - len(found)
    if not found:
        return "missed"
    text = f"{statistics.median(found):+.1f}"
    if len(found) > 1:
        text += f" [{max(found):+.1f}]"
    return text + (f" ({missed} missed)" if missed else "")


def pages_text(counts: Sequence[int]) -> str:
    """Transitions to ALARM during each incident: median [most]."""
    return f"{statistics.median(counts):g} [{max(counts)}]"


def transitions_during(result: RunResult, alarm: str) -> list[Transition]:
    assert result.end_minute is not None
    start = judged_from(result, alarm)
    return [
        t
        for t in result.transitions
        if t.alarm == alarm and not t.recheck and start <= t.minute + 1 <= result.end_minute + 10
    ]


def vad_attribution(result: RunResult, transition: Transition) -> str:
    """right / none / wrong: what the drainer's attribution said at one VAD ALARM."""
    assert transition.fleet is not None
    degraded = {w.task_id for w in transition.fleet.degraded}
    if result.fleet_wide:
        return "right" if transition.fleet.fleet_wide and not degraded else "wrong" if degraded else "none"
    if not degraded:
        return "none"
    return "right" if degraded == {result.bad_task_id} else "wrong"


def responder_verdict(result: RunResult, transition: Transition) -> str:
    """right / none / wrong: what the responder concluded at one TTS ALARM (inconclusive = none)."""
    verdict = transition.verdict
    assert verdict is not None
    if verdict.verdict is Verdict.INCONCLUSIVE:
        return "none"
    if result.fleet_wide:
        return "right" if verdict.verdict is Verdict.FLEET_WIDE else "wrong"
    named = verdict.top.log_stream.rsplit("/", 1)[-1] if verdict.concentrated and verdict.top else None
    return "right" if named == result.bad_task_id else "wrong"


def tally(values: Sequence[str]) -> str:
    """Counts over every ALARM transition of the runs: right / none (nobody named) / wrong."""
    if not values:
        return "not fired"
    return f"{values.count('right')} / {values.count('none')} / {values.count('wrong')}"


def drains(results: Sequence[RunResult], alarms: Sequence[str]) -> tuple[int, int, int]:
    """(drains of the bad worker, of healthy workers, in fleet-wide events) over the runs."""
    right = healthy = fleet_wide = 0
    for result in results:
        drained = {task for t in result.transitions if t.alarm in alarms for task in t.drained}
        if result.fleet_wide:
            fleet_wide += len(drained)
        else:
            right += int(result.bad_task_id in drained)
            healthy += len(drained - {result.bad_task_id})
    return right, healthy, fleet_wide


HEALTHY_HEADER = (
    "\nHealthy traffic: false pages per simulated day (a page = a transition to ALARM)\n\n"
    "| family | volume (peak) | fleet | days | responses/min (mean) | TTS old | TTS new | "
    "TTS new, no emitter | VAD | healthy drains old / new |\n"
    "|---|---|---|---|---|---|---|---|---|---|"
)
FAILURE_HEADER = (
    "\nFailures: detection latency after onset, minutes (median [worst] over runs; negative = "
    "before the first failed response)\n\n"
    "| family | volume | runs | TTS old | TTS new | TTS new, no emitter | VAD | "
    "first page (TTS new or VAD) | TTS pages per incident: old, new | "
    "pages per incident (TTS new + VAD) | "
    "VAD attribution right / none / wrong | responder (new) right / none / wrong | "
    "drains right / healthy / fleet-wide: old, new |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def healthy_row(r: RunResult) -> str:
    pages = " | ".join(f"{false_pages_per_day(r, alarm):.2f}" for alarm in ALARMS)
    old = healthy_drains([r], ("tts_old", "vad"))
    new = healthy_drains([r], ("tts_new", "vad"))
    return (
        f"| {r.family} | {r.volume:g}/min | {r.workers} x {r.slots} | {r.minutes / 1440:g} | "
        f"{r.responses / r.minutes:.0f} | {pages} | {old} / {new} |"
    )


def failure_row(runs: Sequence[RunResult]) -> str:
    first = runs[0]
    latencies = " | ".join(latency_text([latency(r, alarm) for r in runs]) for alarm in ALARMS)
    first_page = latency_text([first_of(latency(r, "tts_new"), latency(r, "vad")) for r in runs])
    pages = ", ".join(
        pages_text([len(transitions_during(r, alarm)) for r in runs]) for alarm in ("tts_old", "tts_new")
    )
    every_page = pages_text(
        [len(transitions_during(r, "tts_new")) + len(transitions_during(r, "vad")) for r in runs]
    )
    attribution = tally([vad_attribution(r, t) for r in runs for t in transitions_during(r, "vad")])
    verdicts = tally([responder_verdict(r, t) for r in runs for t in transitions_during(r, "tts_new")])
    old = "/".join(map(str, drains(runs, ("tts_old", "vad"))))
    new = "/".join(map(str, drains(runs, ("tts_new", "vad"))))
    return (
        f"| {first.family} | {first.volume:g}/min | {len(runs)} | {latencies} | {first_page} | {pages} | "
        f"{every_page} | "
        f"{attribution} | "
        f"{verdicts} | {old}, {new} |"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="1 simulated day per healthy family, 1 seed")
    parser.add_argument("--volumes", type=float, nargs="*", default=list(VOLUMES))
    parser.add_argument("--days", type=float, help="simulated days per healthy family (default 7, quick 1)")
    parser.add_argument("--seeds", type=int, help="runs per failure family and volume (default 3, quick 1)")
    parser.add_argument("--tasks", type=int, nargs="*", help="fleet sizes: the fleet-scale benchmark")
    parser.add_argument("--json", action="store_true", help="fleet-scale benchmark, one JSON object a line")
    parser.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        default="aws",
        help="the services' delays (default aws; none: every decision at the end of its minute)",
    )
    args = parser.parse_args(argv)
    if args.tasks or args.json:
        from bench import _task_detection, _task_detection_report

        _task_detection_report.main(
            args.tasks or list(_task_detection.TASKS),
            args.volumes if args.volumes != list(VOLUMES) else list(_task_detection.VOLUMES),
            args.days or QUICK_DAYS,
            args.seeds or 2,
            args.json,
            profile_named(args.profile),
        )
        return
    profile = profile_named(args.profile)
    days = args.days or (QUICK_DAYS if args.quick else FULL_DAYS)
    seeds = args.seeds or (QUICK_SEEDS if args.quick else FULL_SEEDS)
    config = DetectionConfig()
    started = time.perf_counter()
    print(
        f"TTS alarm (new): {config.tts_reach_alarm.describe()}\n"
        "TTS alarm (old, baseline): per-minute reach < 0.97 with >= 10 responses, 3 of 5 minutes\n"
        f"VAD alarm: {config.vad_alarm.describe()}\n"
        f"Delays: profile {profile.name} ({profile.version}): latency counts to the alarm's evaluation"
    )
    print(HEALTHY_HEADER, flush=True)
    for family in HEALTHY_FAMILIES:
        for volume in args.volumes:
            healthy = run(family, volume, round(days * 1440), 11, config, profile)
            print(healthy_row(healthy), flush=True)
    print(FAILURE_HEADER, flush=True)
    for family in FAILURE_FAMILIES:
        for volume in args.volumes:
            runs = [
                run(family, volume, FAILURE_RUN_MINUTES, seed, config, profile)
                for seed in range(1, seeds + 1)
            ]
            print(failure_row(runs), flush=True)
    print(f"\n{time.perf_counter() - started:.0f} s wall time, {time.process_time():.0f} s CPU")


if __name__ == "__main__":
    main()
