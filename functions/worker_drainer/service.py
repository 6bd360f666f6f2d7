"""The drainer's orchestration: trigger → validation → mode → snapshot → decide → execute →
report and notify."""

from __future__ import annotations

import time
from typing import Any

from fleet_remediation.contract.budgets import REPORT_MARGIN_SECONDS
from fleet_remediation.contract.naming import tts_reach_alarm_name
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.invocation import decide_mode
from fleet_remediation.core.report import Mode, ReportBuilder
from worker_drainer.accounting import record_metrics, record_plan, summarize
from worker_drainer.dependencies import DrainerDependencies
from worker_drainer.events import DrainerTrigger, route_drainer_event
from worker_drainer.executor import DrainerExecutor
from worker_drainer.ladder import plan_ladder
from worker_drainer.plan_model import LadderPlan, Snapshot
from worker_drainer.reporting import notify
from worker_drainer.snapshot import read_snapshot
from worker_drainer.validation import ServiceIdentity, SuspectExpectations, validate_suspect

NOTHING_PLANNED = LadderPlan((), 0, 0)


def _validate(parsed: DrainerTrigger, deps: DrainerDependencies) -> None:
    """What can be checked before reading anything: a suspect-worker event is ours and fresh."""
    settings = deps.settings
    if parsed.suspect is not None:
        expect = SuspectExpectations(
            environment=settings.environment_name,
            alarm_name=tts_reach_alarm_name(settings.environment_name),
            alpha=settings.tts_reach_alarm.concentration_alpha,
            log_stream_for=settings.log_stream_for,
        )
        validate_suspect(parsed.suspect, expect, deps.clock())


def run_drainer(
    event: Any,
    report: ReportBuilder,
    deps: DrainerDependencies,
    remaining_seconds: float,
    function_arn: str | None = None,
) -> None:
    started = time.monotonic()
    settings = deps.settings
    report.environment = settings.environment_name
    identity = ServiceIdentity.of(settings.ecs_cluster, function_arn)
    parsed = route_drainer_event(event, settings.environment_name)
    report.trigger = parsed.trigger
    manual = parsed.manual
    # "plan" says what would happen now: it never acts, whatever dry_run says.
    manual_dry_run = None if manual is None else (manual.dry_run or manual.action == "plan")
    snapshot: Snapshot | None = None
    plan = NOTHING_PLANNED
    try:
        _validate(parsed, deps)
        if decide_mode(deps.mode_switch, manual_dry_run, report) is Mode.OFF:
            report.summary = {"skipped": "kill switch is off: nothing read, nothing changed"}
            return
        deadline = started + remaining_seconds - REPORT_MARGIN_SECONDS
        snapshot, plan = _decide_and_act(parsed, deps, report, deadline, identity)
    except RemediationError as exc:
        report.error(exc)
    # A manual plan is answered by its report; everything else is told (a dry run as "would have").
    if manual is None or manual.action != "plan":
        notify(report, plan, snapshot, deps, identity)


def _decide_and_act(
    parsed: DrainerTrigger,
    deps: DrainerDependencies,
    report: ReportBuilder,
    deadline: float,
    identity: ServiceIdentity,
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
        service=settings.ecs_service,
        invocation_id=report.invocation_id or "local",
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
