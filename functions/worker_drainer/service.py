"""The drainer's orchestration: trigger → mode → snapshot → attribute → decide → execute → report."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from aws_lambda_powertools.metrics import MetricUnit
from pydantic import model_validator

from fleet_remediation.config import join_url, settings_from_environment
from fleet_remediation.detection import vad_alarm_name
from fleet_remediation.drainer_policy import DrainerSettings
from fleet_remediation.ecs_tasks import BotoEcsTasks, EcsTask, EcsTaskService, task_id_of
from fleet_remediation.errors import InvalidEventError, RemediationError, UnknownAlarmError
from fleet_remediation.invocation import decide_mode
from fleet_remediation.ledger import DynamoLedger, Ledger
from fleet_remediation.livekit_rooms import LiveRoom, RoomService, room_service_factory
from fleet_remediation.logs_insights import CloudWatchLogsInsights
from fleet_remediation.mode import ModeSwitch, SsmModeSwitch
from fleet_remediation.notifier import Notifier, SnsNotifier
from fleet_remediation.observability import metrics
from fleet_remediation.reaping import RoomDecision
from fleet_remediation.reaping import decide as decide_rooms
from fleet_remediation.report import Decision, Mode, Outcome, ReportBuilder, Trigger, TriggerKind
from fleet_remediation.signals import SignalCatalog
from fleet_remediation.suspect_worker import SuspectWorkerDetail
from fleet_remediation.triggers import (
    ALARM_DETAIL_TYPE,
    SCHEDULE_DETAIL_TYPE,
    SUSPECT_WORKER_DETAIL_TYPE,
    AlarmStateChange,
    ManualEvent,
    alarm_trigger,
    is_eventbridge,
    manual_trigger,
    parse_detail,
    parse_eventbridge,
    parse_manual,
    schedule_trigger,
)
from worker_drainer.attribution import FleetAssessment, assess_fleet, log_stream_for
from worker_drainer.executor import STEP_BUDGET_SECONDS, DrainerExecutor
from worker_drainer.ladder import LadderPlan, ManualRequest, Snapshot, State, Step, decide, state_of
from worker_drainer.stats import InsightsWorkerLogs, JobSighting, WorkerLogs
from worker_drainer.worker_probe import HttpWorkerProbe, WorkerProbe

RUNBOOK_PATH = "docs/runbooks/worker-drainer.md"
SAFETY_MARGIN_SECONDS = 3.0
# How far back to look for a task's "received job request" lines when its start time is unknown.
JOB_LOOKBACK = timedelta(hours=6)


class DrainerManualEvent(ManualEvent):
    action: Literal["plan", "drain", "undrain"] = "plan"
    task: str | None = None

    @model_validator(mode="after")
    def _task_for_drain(self) -> DrainerManualEvent:
        if self.action != "plan" and not self.task:
            raise ValueError(f"action '{self.action}' needs 'task' (a task id or ARN)")
        if self.action == "plan" and self.task:
            raise ValueError("action 'plan' takes no 'task'")
        return self


@dataclass(frozen=True)
class ParsedTrigger:
    trigger: Trigger
    start_new: bool
    manual: DrainerManualEvent | None = None
    suspect: SuspectWorkerDetail | None = None


@dataclass
class DrainerDependencies:
    settings: DrainerSettings
    mode_switch: ModeSwitch
    notifier: Notifier
    ecs: EcsTaskService
    ledger: Ledger
    worker_logs: WorkerLogs
    worker_probe: WorkerProbe
    room_service_factory: Callable[[], RoomService]
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    @classmethod
    def from_environment(cls) -> DrainerDependencies:
        settings = settings_from_environment(DrainerSettings)

        policy = settings.drainer_policy
        return cls(
            settings=settings,
            mode_switch=SsmModeSwitch(settings.mode_parameter_name),
            notifier=SnsNotifier(settings.notification_topic_arn),
            ecs=BotoEcsTasks(
                settings.ecs_cluster,
                settings.ecs_service,
                request_timeout_seconds=settings.ecs_request_timeout_seconds,
            ),
            ledger=DynamoLedger(settings.ledger_table_name, settings.ecs_service),
            worker_logs=InsightsWorkerLogs(
                CloudWatchLogsInsights(), settings.agent_log_group, SignalCatalog.default().slow_vad
            ),
            worker_probe=HttpWorkerProbe(policy.worker_http_port, policy.worker_http_timeout_seconds),
            room_service_factory=room_service_factory(
                str(settings.livekit_url),
                settings.livekit_secret_id,
                settings.livekit_request_timeout_seconds,
            ),
        )


def parse_drainer_event(event: Any, environment_name: str) -> ParsedTrigger:
    if not is_eventbridge(event):
        manual = parse_manual(event, DrainerManualEvent)
        return ParsedTrigger(manual_trigger(manual), start_new=manual.action == "plan", manual=manual)
    envelope = parse_eventbridge(event)
    if envelope.detail_type == SCHEDULE_DETAIL_TYPE:
        return ParsedTrigger(schedule_trigger(envelope), start_new=False)
    if envelope.detail_type == ALARM_DETAIL_TYPE:
        change = parse_detail(envelope, AlarmStateChange)
        expected = vad_alarm_name(environment_name)
        if change.alarm_name != expected:
            raise UnknownAlarmError(
                f"the worker drainer handles only {expected}, not {change.alarm_name}",
                resource=change.alarm_name,
            )
        # OK and INSUFFICIENT_DATA still advance existing ladders; only ALARM starts new ones.
        return ParsedTrigger(alarm_trigger(change), start_new=change.state.value == "ALARM")
    if envelope.detail_type == SUSPECT_WORKER_DETAIL_TYPE:
        suspect = parse_detail(envelope, SuspectWorkerDetail)
        trigger = Trigger(
            kind=TriggerKind.SUSPECT_WORKER,
            source=suspect.alarm_name,
            detail={"log_stream": suspect.log_stream, "task_id": suspect.task_id, "p_value": suspect.p_value},
        )
        return ParsedTrigger(trigger, start_new=True, suspect=suspect)
    raise InvalidEventError(f"the worker drainer does not handle '{envelope.detail_type}' events")


def run_drainer(
    event: Any, report: ReportBuilder, deps: DrainerDependencies, remaining_seconds: float
) -> None:
    started = time.monotonic()
    settings = deps.settings
    report.environment = settings.environment_name
    parsed = parse_drainer_event(event, settings.environment_name)
    report.trigger = parsed.trigger
    manual = parsed.manual
    # "plan" says what would happen now: it never acts, whatever dry_run says.
    manual_dry_run = None if manual is None else (manual.dry_run or manual.action == "plan")
    mode = decide_mode(deps.mode_switch, manual_dry_run, report)
    if mode is Mode.OFF:
        report.summary = {"skipped": "kill switch is off: nothing read, nothing changed"}
        return
    deadline = started + remaining_seconds - SAFETY_MARGIN_SECONDS
    snapshot, snapshot_livekit_calls = _snapshot(parsed, deps, report, deadline)
    plan = decide(snapshot, settings.drainer_policy)
    _record(snapshot, plan, report)
    _record_unknown_suspect(parsed, snapshot, settings.ecs_service, report)
    if snapshot.fleet is not None and snapshot.fleet.fleet_wide and parsed.start_new:
        _notify_fleet_wide(snapshot.fleet, report, deps)
    executor = DrainerExecutor(
        ecs=deps.ecs,
        ledger=deps.ledger,
        mode_switch=deps.mode_switch,
        room_service_factory=deps.room_service_factory,
        policy=settings.drainer_policy,
        reaper_policy=settings.reaper_policy,
        service=settings.ecs_service,
        invocation_id=report.invocation_id or "local",
        clock=deps.clock,
        deadline=deadline,
        livekit_request_timeout_seconds=settings.livekit_request_timeout_seconds,
    )
    try:
        if report.acts:
            executor.run(plan, report)
    finally:
        livekit_calls = executor.livekit_calls + snapshot_livekit_calls
        report.summary = _summary(snapshot, plan, report, deps, livekit_calls)
        _record_metrics(plan, report)
    if any(a.outcome in (Outcome.DONE, Outcome.FAILED) for a in report.actions):
        _notify_actions(report, deps)


def _record_unknown_suspect(
    parsed: ParsedTrigger, snapshot: Snapshot, service: str, report: ReportBuilder
) -> None:
    """A suspect worker that is not a running task of the service is reported, not silently dropped."""
    suspect = parsed.suspect
    if suspect is not None and suspect.task_id not in {t.task_id for t in snapshot.tasks}:
        report.candidate(
            suspect.task_id,
            Decision.SKIP,
            f"suspect worker is not a RUNNING task of service {service} (already stopped, or elsewhere)",
            log_stream=suspect.log_stream,
            p_value=suspect.p_value,
        )


def _needs_logs(parsed: ParsedTrigger, tasks: Sequence[EcsTask]) -> bool:
    return parsed.start_new or any(state_of(t) is not State.HEALTHY for t in tasks)


def _snapshot(
    parsed: ParsedTrigger, deps: DrainerDependencies, report: ReportBuilder, deadline: float
) -> tuple[Snapshot, int]:
    """Everything the decision needs, and how many LiveKit calls reading it took."""
    settings = deps.settings
    policy = settings.drainer_policy
    now = deps.clock()
    tasks = deps.ecs.running_tasks()
    streams = {
        log_stream_for(t.task_id, settings.agent_log_stream_prefix, settings.agent_container_name): t.task_id
        for t in tasks
    }
    fleet: FleetAssessment | None = None
    manual = parsed.manual
    if _needs_logs(parsed, tasks):
        query_deadline = min(
            deadline - STEP_BUDGET_SECONDS, time.monotonic() + settings.insights_timeout_seconds
        )
        stats = deps.worker_logs.worker_stats(
            now - timedelta(minutes=policy.window_minutes), now, query_deadline
        )
        fleet = assess_fleet(stats, streams, [t.task_id for t in tasks], policy)
        if parsed.suspect is not None:
            fleet = _with_suspect(fleet, parsed.suspect)
    by_id = {t.task_id: t for t in tasks}
    candidates = [
        by_id[w.task_id]
        for w in (fleet.degraded if fleet and parsed.start_new else ())
        if state_of(by_id[w.task_id]) is State.HEALTHY
    ]
    draining = [t for t in tasks if state_of(t) is State.DRAINING]
    active_jobs = {t.task_id: deps.worker_probe.active_jobs(t) for t in draining}
    unreachable = [t for t in draining if active_jobs[t.task_id] is None]
    rooms_to_reap: dict[str, Sequence[RoomDecision] | None] = {}
    livekit_calls = 0
    if candidates or unreachable:
        jobs_by_task = _job_sightings(candidates + unreachable, streams, deps, now, deadline)
        live, livekit_calls = _live_rooms(deps, report)
        for task in candidates:
            mine = _rooms_of(jobs_by_task.get(task.task_id, []), live)
            rooms_to_reap[task.task_id] = (
                None if mine is None else decide_rooms(mine, settings.reaper_policy, now).to_reap
            )
        for task in unreachable:
            mine = _rooms_of(jobs_by_task.get(task.task_id, []), live)
            active_jobs[task.task_id] = None if mine is None else len(mine)
    snapshot = Snapshot(
        now=now,
        tasks=tasks,
        fleet=fleet,
        rooms_to_reap=rooms_to_reap,
        active_jobs=active_jobs,
        capacity_debts=deps.ledger.capacity_debts(),
        start_new=parsed.start_new,
        manual=ManualRequest(manual.action, task_id_of(manual.task) if manual.task else None)
        if manual
        else None,
    )
    return snapshot, livekit_calls


def _with_suspect(fleet: FleetAssessment, suspect: SuspectWorkerDetail) -> FleetAssessment:
    """tts_reach_alarm found the failing rooms concentrated on this worker: that is attribution
    enough, unless the slowness is fleet-wide."""
    if fleet.fleet_wide:
        return fleet
    workers = tuple(
        dataclasses.replace(
            w,
            degraded=True,
            reason=f"suspect worker ({suspect.alarm_name}, p={suspect.p_value:.4f}); {w.reason}",
        )
        if w.task_id == suspect.task_id
        else w
        for w in fleet.workers
    )
    return dataclasses.replace(fleet, workers=workers)


def _job_sightings(
    tasks: Sequence[EcsTask],
    streams: dict[str, str],
    deps: DrainerDependencies,
    now: datetime,
    deadline: float,
) -> dict[str, list[JobSighting]]:
    wanted = {task.task_id for task in tasks}
    names = [stream for stream, task_id in streams.items() if task_id in wanted]
    starts = [task.started_at for task in tasks if task.started_at is not None]
    since = min(starts) if len(starts) == len(tasks) else now - JOB_LOOKBACK
    query_deadline = min(
        deadline - STEP_BUDGET_SECONDS, time.monotonic() + deps.settings.insights_timeout_seconds
    )
    found: dict[str, list[JobSighting]] = {}
    for sighting in deps.worker_logs.job_sightings(names, since, now, query_deadline):
        found.setdefault(streams[sighting.log_stream], []).append(sighting)
    return found


def _live_rooms(deps: DrainerDependencies, report: ReportBuilder) -> tuple[dict[str, LiveRoom] | None, int]:
    calls = 0

    async def list_all() -> list[LiveRoom]:
        nonlocal calls
        # Created inside the loop: the LiveKit client binds its HTTP session to the running loop.
        rooms = deps.room_service_factory()
        try:
            return await rooms.list_rooms()
        finally:
            calls = int(getattr(rooms, "calls", 0))
            await rooms.aclose()

    try:
        live: dict[str, LiveRoom] | None = {room.name: room for room in asyncio.run(list_all())}
    except RemediationError as exc:
        # Without LiveKit the drainer still cordons; it cannot reap or count jobs from rooms.
        report.error(exc)
        live = None
    return live, calls


def _rooms_of(sightings: list[JobSighting], live: dict[str, LiveRoom] | None) -> list[LiveRoom] | None:
    """The live rooms this worker's jobs are in (the same room sid as the job request saw)."""
    if live is None:
        return None
    rooms: dict[str, LiveRoom] = {}
    for sighting in sightings:
        room = live.get(sighting.room)
        if room is not None and (not sighting.room_id or room.sid == sighting.room_id):
            rooms[room.name] = room
    return list(rooms.values())


