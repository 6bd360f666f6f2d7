"""Replay the whole loop over exported agent logs, in simulated time: what would have happened.

Minute by minute over the log, it evaluates the detection alarms as the stack defines them (the
backtest's evaluator of the environment's ``DetectionConfig``), routes every alarm transition and
schedule tick to the functions as the stack's EventBridge rules do (``stack_rules``), and runs the
functions' own service entry points (``run_reaper``, ``run_tts_reach``, ``run_drainer``: their
routers, decisions, executors and reports) with simulated dependencies. Only the clock, the log
source, LiveKit and ECS (and the AWS stores around them) are simulated; ``replay_world`` says how
each is built from the log.

The counterfactual is conservative: a failed lesson counts as spared only when its ``received job
request`` on a worker came after that worker was cordoned (and before any undo): LiveKit would have
placed it on another worker, which the model assumes healthy. Everything else failed as it did in the
log; the log itself is replayed as recorded (a reaped zombie's warnings keep coming, a cordoned worker
keeps receiving lessons in the log), so no action feeds back into the alarms.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

from fleet_remediation.adapters.alarm_state import AlarmReading
from fleet_remediation.contract.drainer_steps import Step, StepRow
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
from livekit_fleet_remediation.offline.backtest import MINUTE, lessons, run_backtest
from livekit_fleet_remediation.offline.eventbridge_events import schedule_event
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from livekit_fleet_remediation.offline.log_export import LogEvent
from livekit_fleet_remediation.offline.replay_model import (
    DELETE_ROOM,
    NOTIFY,
    SIMULATED_ACCOUNT,
    ActionRecord,
    AlarmChange,
    Invocation,
    NoteRecord,
    ReplayResult,
    VerdictRecord,
    alarm_event,
    counterfactual,
    drainer_step,
    on_schedule,
    quiet_outcome,
    stack_rules,
)
from livekit_fleet_remediation.offline.replay_stack import SimulatedWorld, function_settings
from livekit_fleet_remediation.offline.series import minute_series
from tts_reach_alarm.dependencies import TtsReachDependencies
from tts_reach_alarm.service import run_tts_reach
from worker_drainer.dependencies import DrainerDependencies
from worker_drainer.service import run_drainer
from zombie_reaper.dependencies import ReaperDependencies
from zombie_reaper.service import run_reaper

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
    ) -> None:
        if not events:
            raise UnreadableInput(f"{log_name or 'the log'} holds no JSON log events")
        self.events = list(events)
        # The replay covers the environment's first agent service (its own sections where it has them).
        self.env_name, self.config, self.mode = env_name, config.for_service(config.agent_service), mode
        self.progress = progress
        self.rules = stack_rules(env_name, config)
        self.region, self.account = config.region, config.account or SIMULATED_ACCOUNT
        self.world = SimulatedWorld.from_events(self.events, config, region=self.region, account=self.account)
        self.settings = function_settings(env_name, config, self.account)
        self.result = ReplayResult(
            log=log_name,
            env_name=env_name,
            mode=mode,
            events=len(self.events),
            streams=len({e.stream for e in self.events}),
            start=self.events[0].at,
            end=self.events[-1].at,
        )
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

    def run(self) -> ReplayResult:
        backtest = run_backtest(self.events, self.config.detection)
        transitions = backtest.transitions()
        first = backtest.minutes[0].start
        minutes = len(backtest.minutes)
        started, reported = time.monotonic(), time.monotonic()
        previous = {"vad": "OK", "tts_reach": "OK"}
        names = self._alarm_names()
        with _function_logs_quiet():
            for index in range(1, minutes + 1):
                now = first + index * MINUTE
                self.world.clock.now = now
                for change in (t for t in transitions if t.at == now):
                    alarm = names[change.alarm]
                    self.result.alarms.append(AlarmChange(alarm, change.state, now))
                    self.world.alarm_states.readings[alarm] = AlarmReading(change.state, now)
                    event = alarm_event(
                        alarm,
                        change.state,
                        previous[change.alarm],
                        now,
                        account=self.account,
                        region=self.region,
                    )
                    previous[change.alarm] = change.state
                    for rule in self.rules:
                        if rule.alarm == alarm and change.state in rule.states:
                            self._invoke(rule.function, event, f"{alarm} {change.state}")
                for rule in self.rules:
                    if rule.schedule_minutes is not None and on_schedule(rule, now):
                        name = f"lkfr-{self.env_name}-{rule.function.value.replace('_', '-')}-schedule"
                        event = schedule_event(name, account=self.account, region=self.region, now=now)
                        self._invoke(rule.function, event, "schedule")
                if self.progress and time.monotonic() - reported >= PROGRESS_EVERY_SECONDS:
                    reported = time.monotonic()
                    self.progress.write(
                        f"replay: simulated {now:%Y-%m-%d %H:%M} ({index / minutes:.0%}), "
                        f"{reported - started:.0f} s\n"
                    )
        self._record_notifications()
        self.result.lessons = counterfactual(
            lessons(self.events, self.config.detection.catalog()),
            self.result.out_of_rotation,
            self.world.jobs,
            self.world.livekit.deletions,
        )
        self.result.series = minute_series(self.events, self.config.detection.catalog(), first, minutes)
        return self.result

    def _invoke(self, function: FunctionName, event: dict[str, Any], trigger: str) -> None:
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
            for delivered in self.world.bus.take():
                for rule in self.rules:
                    if rule.suspect_worker and delivered["detail"].get("environment") == self.env_name:
                        self._invoke(rule.function, delivered, "suspect-worker event")

    def _record(self, function: FunctionName, trigger: str, report: dict[str, Any]) -> None:
        now = self.world.clock()
        candidates = {c["resource"]: c for c in report["candidates"]}
        summary = report.get("summary") or {}
        # A re-check during an open incident is a verdict only when it found something new.
        if function is FunctionName.TTS_REACH_ALARM and "verdict" in summary and "recheck" not in summary:
            top = next(iter(report["candidates"]), None)
            concentrated = summary["verdict"] == "concentrated"
            suspect = task_id_from_log_stream(top["resource"]) if concentrated and top else None
            self.result.verdicts.append(
                VerdictRecord(
                    now, concentrated, suspect, summary.get("p_value"), str(summary.get("reason", ""))
                )
            )
        acted = False
        for action in report["actions"]:
            if action["outcome"] != "done":
                continue
            plan = candidates.get(action["resource"], {})
            if function is FunctionName.ZOMBIE_REAPER and action["action"] == DELETE_ROOM:
                acted = True
                rule = plan.get("facts", {}).get("rule")
                reason = f"{trigger}: {plan.get('reason', action.get('reason', ''))} [{rule}]"
                self._act(function, DELETE_ROOM, action["resource"], reason)
            elif function is FunctionName.WORKER_DRAINER and (row := drainer_step(action["action"])):
                acted = True
                self._drainer_step(row, action, plan, trigger)
        if not acted and trigger != "schedule" and function is not FunctionName.TTS_REACH_ALARM:
            self.result.notes.append(NoteRecord(now, function.value, f"{trigger}: {quiet_outcome(report)}"))

    def _drainer_step(self, row: StepRow, action: dict[str, Any], plan: dict[str, Any], trigger: str) -> None:
        """One done step of the drainer on the timeline (a reap as the rooms it deleted), and the
        task's time out of rotation as the step table's ``takes_out`` says."""
        task, drainer = action["resource"], FunctionName.WORKER_DRAINER
        planned = str(plan.get("reason", "")).removeprefix(f"{row.step.value}: ")
        if row.step is Step.REAP:
            for room in plan.get("facts", {}).get("rooms_to_reap", []):
                self._act(drainer, DELETE_ROOM, room, f"{trigger}: reap first on task {task}: {planned}")
        else:
            outcome = action.get("reason", "")
            self._act(drainer, row.step.value, task, f"{trigger}: {planned} -> {outcome}")
        at, spans = self.world.clock(), self.result.out_of_rotation.setdefault(task, [])
        still_out = bool(spans) and spans[-1][1] is None
        if row.takes_out and not still_out:
            spans.append((at, None))
        elif row.step is Step.UNDO and still_out:
            spans[-1] = (spans[-1][0], at)

    def _act(self, function: FunctionName, action: str, target: str, reason: str) -> None:
        self.result.actions.append(ActionRecord(self.world.clock(), function.value, action, target, reason))

    def _record_notifications(self) -> None:
        topic = self._reaper.settings.notification_topic_arn.rsplit(":", 1)[-1]
        for sent in self.world.sent:
            self.result.actions.append(ActionRecord(sent.at, sent.function, NOTIFY, topic, sent.subject))
        self.result.actions.sort(key=lambda a: a.at)
