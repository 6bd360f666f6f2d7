"""The reaper's orchestration: trigger → mode → snapshot → decide → execute → report and notify."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from pydantic import Field, StrictInt

from fleet_remediation.adapters.aws_clients import aws_client, ssm_provider
from fleet_remediation.adapters.livekit_rooms import RoomService, room_service_factory
from fleet_remediation.adapters.notifier import Notifier, SnsNotifier
from fleet_remediation.contract.budgets import (
    NOTIFICATION_BUDGET_SECONDS,
    NOTIFICATION_PUBLISH,
    REPORT_MARGIN_SECONDS,
)
from fleet_remediation.contract.naming import FunctionName, vad_alarm_name
from fleet_remediation.contract.policies import MIN_MANUAL_MAX_AGE_SECONDS
from fleet_remediation.contract.settings import ReaperSettings, settings_from_environment
from fleet_remediation.core.errors import InvalidEventError
from fleet_remediation.core.invocation import decide_mode
from fleet_remediation.core.kill_switch import ModeSwitch, SsmModeSwitch
from fleet_remediation.core.observability import metrics
from fleet_remediation.core.report import Decision, Mode, Outcome, ReportBuilder
from fleet_remediation.core.routing import AlarmRoute, ManualEvent, ManualRoute, Router, ScheduleRoute
from fleet_remediation.domain.reaping import (
    DELETE,
    WARN,
    ReapExecutor,
    ReapPlan,
    ReapResult,
    Verdict,
    plan_reap,
)


class ReaperManualEvent(ManualEvent):
    max_age_seconds: StrictInt | None = Field(
        default=None,
        ge=MIN_MANUAL_MAX_AGE_SECONDS,
        description="Stricter max age for this run (a JSON integer, at least a minute).",
    )


@dataclass
class ReaperDependencies:
    settings: ReaperSettings
    mode_switch: ModeSwitch
    notifier: Notifier
    room_service_factory: Callable[[], RoomService]
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    @classmethod
    def from_environment(cls) -> ReaperDependencies:
        settings = settings_from_environment(ReaperSettings)

        return cls(
            settings=settings,
            mode_switch=SsmModeSwitch(settings.mode_parameter_name, provider=ssm_provider()),
            notifier=SnsNotifier(settings.notification_topic_arn, client=aws_client(NOTIFICATION_PUBLISH)),
            room_service_factory=room_service_factory(
                str(settings.livekit_url),
                settings.livekit_secret_id,
                settings.reaper.livekit_request_timeout_seconds,
            ),
        )


def reaper_router(environment_name: str) -> Router[ReaperManualEvent]:
    """The schedule, the VAD alarm (a starving worker is often a zombie's doing), or a manual invoke."""
    return Router(
        "the reaper",
        [ScheduleRoute(), AlarmRoute({vad_alarm_name(environment_name)}), ManualRoute(ReaperManualEvent)],
    )


def run_reaper(event: Any, report: ReportBuilder, deps: ReaperDependencies, remaining_seconds: float) -> None:
    started = time.monotonic()
    report.environment = deps.settings.environment_name
    routed = reaper_router(deps.settings.environment_name).route(event)
    report.trigger, manual = routed.trigger, routed.manual
    if routed.alarm is not None and routed.alarm.state.value != "ALARM":
        report.summary = {"skipped": f"alarm state {routed.alarm.state.value}: nothing to reap on recovery"}
        return
    policy = deps.settings.reaper.policy
    override = manual.max_age_seconds if manual else None
    if override is not None and override >= policy.max_age_minutes * 60:
        raise InvalidEventError(
            f"max_age_seconds={override} must be stricter than the configured "
            f"{policy.max_age_minutes * 60}s (max_age_minutes={policy.max_age_minutes})"
        )
    mode = decide_mode(deps.mode_switch, manual.dry_run if manual else None, report)
    if mode is Mode.OFF:
        report.summary = {"skipped": "kill switch is off: nothing read, nothing changed"}
        return
    # The notification and the report keep their time whatever the rooms take.
    deadline = started + remaining_seconds - REPORT_MARGIN_SECONDS - NOTIFICATION_BUDGET_SECONDS
    asyncio.run(_reap(report, deps, override, deadline))


async def _reap(
    report: ReportBuilder, deps: ReaperDependencies, override: int | None, deadline: float
) -> None:
    settings = deps.settings
    # Created inside the event loop: the LiveKit client's HTTP session binds to the running loop.
    rooms = deps.room_service_factory()
    try:
        snapshot = await rooms.list_rooms()
        policy = settings.reaper.policy
        now = deps.clock()
        plan = plan_reap(
            snapshot,
            policy,
            now,
            max_age_override_seconds=override,
            live_room_grace_seconds=policy.live_room_grace_seconds,
        )
        _record_plan(plan, report)
        results: list[ReapResult] = []
        if report.acts and plan.to_act:
            # The executor journals each step in the report (intent before, outcome after).
            executor = ReapExecutor(
                rooms=rooms,
                concurrency=policy.delete_concurrency,
                deadline=deadline,
                request_timeout_seconds=settings.reaper.livekit_request_timeout_seconds,
                journal=report,
                live_room_grace_seconds=policy.live_room_grace_seconds,
                now=now,
            )
            results = await executor.run(plan.to_act)
        _record_metrics(len(snapshot), plan, results)
        deletes = [r for r in results if r.action == DELETE]
        warnings = [r for r in results if r.action == WARN]
        report.summary = {
            "rooms_seen": len(snapshot),
            "rooms_over_age": len(plan.to_act)
            + plan.trimmed
            + sum(d.verdict is Verdict.IN_GRACE for d in plan.decisions),
            "to_reap": len(plan.to_reap),
            "to_warn": len(plan.to_warn),
            "trimmed_by_cap": plan.trimmed,
            "reaped": _count(deletes, Outcome.DONE),
            "already_gone": _count(deletes, Outcome.ALREADY_DONE),
            "failed": _count(deletes, Outcome.FAILED),
            "unknown": _count(deletes, Outcome.UNKNOWN),
            "warned": _count(warnings, Outcome.DONE),
            "warnings_failed": _count(warnings, Outcome.FAILED),
            "livekit_calls": getattr(rooms, "calls", None),
        }
        if any(r.outcome in NOTIFIED_OUTCOMES for r in results):
            _notify(results, report, deps)
    finally:
        await rooms.aclose()


# Outcomes an on-call person hears of: whatever changed a room or may have, or should have and failed.
NOTIFIED_OUTCOMES = frozenset({Outcome.DONE, Outcome.FAILED, Outcome.UNKNOWN})


def _count(results: list[ReapResult], outcome: Outcome) -> int:
    return sum(r.outcome is outcome for r in results)


def _record_plan(plan: ReapPlan, report: ReportBuilder) -> None:
    for d in plan.decisions:
        if d.acts:
            decision = report.planned()
        elif report.lists_skip(d.verdict.value):
            decision = Decision.SKIP
        else:
            # Most of a large fleet: counted by verdict, nothing built.
            report.count_skip(d.verdict.value)
            continue
        report.candidate(
            d.room.name,
            decision,
            f"{d.verdict.value}: {d.reason}",
            sid=d.room.sid,
            age_seconds=None if d.age_seconds is None else round(d.age_seconds, 1),
            max_age_seconds=d.max_age_seconds,
            rule=d.rule,
            participants=d.room.num_participants,
        )


def _record_metrics(seen: int, plan: ReapPlan, results: list[ReapResult]) -> None:
    count = MetricUnit.Count
    metrics.add_metric(name="RoomsSeen", unit=count, value=seen)
    metrics.add_metric(name="RoomsOverAge", unit=count, value=len(plan.to_act) + plan.trimmed)
    deletes = [r for r in results if r.action == DELETE]
    metrics.add_metric(name="RoomsReaped", unit=count, value=_count(deletes, Outcome.DONE))
    metrics.add_metric(name="RoomReapFailures", unit=count, value=_count(deletes, Outcome.FAILED))
    metrics.add_metric(name="RoomReapsUnknown", unit=count, value=_count(deletes, Outcome.UNKNOWN))
    metrics.add_metric(
        name="RoomsWarned", unit=count, value=_count([r for r in results if r.action == WARN], Outcome.DONE)
    )
    metrics.add_metric(name="RoomsTrimmedByCap", unit=count, value=plan.trimmed)


def format_age(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, _ = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m"


def _notify(results: list[ReapResult], report: ReportBuilder, deps: ReaperDependencies) -> None:
    settings = deps.settings
    deletes = [r for r in results if r.action == DELETE]
    warned = _count([r for r in results if r.action == WARN], Outcome.DONE)
    counts = [f"{_count(deletes, Outcome.DONE)} room(s) deleted", f"{_count(deletes, Outcome.FAILED)} failed"]
    if unknown := _count(deletes, Outcome.UNKNOWN):
        counts.append(f"{unknown} unknown (reply lost, re-read failed)")
    if warned:
        counts.append(f"{warned} warned")
    subject = f"[{settings.environment_name}] zombie reaper: {', '.join(counts)}"
    trigger = report.trigger
    lines = [
        subject,
        "",
        f"Trigger: {trigger.kind.value if trigger else '?'} ({trigger.source if trigger else '?'})",
        f"Mode: {report.mode.value if report.mode else '?'}   Invocation: {report.invocation_id}",
        "",
        "Rooms (oldest first):",
    ]
    for r in results:
        d = r.decision
        what = "warned" if r.action == WARN and r.outcome is Outcome.DONE else r.outcome.value
        lines.append(
            f"  - {d.room.name} ({d.room.sid}) age {format_age(d.age_seconds)}, "
            f"max {format_age(d.max_age_seconds)} [{d.rule}], participants {d.room.num_participants}: "
            f"{what}" + (f" ({r.reason})" if r.outcome is not Outcome.DONE else "")
        )
    lines += ["", f"Runbook: {settings.runbook(FunctionName.ZOMBIE_REAPER)}"]
    message_id = deps.notifier.publish(subject, "\n".join(lines), {"environment": settings.environment_name})
    report.notifications.append(message_id)