def _record(snapshot: Snapshot, plan: LadderPlan, report: ReportBuilder) -> None:
    steps = {s.task_id: s for s in plan.steps}
    assessed = {w.task_id: w for w in snapshot.fleet.workers} if snapshot.fleet else {}
    for task in snapshot.tasks:
        step = steps.get(task.task_id)
        worker = assessed.get(task.task_id)
        facts: dict[str, Any] = {"state": state_of(task).value, "task_arn": task.arn}
        if worker is not None:
            facts |= {"pattern": worker.pattern.value, "rate_per_minute": round(worker.rate_per_minute, 3)}
            if worker.stats is not None:
                facts |= {"warnings": worker.stats.warnings, "max_delay": worker.stats.max_delay}
        if task.task_id in snapshot.active_jobs:
            facts["active_jobs"] = snapshot.active_jobs[task.task_id]
        if step is None:
            report.candidate(
                task.task_id, Decision.SKIP, worker.reason if worker else "no ladder step", **facts
            )
            continue
        if step.rooms:
            facts["rooms_to_reap"] = [d.room.name for d in step.rooms]
        acting = step.step not in (Step.WAIT, Step.SKIP)
        decision = report.planned() if acting else Decision.SKIP
        report.candidate(task.task_id, decision, f"{step.step.value}: {step.reason}", **facts)
    for step in plan.steps:
        if step.task_id not in {t.task_id for t in snapshot.tasks}:
            decision = report.planned() if step.step is Step.REVERT_CAPACITY else Decision.SKIP
            report.candidate(
                step.task_id, decision, f"{step.step.value}: {step.reason}", task_arn=step.task_arn
            )


