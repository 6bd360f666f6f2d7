"""Replay the whole loop over exported agent logs, in simulated time: what would have happened.

    python -m tools.replay --log events.json --env prod [--config cdk.json] [--json] [--html out.html]

Minute by minute over the log, it evaluates the detection alarms as the stack defines them (the
backtest's evaluator of the environment's ``DetectionConfig``), routes every alarm transition and
schedule tick to the functions as the stack's EventBridge rules do (``stack_rules``), and runs the
functions' own service entry points (``run_reaper``, ``run_tts_reach``, ``run_drainer``: their
routers, decisions, executors and reports) with simulated dependencies. Only the clock, the log
source, LiveKit and ECS (and the AWS stores around them) are simulated; ``devkit/replay_world.py``
says how each is built from the log.

It prints a timeline (alarms, the responder's verdicts, the actions with their reasons) and a
counterfactual: the failed lessons that would have been spared. The model is conservative: a failed
lesson counts as spared only when its ``received job request`` on a worker came after that worker was
cordoned (and before any undo): LiveKit would have placed it on another worker, which the model
assumes healthy. Everything else failed as it did in the log; the log itself is replayed as recorded
(a reaped zombie's warnings keep coming, a cordoned worker keeps receiving lessons in the log), so
no action feeds back into the alarms.

Exit status: 0 when the replay ran, 2 on unreadable input (a missing or malformed log, an unknown
environment or an invalid configuration), with a one-line error.
"""

from __future__ import annotations

import os

# The functions log their reports and emit EMF metrics: not on the replay's output.
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

