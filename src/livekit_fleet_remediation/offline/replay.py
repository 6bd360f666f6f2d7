"""Replay the whole loop over exported agent logs, in simulated time: what would have happened.

Minute by minute over the log, it evaluates the detection alarms as the stack defines them (the
backtest's evaluator of the environment's ``DetectionConfig``), routes every alarm transition and
schedule tick to the functions as the stack's EventBridge rules do (``stack_rules``), and runs the
functions' own service entry points (``run_reaper``, ``run_tts_reach``, ``run_drainer``: their
routers, decisions, executors and reports) with simulated dependencies. Only the clock, the log
source, LiveKit and ECS (and the AWS stores around them) are simulated; ``replay_world`` says how
each is built from the log. Each invocation happens when the delay profile puts it
(``replay_timing``: the alarms' evaluation, EventBridge, schedule jitter, cold starts, Logs Insights'
late lines and run time); ``--profile none`` keeps every decision at the end of its minute.

The counterfactual is conservative: a failed lesson counts as spared only when its ``received job
request`` on a worker came after that worker was taken out of rotation (a step the step table marks
``takes_out``, until an undo): LiveKit would have placed it on another worker (a replacement), which
the model assumes healthy. Everything else failed as it did in the log. One action feeds back: a
stopped task's later lines are not written, so the alarms and the queries no longer see them; other
lines are replayed as recorded (a reaped zombie's warnings keep coming, a cordoned worker keeps
receiving lessons in the log).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from functools import partial
from typing import Any, TextIO

from fleet_remediation.adapters.alarm_state import AlarmReading
from fleet_remediation.contract.naming import (
    FunctionName,
    task_id_from_log_stream,
    tts_reach_alarm_name,
    vad_alarm_name,
)
from fleet_remediation.contract.settings import DrainerSettings
from fleet_remediation.core.invocation import run_reported
from fleet_remediation.core.observability import logger, metrics
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Mode
from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.offline.backtest import MINUTE, AlarmTransition, lessons, run_backtest
from livekit_fleet_remediation.offline.delays import INSTANT, DelayProfile
from livekit_fleet_remediation.offline.eventbridge_events import schedule_event
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from livekit_fleet_remediation.offline.log_export import LogEvent
from livekit_fleet_remediation.offline.replay_model import (
    NOTIFY,
    SIMULATED_ACCOUNT,
    ActionRecord,
    AlarmChange,
    Invocation,
    ReplayResult,
    alarm_event,
    counterfactual,
    on_schedule,
    stack_rules,
)
from livekit_fleet_remediation.offline.replay_record import ReplayRecorder
from livekit_fleet_remediation.offline.replay_stack import SimulatedWorld, function_settings
from livekit_fleet_remediation.offline.replay_timing import FOLLOW_UP, describe
from livekit_fleet_remediation.offline.series import minute_series
from tts_reach_alarm.dependencies import TtsReachDependencies
from tts_reach_alarm.handler import RESPONDER
from worker_drainer.dependencies import DrainerDependencies
from worker_drainer.handler import DRAINER
from zombie_reaper.dependencies import ReaperDependencies
from zombie_reaper.handler import REAPER

# The functions' own pipelines, each as its handler runs it, without Lambda around it.
run_reaper, run_tts_reach, run_drainer = REAPER.invoke, RESPONDER.invoke, DRAINER.invoke

# The replay reports its progress on stderr when it runs longer than this (seconds between lines).
PROGRESS_EVERY_SECONDS = 5.0


class UnreadableInput(Exception):
    """The log, the configuration or the environment cannot be used: exit 2 with this message."""


@contextlib.contextmanager
def _function_logs_quiet() -> Iterator[None]:
    """Each invocation logs its whole report (Powertools, on stdout); the replay prints its own."""
    previous = logger.log_level
    logger.setLevel("WARNING")
    try:
        yield
    finally:
        logger.setLevel(previous)


class Replay:
    """The stack, its three functions and a simulated world, driven minute by minute over the log."""

    def __init__(
        self,
        events: Sequence[LogEvent],
        env_name: str,
        config: EnvironmentConfig,
        mode: Mode = Mode.ENFORCE,
        log_name: str = "",
        progress: TextIO | None = None,
        profile: DelayProfile = INSTANT,
        seed: int = 1,
    ) -> None:
        if not events:
            raise UnreadableInput(f"{log_name or 'the log'} holds no JSON log events")
        self.events = list(events)
        # The replay covers the environment's first agent service (its own sections where it has them).
        self.env_name, self.config, self.mode = env_name, config.for_service(config.agent_service), mode
        self.progress = progress
        self.rules = stack_rules(env_name, config)
        self.region, self.account = config.region, config.account or SIMULATED_ACCOUNT
        self.world = SimulatedWorld.from_events(
            self.events, config, region=self.region, account=self.account, profile=profile, seed=seed
        )
        self.timing = self.world.timing
        self.settings = function_settings(env_name, config, self.account)
        self.result = ReplayResult(
            log=log_name,
            env_name=env_name,
            mode=mode,
            events=len(self.events),
            streams=len({e.stream for e in self.events}),
            start=self.events[0].at,
            end=self.events[-1].at,
            delays=describe(profile, seed),
        )
        self.recorder = ReplayRecorder(self.result, self.world.clock)
        self._check_stream_names()
        self._reaper, self._responder, self._drainer = self._dependencies()

    def _dependencies(self) -> tuple[ReaperDependencies, TtsReachDependencies, DrainerDependencies]:
        """The functions' dependencies on the simulated world (a benchmark wraps them to meter them)."""
        return self.world.dependencies(self.settings, self.mode, self.config.detection.catalog())

    def _check_stream_names(self) -> None:
        drainer = self.settings[FunctionName.WORKER_DRAINER]
        assert isinstance(drainer, DrainerSettings)
        foreign = sorted(
            s
            for s in {e.stream for e in self.events}
            if drainer.log_stream_for(task_id_from_log_stream(s)) != s
        )
        if foreign:
            self.result.warnings.append(
                f"{len(foreign)} log stream(s) are not named {drainer.log_stream_for('<task id>')} as "
                f"drainer.agent_log_stream_prefix and the container name configure (e.g. {foreign[0]}): the "
                "drainer cannot tie them to a task"
            )

    # --- running ----------------------------------------------------------------------------------------
    def _alarm_names(self) -> dict[str, str]:
        """The replayed service's pages, by the backtest's name for each."""
        service = self.config.agent_service.name
        return {
            "vad": vad_alarm_name(self.env_name, service),
            "tts_reach": tts_reach_alarm_name(self.env_name, service),
        }

    def _transitions(self) -> list[AlarmTransition]:
        """The alarms' state changes over the lines written: a stopped task's later lines are not."""
        written = [event for event in self.events if self.timing.written(event)]
        return run_backtest(written, self.config.detection).transitions()

    def run(self) -> ReplayResult:
        backtest = run_backtest(self.events, self.config.detection)
        self._changes = backtest.transitions()
        first = backtest.minutes[0].start
        minutes = len(backtest.minutes)
        started, reported = time.monotonic(), time.monotonic()
        self._previous = {"vad": "OK", "tts_reach": "OK"}
        with _function_logs_quiet():
            for index in range(1, minutes + 1):
                now = first + index * MINUTE
                for change in (t for t in self._changes if t.at == now):
                    self._alarm_changes(change.alarm, change.state, now)
                for rule in self.rules:
                    if rule.schedule_minutes is not None and on_schedule(rule, now):
                        tick = now + self.timing.seconds(self.timing.profile.schedule_jitter)
                        self.timing.push(tick, partial(self._tick, rule.function, now))
                self.timing.run_until(now)
                if self.progress and time.monotonic() - reported >= PROGRESS_EVERY_SECONDS:
                    reported = time.monotonic()
                    self.progress.write(
                        f"replay: simulated {now:%Y-%m-%d %H:%M} ({index / minutes:.0%}), "
                        f"{reported - started:.0f} s\n"
                    )
            self.timing.run_until(None)
        self._record_notifications()
        self.result.lessons = counterfactual(
            lessons(self.events, self.config.detection.catalog()),
            self.result.out_of_rotation,
            self.world.jobs,
            self.world.livekit.deletions,
        )
        self.result.series = minute_series(self.events, self.config.detection.catalog(), first, minutes)
        return self.result

    def _alarm_changes(self, name: str, state: str, period_end: datetime) -> None:
        """The alarm evaluates the minute ending at ``period_end`` and changes state; EventBridge
        delivers the change to the rules that match it."""
        alarm = self._alarm_names()[name]
        seen = self.timing.alarm_seen(alarm, period_end)
        event = alarm_event(
            alarm, state, self._previous[name], seen, account=self.account, region=self.region
        )
        self._previous[name] = state

        def changed() -> None:
            self.result.alarms.append(AlarmChange(alarm, state, seen))
            self.world.alarm_states.readings[alarm] = AlarmReading(state, seen)
            for rule in self.rules:
                if rule.alarm == alarm and state in rule.states:
                    delivered = seen + self.timing.seconds(self.timing.profile.event_delivery)
                    trigger = f"{alarm} {state}"
                    run = partial(self._invoke, rule.function, event, trigger)
                    self.timing.push(delivered, run, FOLLOW_UP)

        self.timing.push(seen, changed)

    def _tick(self, function: FunctionName, minute: datetime) -> None:
        name = f"lkfr-{self.env_name}-{function.value.replace('_', '-')}-schedule"
        event = schedule_event(name, account=self.account, region=self.region, now=minute)
        self._invoke(function, event, "schedule")

    def _invoke(self, function: FunctionName, event: dict[str, Any], trigger: str) -> None:
        self.timing.started(function.value)
        invocation_id = f"replay-{len(self.result.invocations) + 1}"
        # The simulated stack's account and region: the functions' door admits their events.
        context: Any = LocalLambdaContext(account=self.account, region=self.region)
        runners: dict[FunctionName, Callable[[ReportBuilder], None]] = {
            FunctionName.ZOMBIE_REAPER: lambda report: run_reaper(
                event, report, self._reaper, self._reaper.settings.timeout_seconds, context
            ),
            FunctionName.TTS_REACH_ALARM: lambda report: run_tts_reach(
                event, report, self._responder, self._responder.settings.timeout_seconds, context
            ),
            FunctionName.WORKER_DRAINER: lambda report: run_drainer(
                event, report, self._drainer, self._drainer.settings.timeout_seconds, context
            ),
        }
        report = run_reported(function.value, invocation_id, runners[function])
        # Lambda flushes the metrics at the end of each invocation; here they go nowhere.
        metrics.clear_metrics()
        now = self.world.clock()
        self.result.invocations.append(Invocation(now, function.value, trigger, report))
        self._record(function, trigger, report)
        if function is FunctionName.TTS_REACH_ALARM:
            for put in self.world.bus.take():
                for rule in self.rules:
                    if rule.suspect_worker and put["detail"].get("environment") == self.env_name:
                        at = now + self.timing.seconds(self.timing.profile.event_delivery)
                        run = partial(self._invoke, rule.function, put, "suspect-worker event")
                        self.timing.push(at, run, FOLLOW_UP)
        self._feedback()

    def _record(self, function: FunctionName, trigger: str, report: dict[str, Any]) -> None:
        """One invocation's report into the result (a benchmark wraps it to meter the reports)."""
        self.recorder.record(function, trigger, report)

    def _feedback(self) -> None:
        """A logged task that was stopped writes no more lines: the alarms are evaluated again over
        the lines written (their changes from now on follow), the queries no longer find them."""
        stopped = {
            stream: at
            for at, task_id, _ in self.world.ecs.stopped
            if (stream := self.world.ecs.stream_of(task_id)) and stream not in self.timing.cuts
        }
        if stopped:
            self.timing.cuts.update(stopped)
            self._changes = self._transitions()

    def _record_notifications(self) -> None:
        topic = self._reaper.settings.notification_topic_arn.rsplit(":", 1)[-1]
        for sent in self.world.sent:
            self.result.actions.append(ActionRecord(sent.at, sent.function, NOTIFY, topic, sent.subject))
        self.result.actions.sort(key=lambda a: a.at)