def _summary(
    snapshot: Snapshot, plan: LadderPlan, report: ReportBuilder, deps: DrainerDependencies, livekit_calls: int
) -> dict[str, Any]:
    fleet = snapshot.fleet
    return {
        "tasks_running": len(snapshot.tasks),
        "draining_after_plan": plan.draining,
        "healthy_after_plan": plan.healthy_running,
        "fleet_wide": bool(fleet and fleet.fleet_wide),
        "fleet": fleet.reason if fleet else "not assessed (no ladder in progress, no alarm)",
        "unattributed_log_streams": list(fleet.unattributed_streams) if fleet else [],
        "steps": {
            s.value: sum(p.step is s for p in plan.steps)
            for s in Step
            if any(p.step is s for p in plan.steps)
        },
        "done": sum(a.outcome is Outcome.DONE for a in report.actions),
        "failed": sum(a.outcome is Outcome.FAILED for a in report.actions),
        "calls": {
            "ecs": deps.ecs.calls,
            "dynamodb": deps.ledger.calls,
            "logs_insights_queries": deps.worker_logs.calls,
            "worker_http": deps.worker_probe.calls,
            "livekit": livekit_calls,
        },
    }


def _record_metrics(plan: LadderPlan, report: ReportBuilder) -> None:
    count = MetricUnit.Count
    metrics.add_metric(name="DrainerTasksDraining", unit=count, value=plan.draining)
    for step in (Step.REAP, Step.CORDON, Step.STOP, Step.UNDO, Step.REVERT_CAPACITY):
        planned = sum(p.step is step for p in plan.steps)
        done = sum(a.action == step.value and a.outcome is Outcome.DONE for a in report.actions)
        metrics.add_metric(
            name=f"Drainer{step.name.title().replace('_', '')}Planned", unit=count, value=planned
        )
        metrics.add_metric(name=f"Drainer{step.name.title().replace('_', '')}Done", unit=count, value=done)
    metrics.add_metric(
        name="DrainerGuardrailRefusals",
        unit=count,
        value=sum(s.reason.startswith("guardrail") for s in plan.steps),
    )