REPO_ROOT = Path(__file__).resolve().parent.parent
for _path in (REPO_ROOT / "layers" / "shared" / "python", REPO_ROOT / "functions", REPO_ROOT / "cdk"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from devkit.eventbridge_events import schedule_event  # noqa: E402
from devkit.fixed_mode import FixedModeSwitch  # noqa: E402
from devkit.lambda_context import LocalLambdaContext  # noqa: E402
from devkit.log_export import LogEvent, UnreadableLogError, load_events  # noqa: E402
from devkit.offline_insights import OfflineLogsInsights  # noqa: E402
from devkit.offline_worker_logs import OfflineWorkerLogs  # noqa: E402
from devkit.replay_world import (  # noqa: E402
    SentNotification,
    SimulatedAlarmStates,
    SimulatedClock,
    SimulatedEcsService,
    SimulatedEventBus,
    SimulatedLedger,
    SimulatedLiveKit,
    SimulatedNotifier,
    SimulatedOnceGuard,
    SimulatedWorkerProbe,
    jobs_from_events,
    room_service_factory,
)
from fleet_remediation.adapters.alarm_state import AlarmReading  # noqa: E402
from fleet_remediation.contract.naming import (  # noqa: E402
    ALARM_DETAIL_TYPE,
    FunctionName,
    mode_parameter_name,
    task_id_from_log_stream,
    tts_reach_alarm_name,
    vad_alarm_name,
)
from fleet_remediation.contract.settings import (  # noqa: E402
    DrainerSettings,
    ReaperSettings,
    TtsReachSettings,
    settings_for_deployment,
)
from fleet_remediation.core.errors import ConfigurationError  # noqa: E402
from fleet_remediation.core.invocation import run_reported  # noqa: E402
from fleet_remediation.core.observability import logger, metrics  # noqa: E402
from fleet_remediation.core.report import ReportBuilder  # noqa: E402
from fleet_remediation.core.report_model import Mode  # noqa: E402
from livekit_fleet_remediation.config import ConfigError, EnvironmentConfig, load_environment  # noqa: E402
from tools.backtest import MINUTE, Lesson, lessons, run_backtest  # noqa: E402
from tools.replay_page import minute_series, render_page  # noqa: E402
from tts_reach_alarm.dependencies import TtsReachDependencies  # noqa: E402
from tts_reach_alarm.service import run_tts_reach  # noqa: E402
from worker_drainer.dependencies import DrainerDependencies  # noqa: E402
from worker_drainer.service import run_drainer  # noqa: E402
from zombie_reaper.dependencies import ReaperDependencies  # noqa: E402
from zombie_reaper.service import run_reaper  # noqa: E402

SIMULATED_ACCOUNT = "000000000000"
SIMULATED_STORE = "simulated"
# The replay reports its progress on stderr when it runs longer than this (seconds between lines).
PROGRESS_EVERY_SECONDS = 5.0
ACTION_NAMES = {"reap": "delete-room", "cordon": "cordon", "stop": "stop-task", "undo": "undo"}
SIMULATED_PARTS = (
    "the clock (minute by minute)",
    "the log source (the exported events feed the alarms and answer the functions' Logs Insights queries)",
    "LiveKit (rooms from `received job request` to `process exiting`)",
    "ECS (one task per log stream, from its first line)",
    "the ledger, idempotency table, EventBridge bus and SNS topic (in memory)",
)


class UnreadableInput(Exception):
    """The log, the configuration or the environment cannot be used: exit 2 with this message."""


# --- the stack's EventBridge rules ---------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    """One EventBridge rule of the stack and the function it invokes (the infra tests check this table
    against the synthesized template)."""

    function: FunctionName
    schedule_minutes: int | None = None
    alarm: str | None = None
    states: tuple[str, ...] = ()
    suspect_worker: bool = False


def stack_rules(env_name: str, config: EnvironmentConfig) -> tuple[Rule, ...]:
    # The replay covers the environment's first agent service.
    service = config.agent_service.name
    vad, tts = vad_alarm_name(env_name, service), tts_reach_alarm_name(env_name, service)
    return (
        Rule(FunctionName.ZOMBIE_REAPER, schedule_minutes=config.reaper.schedule_minutes),
        Rule(FunctionName.ZOMBIE_REAPER, alarm=vad, states=("ALARM",)),
        Rule(FunctionName.TTS_REACH_ALARM, alarm=tts, states=("ALARM", "OK")),
        *(
            (Rule(FunctionName.TTS_REACH_ALARM, schedule_minutes=config.tts_reach.recheck_minutes),)
            if config.tts_reach.recheck_minutes
            else ()
        ),
        Rule(FunctionName.WORKER_DRAINER, schedule_minutes=config.drainer.schedule_minutes),
        Rule(FunctionName.WORKER_DRAINER, alarm=vad, states=("ALARM",)),
        Rule(FunctionName.WORKER_DRAINER, suspect_worker=True),
    )


def alarm_event(
    alarm: str, state: str, previous: str, at: datetime, *, account: str, region: str
) -> dict[str, Any]:
    """CloudWatch's state-change event, with no datapoints: the replay has none to report."""
    stamp = at.strftime("%Y-%m-%dT%H:%M:%S.000+0000")
    return {
        "version": "0",
        "id": f"replay-{alarm}-{at:%Y%m%d%H%M}",
        "detail-type": ALARM_DETAIL_TYPE,
        "source": "aws.cloudwatch",
        "account": account,
        "time": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:cloudwatch:{region}:{account}:alarm:{alarm}"],
        "detail": {
            "alarmName": alarm,
            "state": {"value": state, "reason": "replayed from exported logs", "timestamp": stamp},
            "previousState": {"value": previous, "reason": "", "timestamp": stamp},
            "configuration": {},
        },
    }


