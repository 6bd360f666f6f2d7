"""The drainer's orchestration: trigger → mode → snapshot → attribute → decide → execute → report."""

from __future__ import annotations

import time
from typing import Any

from fleet_remediation.contract.budgets import REPORT_MARGIN_SECONDS
from fleet_remediation.core.invocation import decide_mode
from fleet_remediation.core.report import Mode, Outcome, ReportBuilder
from worker_drainer.dependencies import DrainerDependencies
from worker_drainer.events import route_drainer_event
from worker_drainer.executor import DrainerExecutor
from worker_drainer.ladder import plan_ladder
from worker_drainer.reporting import (
    notify_actions,
    notify_fleet_wide,
    record_metrics,
    record_plan,
    record_unknown_suspect,
    summarize,
)
from worker_drainer.snapshot import read_snapshot


def run_drainer(
    event: Any, report: ReportBuilder, deps: DrainerDependencies, remaining_seconds: float
) -> None:
    started = time.monotonic()
    settings = deps.settings
    report.environment = settings.environment_name
    parsed = route_drainer_event(event, settings.environment_name)
    report.trigger = parsed.trigger
    manual = parsed.manual
    # "plan" says what would happen now: it never acts, whatever dry_run says.
    manual_dry_run = None if manual is None else (manual.dry_run or manual.action == "plan")
    mode = decide_mode(deps.mode_switch, manual_dry_run, report)
    if mode is Mode.OFF:
        report.summary = {"skipped": "kill switch is off: nothing read, nothing changed"}
        return
    deadline = started + remaining_seconds - REPORT_MARGIN_SECONDS
    snapshot, snapshot_livekit_calls = read_snapshot(parsed, deps, report, deadline)
    plan = plan_ladder(snapshot, settings.drainer.policy)
    record_plan(snapshot, plan, report)
    record_unknown_suspect(parsed, snapshot, settings.ecs_service, report)
    if snapshot.fleet is not None and snapshot.fleet.fleet_wide and parsed.start_new:
        notify_fleet_wide(snapshot.fleet, report, deps)
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
    if any(a.outcome in (Outcome.DONE, Outcome.FAILED) for a in report.actions):
        notify_actions(report, deps)