def _notify_fleet_wide(fleet: FleetAssessment, report: ReportBuilder, deps: DrainerDependencies) -> None:
    settings = deps.settings
    subject = f"[{settings.environment_name}] worker drainer: fleet-wide slow inference, nothing drained"
    slow = [w for w in fleet.workers if w.pattern.elevated]
    lines = [
        subject,
        "",
        fleet.reason,
        "Every worker is slow: suspect shared causes (host contention, CPU credits, a provider outage).",
        "",
        *(f"  - {w.task_id}: {w.reason}" for w in slow),
        "",
        f"Runbook: {join_url(settings.runbook_base_url, RUNBOOK_PATH)}",
    ]
    report.notifications.append(
        deps.notifier.publish(subject, "\n".join(lines), {"environment": settings.environment_name})
    )


def _notify_actions(report: ReportBuilder, deps: DrainerDependencies) -> None:
    settings = deps.settings
    done = [a for a in report.actions if a.outcome is Outcome.DONE]
    failed = [a for a in report.actions if a.outcome is Outcome.FAILED]
    subject = (
        f"[{settings.environment_name}] worker drainer: {len(done)} action(s) done, {len(failed)} failed"
    )
    lines = [
        subject,
        "",
        f"Mode: {report.mode.value if report.mode else '?'}   Invocation: {report.invocation_id}",
    ]
    lines += [f"  - {a.action} {a.resource}: {a.outcome.value} ({a.reason})" for a in report.actions]
    lines += ["", f"Runbook: {join_url(settings.runbook_base_url, RUNBOOK_PATH)}"]
    try:
        report.notifications.append(
            deps.notifier.publish(subject, "\n".join(lines), {"environment": settings.environment_name})
        )
    except RemediationError as exc:
        report.error(exc)