def on_schedule(rule: Rule, at: datetime) -> bool:
    """EventBridge ``rate(N minutes)``: every N minutes; the replay aligns the ticks to the clock."""
    assert rule.schedule_minutes is not None
    return int(at.timestamp() // 60) % rule.schedule_minutes == 0


# --- what the replay records -----------------------------------------------------------------------------
@dataclass(frozen=True)
class AlarmChange:
    alarm: str
    state: str
    at: datetime


@dataclass(frozen=True)
class VerdictRecord:
    at: datetime
    concentrated: bool
    suspect: str | None
    p_value: float | None
    reason: str


@dataclass(frozen=True)
class ActionRecord:
    at: datetime
    function: str
    action: str  # delete-room | cordon | stop-task | undo | notify
    target: str
    reason: str


@dataclass(frozen=True)
class NoteRecord:
    """What an alarm- or event-triggered invocation concluded when it did nothing (timeline only)."""

    at: datetime
    function: str
    text: str


@dataclass(frozen=True)
class Invocation:
    at: datetime
    function: str
    trigger: str
    report: dict[str, Any]


@dataclass(frozen=True)
class LessonsOutcome:
    total: int
    failed: list[Lesson]
    spared: list[Lesson]
    # Failed lessons that started on a worker after one of its rooms was reaped (not counted as spared).
    after_reap: list[tuple[Lesson, str, datetime]]

    @property
    def failed_after_remediation(self) -> int:
        return len(self.failed) - len(self.spared)


@dataclass
class ReplayResult:
    log: str
    env_name: str
    mode: Mode
    events: int
    streams: int
    start: datetime
    end: datetime
    alarms: list[AlarmChange] = field(default_factory=list)
    verdicts: list[VerdictRecord] = field(default_factory=list)
    actions: list[ActionRecord] = field(default_factory=list)
    notes: list[NoteRecord] = field(default_factory=list)
    invocations: list[Invocation] = field(default_factory=list)
    lessons: LessonsOutcome | None = None
    warnings: list[str] = field(default_factory=list)
    out_of_rotation: dict[str, list[tuple[datetime, datetime | None]]] = field(default_factory=dict)
    # Per-minute counts for the page (``tools.replay_page.minute_series``).
    series: dict[str, Any] = field(default_factory=dict)

    def document(self) -> dict[str, Any]:
        """The ``--json`` document."""
        assert self.lessons is not None
        return {
            "alarms": [{"alarm": a.alarm, "state": a.state, "at": _iso(a.at)} for a in self.alarms],
            "verdicts": [
                {
                    "at": _iso(v.at),
                    "concentrated": v.concentrated,
                    "suspect": v.suspect,
                    "p_value": v.p_value,
                    "reason": v.reason,
                }
                for v in self.verdicts
            ],
            "actions": [
                {
                    "at": _iso(a.at),
                    "function": a.function,
                    "action": a.action,
                    "target": a.target,
                    "reason": a.reason,
                }
                for a in self.actions
            ],
            "lessons": {
                "total": self.lessons.total,
                "failed_in_log": len(self.lessons.failed),
                "failed_after_remediation": self.lessons.failed_after_remediation,
                "spared": [lesson.job_id for lesson in self.lessons.spared],
            },
        }


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


# --- the replay ------------------------------------------------------------------------------------------
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
        self.env_name, self.config, self.mode = env_name, config, mode
        self.progress = progress
        self.rules = stack_rules(env_name, config)
        self.region, self.account = config.region, config.account or SIMULATED_ACCOUNT
        self.clock = SimulatedClock(self.events[0].at)
        self.jobs = jobs_from_events(self.events)
        self.livekit = SimulatedLiveKit(self.jobs, self.clock)
        self.ecs = SimulatedEcsService(
            self.events,
            self.clock,
            cluster=config.agent_service.ecs_cluster,
            service=config.agent_service.ecs_service,
            region=self.region,
            account=self.account,
        )
        self.ledger = SimulatedLedger()
        self.alarm_states = SimulatedAlarmStates()
        self.bus = SimulatedEventBus(self.clock, region=self.region, account=self.account)
        self.sent: list[SentNotification] = []
        self.settings = _settings(env_name, config, self.account)
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

    def _dependencies(self) -> tuple[ReaperDependencies, TtsReachDependencies, DrainerDependencies]:
        switch = FixedModeSwitch(self.mode)
        reaper_settings = self.settings[FunctionName.ZOMBIE_REAPER]
        responder_settings = self.settings[FunctionName.TTS_REACH_ALARM]
        drainer_settings = self.settings[FunctionName.WORKER_DRAINER]
        assert isinstance(reaper_settings, ReaperSettings)
        assert isinstance(responder_settings, TtsReachSettings)
        assert isinstance(drainer_settings, DrainerSettings)
        catalog = self.config.detection.catalog()
        rooms = room_service_factory(self.livekit)

        def notifier(function: FunctionName) -> SimulatedNotifier:
            return SimulatedNotifier(function.value, self.clock, self.sent)

        reaper = ReaperDependencies(
            settings=reaper_settings,
            mode_switch=switch,
            notifier=notifier(FunctionName.ZOMBIE_REAPER),
            room_service_factory=rooms,
            clock=self.clock,
        )
        responder = TtsReachDependencies(
            settings=responder_settings,
            mode_switch=switch,
            notifier=notifier(FunctionName.TTS_REACH_ALARM),
            events=self.bus,
            insights=OfflineLogsInsights(self.events, catalog),
            once=SimulatedOnceGuard(),
            clock=self.clock,
            alarm_states=self.alarm_states,
        )
        drainer = DrainerDependencies(
            settings=drainer_settings,
            mode_switch=switch,
            notifier=notifier(FunctionName.WORKER_DRAINER),
            ecs=self.ecs,
            ledger=self.ledger,
            worker_logs=OfflineWorkerLogs(self.events, catalog.slow_vad, catalog),
            worker_probe=SimulatedWorkerProbe(self.jobs, self.ecs, self.livekit),
            room_service_factory=rooms,
            alarm_states=self.alarm_states,
            clock=self.clock,
        )
        return reaper, responder, drainer

    # --- running ----------------------------------------------------------------------------------------
    def run(self) -> ReplayResult:
        backtest = run_backtest(self.events, self.config.detection)
        transitions = backtest.transitions()
        first = backtest.minutes[0].start
        minutes = len(backtest.minutes)
        started, reported = time.monotonic(), time.monotonic()
        previous = {"vad": "OK", "tts_reach": "OK"}
        service = self.config.agent_service.name
        names = {
            "vad": vad_alarm_name(self.env_name, service),
            "tts_reach": tts_reach_alarm_name(self.env_name, service),
        }
        with _function_logs_quiet():
            for index in range(1, minutes + 1):
                now = first + index * MINUTE
                self.clock.now = now
                for change in (t for t in transitions if t.at == now):
                    alarm = names[change.alarm]
                    self.result.alarms.append(AlarmChange(alarm, change.state, now))
                    self.alarm_states.readings[alarm] = AlarmReading(change.state, now)
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
        self.result.lessons = self._counterfactual()
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
        now = self.clock()
        self.result.invocations.append(Invocation(now, function.value, trigger, report))
        self._record(function, trigger, report)
        if function is FunctionName.TTS_REACH_ALARM:
            for delivered in self.bus.take():
                for rule in self.rules:
                    if rule.suspect_worker and delivered["detail"].get("environment") == self.env_name:
                        self._invoke(rule.function, delivered, "suspect-worker event")

    def _record(self, function: FunctionName, trigger: str, report: dict[str, Any]) -> None:
        now = self.clock()
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
            name = ACTION_NAMES.get(action["action"], action["action"])
            if action["outcome"] != "done" or name not in (*ACTION_NAMES.values(), "delete-room"):
                continue
            acted = True
            plan = candidates.get(action["resource"], {})
            if function is FunctionName.ZOMBIE_REAPER:
                rule = plan.get("facts", {}).get("rule")
                reason = f"{trigger}: {plan.get('reason', action.get('reason', ''))} [{rule}]"
                self._act(function, "delete-room", action["resource"], reason)
            elif action["action"] == "reap":
                planned = str(plan.get("reason", "")).removeprefix("reap: ")
                for room in plan.get("facts", {}).get("rooms_to_reap", []):
                    reason = f"{trigger}: reap first on task {action['resource']}: {planned}"
                    self._act(function, "delete-room", room, reason)
            else:
                planned = str(plan.get("reason", "")).removeprefix(f"{action['action']}: ")
                outcome = action.get("reason", "")
                self._act(function, name, action["resource"], f"{trigger}: {planned} -> {outcome}")
        if not acted and trigger != "schedule" and function is not FunctionName.TTS_REACH_ALARM:
            self.result.notes.append(NoteRecord(now, function.value, f"{trigger}: {_quiet_outcome(report)}"))

    def _act(self, function: FunctionName, action: str, target: str, reason: str) -> None:
        at = self.clock()
        self.result.actions.append(ActionRecord(at, function.value, action, target, reason))
        if action == "cordon":
            self.result.out_of_rotation.setdefault(target, []).append((at, None))
        elif action == "undo":
            spans = self.result.out_of_rotation.get(target, [])
            if spans and spans[-1][1] is None:
                spans[-1] = (spans[-1][0], at)

    def _record_notifications(self) -> None:
        topic = self._reaper.settings.notification_topic_arn.rsplit(":", 1)[-1]
        for sent in self.sent:
            self.result.actions.append(ActionRecord(sent.at, sent.function, "notify", topic, sent.subject))
        self.result.actions.sort(key=lambda a: a.at)

    # --- the counterfactual ---------------------------------------------------------------------------
    def _counterfactual(self) -> LessonsOutcome:
        found = lessons(self.events, self.config.detection.catalog())
        failed = sorted(
            (lesson for lesson in found.values() if lesson.failed),
            key=lambda lesson: lesson.started or datetime.max.replace(tzinfo=UTC),
        )

        def out_of_rotation(lesson: Lesson) -> bool:
            if lesson.started is None:
                return False
            spans = self.result.out_of_rotation.get(task_id_from_log_stream(lesson.stream), [])
            return any(
                start < lesson.started and (end is None or lesson.started < end) for start, end in spans
            )

        stream_of_room = {(job.room, job.room_id): job.stream for job in self.jobs}
        reaps = [
            (when, room, stream_of_room[(room, sid)])
            for when, room, sid in self.livekit.deletions
            if (room, sid) in stream_of_room
        ]
        after_reap = []
        for lesson in failed:
            earlier = [(room, when) for when, room, stream in reaps if stream == lesson.stream]
            if lesson.started is not None and earlier and earlier[0][1] < lesson.started:
                after_reap.append((lesson, *earlier[0]))
        return LessonsOutcome(len(found), failed, [x for x in failed if out_of_rotation(x)], after_reap)


def _quiet_outcome(report: dict[str, Any]) -> str:
    """One line saying why an invocation that was triggered by an alarm or an event did nothing."""
    if report["errors"]:
        return "; ".join(f"{e['code']}: {e['message']}" for e in report["errors"])
    summary = report.get("summary") or {}
    if "skipped" in summary:
        return str(summary["skipped"])
    if report["function"] == FunctionName.ZOMBIE_REAPER.value:
        seen, over = summary.get("rooms_seen", 0), summary.get("rooms_over_age", 0)
        return f"nothing to reap ({seen} room(s), {over} over age)"
    unknown = [c["reason"] for c in report["candidates"] if "not a RUNNING task" in c["reason"]]
    refused = [c["reason"] for c in report["candidates"] if "guardrail" in c["reason"]]
    # The worker with the most slow-inference warnings, and why it was not enough.
    slowest = max(report["candidates"], key=lambda c: c["facts"].get("warnings", 0), default=None)
    worst = (
        [f"{slowest['resource']}: {slowest['reason']}"]
        if slowest and slowest["facts"].get("warnings")
        else []
    )
    parts = [str(summary.get("fleet", "")), *worst, *unknown, *refused]
    return "no action: " + "; ".join(p for p in parts if p)


def _settings(
    env_name: str, config: EnvironmentConfig, account: str
) -> dict[FunctionName, ReaperSettings | TtsReachSettings | DrainerSettings]:
    """Each function's settings model built from the environment as the stack builds it at synth, with
    the stores the stack would create named as simulations."""
    path = f"environments.{env_name}."
    common = {
        "environment_name": env_name,
        "mode_parameter_name": mode_parameter_name(env_name),
        "notification_topic_arn": f"arn:aws:sns:{config.region}:{account}:{SIMULATED_STORE}-notifications",
        "runbook_base_url": config.runbook_base_url,
    }
    livekit = {"livekit_url": config.livekit_url, "livekit_secret_id": config.livekit_secret_name}
    # The replay covers the environment's first agent service.
    service = config.agent_service
    detection, drainer = config.detection_of(service), config.drainer_of(service)
    return {
        FunctionName.ZOMBIE_REAPER: settings_for_deployment(
            ReaperSettings,
            {**common, **livekit, "reaper": config.reaper, "agent_services": config.service_identities},
            path,
        ),
        FunctionName.TTS_REACH_ALARM: settings_for_deployment(
            TtsReachSettings,
            {
                **common,
                "aws_region": config.region,
                "agent_service": service.name,
                "agent_log_group": service.agent_log_group,
                "idempotency_table_name": SIMULATED_STORE,
                "detection": detection,
                "tts_reach": config.tts_reach_of(service),
            },
            path,
        ),
        FunctionName.WORKER_DRAINER: settings_for_deployment(
            DrainerSettings,
            {
                **common,
                **livekit,
                "reaper": config.reaper,
                "drainer": drainer,
                "signals": detection.signals,
                "tts_reach_alarm": detection.tts_reach_alarm,
                "agent_service": service.name,
                "ecs_cluster": service.ecs_cluster,
                "ecs_service": service.ecs_service,
                "ledger_table_name": SIMULATED_STORE,
                "agent_log_group": service.agent_log_group,
            },
            path,
        ),
    }


# --- input -------------------------------------------------------------------------------------------------
def load_config(path: Path, env_name: str) -> EnvironmentConfig:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        context = document.get("context", document)
    except OSError as exc:
        raise UnreadableInput(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, AttributeError) as exc:
        raise UnreadableInput(f"{path} is not a cdk.json document: {exc}") from None
    try:
        return load_environment(context, env_name)
    except ConfigError as exc:
        raise UnreadableInput(f"{path}: {exc}") from None


def replay(
    log: Path,
    env_name: str,
    config_path: Path,
    mode: Mode = Mode.ENFORCE,
    progress: TextIO | None = None,
) -> ReplayResult:
    config = load_config(config_path, env_name)
    try:
        events = load_events(log)
    except UnreadableLogError as exc:
        raise UnreadableInput(str(exc)) from None
    try:
        engine = Replay(events, env_name, config, mode, str(log), progress)
    except ConfigurationError as exc:
        raise UnreadableInput(f"{config_path}: {exc.message}") from None
    return engine.run()


# --- output ------------------------------------------------------------------------------------------------
def render_text(result: ReplayResult, out: TextIO) -> None:
    assert result.lessons is not None
    out.write(
        f"Replay of {result.log}: {result.events} events on {result.streams} log streams, "
        f"{result.start:%Y-%m-%d %H:%M}-{result.end:%H:%M} UTC; environment {result.env_name}, "
        f"kill switch {result.mode.value} (simulated)\n"
        "Real: the stack's EventBridge routing; zombie_reaper run_reaper, tts_reach_alarm run_tts_reach, "
        "worker_drainer run_drainer (their routers, decisions, executors and reports).\n"
        f"Simulated: {'; '.join(SIMULATED_PARTS)}.\n"
        "Alarm times are the end of the breaching minute; CloudWatch's own delay (1-3 min) is not included.\n"
    )
    for warning in result.warnings:
        out.write(f"warning: {warning}\n")
    counts: dict[str, int] = {}
    for invocation in result.invocations:
        counts[invocation.function] = counts.get(invocation.function, 0) + 1
    out.write(
        "Invocations: " + ", ".join(f"{name} {count}" for name, count in sorted(counts.items())) + "\n\n"
    )
    rows: list[tuple[datetime, int, str, str]] = []
    for alarm in result.alarms:
        rows.append((alarm.at, 0, alarm.state, alarm.alarm))
    for verdict in result.verdicts:
        p = "" if verdict.p_value is None else f" p={verdict.p_value:.3g}"
        suspect = f" -> suspect task {verdict.suspect}" if verdict.suspect else ""
        rows.append((verdict.at, 1, "tts_reach_alarm", f"verdict{p}: {verdict.reason}{suspect}"))
    for action in result.actions:
        text = f"{action.action} {action.target}: {action.reason}"
        rows.append((action.at, 2 if action.action != "notify" else 3, action.function, text))
    for note in result.notes:
        rows.append((note.at, 2, note.function, note.text))
    for at, _, who, text in sorted(rows, key=lambda row: (row[0], row[1])):
        out.write(f"{at:%H:%M}  {who:<16} {text}\n")
    outcome = result.lessons
    out.write(
        f"\nSessions: {outcome.total} jobs; {len(outcome.failed)} failed in the log (responses, no first "
        f"audio); {outcome.failed_after_remediation} would still have failed; {len(outcome.spared)} spared.\n"
        "Model: a failed session is spared only when its job request reached its worker after that worker "
        "was cordoned (LiveKit would have placed it on another, healthy worker); every other failed session "
        "still fails.\n"
    )
    for lesson in outcome.spared:
        spans = result.out_of_rotation.get(task_id_from_log_stream(lesson.stream), [])
        cordoned = min(start for start, _ in spans)
        started = lesson.started
        assert started is not None
        out.write(
            f"  spared {lesson.job_id} ({lesson.room}): started {started:%H:%M:%S} on "
            f"{task_id_from_log_stream(lesson.stream)}, cordoned {cordoned:%H:%M}\n"
        )
    if outcome.after_reap:
        lesson, room, when = outcome.after_reap[0]
        worker = task_id_from_log_stream(lesson.stream)
        out.write(
            f"Not counted: {len(outcome.after_reap)} failed session(s) started on a worker after one of its "
            f"rooms was reaped (first: {room} at {when:%H:%M} on {worker}); a reap that cures the worker "
            "would have spared them too, but the model does not assume it.\n"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--log", type=Path, required=True, help="exported events (JSON lines or document)")
    parser.add_argument("--env", required=True, help="environment name in cdk.json")
    parser.add_argument(
        "--config",
        type=Path,
        default=REPO_ROOT / "environments.json",
        help="environments file or cdk.json (default: the repo's environments.json)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the timeline")
    parser.add_argument(
        "--html", type=Path, help="also write a self-contained HTML page of the incident here"
    )
    parser.add_argument(
        "--mode",
        choices=[Mode.ENFORCE.value, Mode.DRY_RUN.value],
        default=Mode.ENFORCE.value,
        help="the simulated kill switch (default enforce: what the functions would have done)",
    )
    args = parser.parse_args(argv)
    try:
        result = replay(args.log, args.env, args.config, Mode(args.mode), progress=sys.stderr)
    except UnreadableInput as exc:
        sys.stderr.write(f"replay: error: {exc}\n")
        return 2
    if args.html:
        args.html.write_text(render_page(result), encoding="utf-8")
    if args.json:
        json.dump(result.document(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render_text(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
