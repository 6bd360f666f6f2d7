"""The drainer's orchestration: trigger → incident → validation → mode → snapshot → decide →
execute → report and notify (``reporting``: one message per run, threaded under its incident)."""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from fleet_remediation.adapters.idempotency import DynamoDBOnceGuard
from fleet_remediation.contract.budgets import NOTIFICATION_BUDGET_SECONDS, REPORT_MARGIN_SECONDS
from fleet_remediation.contract.events import DRAINER_EVENT_AGES
from fleet_remediation.core.door import Door
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.invocation import decide_mode
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Mode
from worker_drainer.accounting import record_metrics, record_plan, summarize
from worker_drainer.alarm_watch import during_vad_alarm
from worker_drainer.dependencies import DrainerDependencies
from worker_drainer.events import DrainerTrigger, route_drainer_event
from worker_drainer.executor import DrainerExecutor
from worker_drainer.incidents import alarm_behind, message_incident, trigger_incident
from worker_drainer.ladder import plan_ladder
from worker_drainer.message_lines import message_lines
from worker_drainer.messages import MessageContext
from worker_drainer.plan_model import LadderPlan, Snapshot
from worker_drainer.reporting import notify
from worker_drainer.snapshot import read_snapshot
from worker_drainer.validation import ServiceIdentity

NOTHING_PLANNED = LadderPlan((), 0, 0)


def run_drainer(
    event: Any,
    report: ReportBuilder,
    deps: DrainerDependencies,
    remaining_seconds: float,
    context: LambdaContext | None = None,
) -> None:
    started = time.monotonic()
    settings = deps.settings
    report.environment = settings.environment_name
    function_arn = context.invoked_function_arn if context else None
    identity = ServiceIdentity.of(settings.ecs_cluster, function_arn)
    door = Door.for_invocation(function_arn, deps.clock(), DRAINER_EVENT_AGES)
    parsed = route_drainer_event(event, settings, door)
    report.trigger = parsed.trigger
    incident = trigger_incident(parsed, settings.environment_name, deps.clock())
    manual = parsed.manual
    # "plan" says what would happen now: it never acts, whatever dry_run says.
    manual_dry_run = None if manual is None else (manual.dry_run or manual.action == "plan")
    if isinstance(deps.once, DynamoDBOnceGuard) and context is not None:
        deps.once.register_lambda_context(context)
    snapshot: Snapshot | None = None
    plan = NOTHING_PLANNED
    try:
        if decide_mode(deps.mode_switch, manual_dry_run, report) is Mode.OFF:
            report.summary = {"skipped": "kill switch is off: nothing read, nothing changed"}
        else:
            deadline = started + remaining_seconds - REPORT_MARGIN_SECONDS - NOTIFICATION_BUDGET_SECONDS
            parsed = during_vad_alarm(parsed, deps.alarm_states, settings.environment_name, report)
            incident = trigger_incident(parsed, settings.environment_name, deps.clock())
            snapshot, plan = _decide_and_act(parsed, deps, report, deadline, identity, incident)
    except RemediationError as exc:
        report.error(exc)
    # A manual plan is answered by its report; everything else is told (a dry run as "would have").
    if manual is None or manual.action != "plan":
        thread = message_incident(parsed, incident, plan, snapshot)
        told = MessageContext(settings, identity, thread, alarm_behind(parsed))
        notify(report, message_lines(report, plan, snapshot), told, deps)


def _decide_and_act(
    parsed: DrainerTrigger,
    deps: DrainerDependencies,
    report: ReportBuilder,
    deadline: float,
    identity: ServiceIdentity,
    incident_id: str,
) -> tuple[Snapshot, LadderPlan]:
    settings = deps.settings
    snapshot, snapshot_livekit_calls = read_snapshot(parsed, deps, report, deadline, identity)
    plan = plan_ladder(snapshot, settings.drainer.policy)
    record_plan(snapshot, plan, report)
    executor = DrainerExecutor(
        ecs=deps.ecs,
        ledger=deps.ledger,
        mode_switch=deps.mode_switch,
        room_service_factory=deps.room_service_factory,
        policy=settings.drainer.policy,
        reaper_policy=settings.reaper.policy,
        cluster=settings.ecs_cluster,
        service=settings.ecs_service,
        task_scope=settings.drainer.task_action_scope,
        invocation_id=report.invocation_id or "local",
        incident_id=incident_id,
        clock=deps.clock,
        deadline=deadline,
        livekit_request_timeout_seconds=settings.drainer.livekit_request_timeout_seconds,
    )
    try:
        if report.acts:
            executor.run(plan, report)
    finally:
        livekit_calls = executor.livekit_calls + snapshot_livekit_calls
        report.summary = summarize(snapshot, plan, report, deps, livekit_calls)
        record_metrics(plan, report)
    return snapshot, plan
