"""The reaper's orchestration: trigger → mode → snapshot → decide → execute → report and notify.

The run (snapshot, decisions, deletions, the message about them) is one step under a once-key of
the invocation: when Lambda retries an event because the notification was lost, the retry replays
the first attempt's results instead of acting again, and only the delivery is repeated. Dry runs
notify like real ones ("DRY RUN — would have ..."), once per set of rooms, not on every tick.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field

from fleet_remediation.adapters.idempotency import DynamoDBOnceGuard, OnceGuard, RunEveryTime
from fleet_remediation.adapters.livekit_rooms import RoomService, room_service_factory
from fleet_remediation.adapters.notifier import NotificationDelivery, Notifier, SnsNotifier
from fleet_remediation.contract import metrics as metric_definitions
from fleet_remediation.contract.budgets import NOTIFICATION_BUDGET_SECONDS, REPORT_MARGIN_SECONDS
from fleet_remediation.contract.naming import FunctionName, vad_alarm_name
from fleet_remediation.contract.settings import ReaperSettings, settings_from_environment
from fleet_remediation.core import messages
from fleet_remediation.core.errors import InvalidEventError, RemediationError
from fleet_remediation.core.invocation import decide_mode
from fleet_remediation.core.kill_switch import ModeSwitch, SsmModeSwitch
from fleet_remediation.core.observability import emit
from fleet_remediation.core.report import (
    ActionRecord,
    Candidate,
    Decision,
    ErrorRecord,
    Mode,
    Outcome,
    ReportBuilder,
)
from fleet_remediation.core.routing import AlarmRoute, ManualEvent, ManualRoute, Routed, Router, ScheduleRoute
from fleet_remediation.domain.reaping import (
    ReapExecutor,
    ReapPlan,
    ReapResult,
    RoomDecision,
    Verdict,
    collector_paused,
    plan_reap,
)

FUNCTION = FunctionName.ZOMBIE_REAPER


class ReaperManualEvent(ManualEvent):
    max_age_seconds: int | None = Field(default=None, gt=0, description="Stricter max age for this run.")


@dataclass
class ReaperDependencies:
    settings: ReaperSettings
    mode_switch: ModeSwitch
    notifier: Notifier
    room_service_factory: Callable[[], RoomService]
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    chat_notifier: Notifier | None = None
    once: OnceGuard = field(default_factory=RunEveryTime)

    @property
    def delivery(self) -> NotificationDelivery:
        return NotificationDelivery(self.notifier, self.chat_notifier, self.once)

    @classmethod
    def from_environment(cls) -> ReaperDependencies:
        settings = settings_from_environment(ReaperSettings)
        return cls(
            settings=settings,
            mode_switch=SsmModeSwitch(settings.mode_parameter_name, settings.function_mode_parameter_name),
            notifier=SnsNotifier(settings.notification_topic_arn),
            chat_notifier=SnsNotifier(settings.chat_topic_arn) if settings.chat_topic_arn else None,
            once=DynamoDBOnceGuard(settings.idempotency_table_name)
            if settings.idempotency_table_name
            else RunEveryTime(),
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


class RunOutcome(BaseModel):
    """What one run saw, decided and did, and the message about it: stored under the invocation's
    once-key so a retried event replays it."""

    candidates: list[Candidate] = Field(default_factory=list)
    skipped: dict[str, int] = Field(default_factory=dict)
    truncated: dict[str, int] = Field(default_factory=dict)
    actions: list[ActionRecord] = Field(default_factory=list)
    errors: list[ErrorRecord] = Field(default_factory=list)
    summary: dict[str, Any] = Field(default_factory=dict)
    notification: messages.Notification | None = None


def run_reaper(
    event: Any,
    report: ReportBuilder,
    deps: ReaperDependencies,
    remaining_seconds: float,
    context: LambdaContext | None = None,
) -> None:
    started = time.monotonic()
    settings = deps.settings
    report.environment = settings.environment_name
    routed = reaper_router(settings.environment_name).route(event)
    report.trigger, manual = routed.trigger, routed.manual
    if routed.alarm is not None and routed.alarm.state.value != "ALARM":
        report.summary = {"skipped": f"alarm state {routed.alarm.state.value}: nothing to reap on recovery"}
        return
    policy = settings.reaper.policy
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
    if isinstance(deps.once, DynamoDBOnceGuard) and context is not None:
        deps.once.register_lambda_context(context)
    deadline = started + remaining_seconds - REPORT_MARGIN_SECONDS - NOTIFICATION_BUDGET_SECONDS

    def run() -> dict[str, Any]:
        outcome = asyncio.run(_reap(report, deps, routed, override, deadline))
        return outcome.model_dump(mode="json")

    if mode is Mode.ENFORCE and report.invocation_id:
        # Deletions happened at most once per event: a retry (same request id) replays them.
        key = {"function": FUNCTION.value, "request": report.invocation_id, "step": "run"}
        stored, replayed = deps.once.run_once(key, run)
    else:
        stored, replayed = run(), False
    outcome = RunOutcome.model_validate(stored)
    report.candidates.extend(outcome.candidates)
    report.skipped.update(outcome.skipped)
    report.truncated.update(outcome.truncated)
    report.actions.extend(outcome.actions)
    report.errors.extend(outcome.errors)
    report.summary = outcome.summary
    if replayed:
        report.summary["replayed"] = "a retry of this event: the first attempt's results, not acted again"
    note = outcome.notification
    if note is None:
        return
    if manual is not None and mode is Mode.DRY_RUN:
        # A person's preview: the message goes into the report, nobody else is told.
        subject, text = messages.render_email(note)
        report.summary["would_notify"] = {"subject": subject, "text": text}
        return
    deps.delivery.send(note, report, once_key={"incident": note.incident_id, "mode": mode.value})


async def _reap(
    report: ReportBuilder,
    deps: ReaperDependencies,
    routed: Routed[Any],
    override: int | None,
    deadline: float,
) -> RunOutcome:
    settings = deps.settings
    scratch = ReportBuilder(
        report.function, report.invocation_id, report.started_at, full_detail=report.full_detail
    )
    scratch.mode, scratch.trigger = report.mode, report.trigger
    # Created inside the event loop: the LiveKit client's HTTP session binds to the running loop.
    rooms = deps.room_service_factory()
    try:
        with collector_paused():
            snapshot = await rooms.list_rooms()
            plan = plan_reap(
                snapshot, settings.reaper.policy, deps.clock(), max_age_override_seconds=override
            )
            _record_plan(plan, scratch)
        results: list[ReapResult] = []
        if scratch.acts and plan.to_reap:
            executor = ReapExecutor(
                rooms=rooms,
                concurrency=settings.reaper.policy.delete_concurrency,
                deadline=deadline,
                request_timeout_seconds=settings.reaper.livekit_request_timeout_seconds,
                mode_switch=deps.mode_switch,
            )
            results = await executor.run(plan.to_reap)
            for result in results:
                scratch.action(
                    result.decision.room.name, "delete-room", result.outcome, result.reason, result.error
                )
        _record_metrics(len(snapshot), plan, results)
        scratch.summary = {
            "rooms_seen": len(snapshot),
            "rooms_over_age": len(plan.to_reap) + plan.trimmed,
            "to_reap": len(plan.to_reap),
            "trimmed_by_cap": plan.trimmed,
            "reaped": sum(r.outcome is Outcome.DONE for r in results),
            "already_gone": sum(r.outcome is Outcome.ALREADY_DONE for r in results),
            "failed": sum(r.outcome is Outcome.FAILED for r in results),
            "livekit_calls": getattr(rooms, "calls", None),
        }
        note = _compose(plan, results, scratch, deps, routed)
    except RemediationError as exc:
        scratch.error(exc)
        note = _compose_failure(exc, scratch, deps, routed)
    finally:
        await rooms.aclose()
    # Debug-level detail is logged with this report only; a retry replays the stored outcome.
    report.detail += scratch.detail
    return RunOutcome(
        candidates=scratch.candidates,
        skipped=dict(scratch.skipped),
        truncated=dict(scratch.truncated),
        actions=scratch.actions,
        errors=scratch.errors,
        summary=scratch.summary,
        notification=note,
    )


def _record_plan(plan: ReapPlan, report: ReportBuilder) -> None:
    by_verdict: dict[Verdict, list[RoomDecision]] = {}
    for d in plan.decisions:
        by_verdict.setdefault(d.verdict, []).append(d)
    for verdict, decisions in by_verdict.items():
        listed = decisions
        if verdict is not Verdict.REAP:
            # Most of a large fleet: a sample is listed, the rest only counted.
            listed = decisions[: report.skip_sample_room(verdict.value)]
            report.count_skip(verdict.value, len(decisions) - len(listed))
        decision = report.planned() if verdict is Verdict.REAP else Decision.SKIP
        for d in listed:
            report.candidate(
                d.room.name,
                decision,
                f"{verdict.value}: {d.reason}",
                sid=d.room.sid,
                age_seconds=None if d.age_seconds is None else round(d.age_seconds, 1),
                max_age_seconds=d.max_age_seconds,
                rule=d.rule,
                participants=d.room.num_participants,
            )


def _record_metrics(seen: int, plan: ReapPlan, results: list[ReapResult]) -> None:
    emit(metric_definitions.ROOMS_SEEN, seen)
    emit(metric_definitions.ROOMS_OVER_AGE, len(plan.to_reap) + plan.trimmed)
    emit(metric_definitions.ROOMS_REAPED, sum(r.outcome is Outcome.DONE for r in results))
    emit(metric_definitions.ROOM_REAP_FAILURES, sum(r.outcome is Outcome.FAILED for r in results))
    emit(metric_definitions.ROOMS_TRIMMED_BY_CAP, plan.trimmed)


def format_age(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, _ = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m"


def _room_evidence(d: RoomDecision) -> str:
    return (
        f"{d.room.name} ({d.room.sid}): age {format_age(d.age_seconds)} >= max "
        f"{format_age(d.max_age_seconds)} [{d.rule}], {d.room.num_participants} participant(s)"
    )


def _protected_over_age(plan: ReapPlan, deps: ReaperDependencies) -> list[str]:
    """Protected rooms older than the default max age: kept by a rule, but someone should know."""
    limit = deps.settings.reaper.policy.max_age_minutes * 60
    now = deps.clock()
    kept = []
    for d in plan.decisions:
        if d.verdict is Verdict.PROTECTED and d.room.created_at is not None:
            age = (now - d.room.created_at).total_seconds()
            if age >= limit:
                kept.append(f"{d.room.name} ({d.room.sid}): age {format_age(age)}, kept: {d.reason}")
    return kept


def _trigger_line(report: ReportBuilder) -> str:
    trigger = report.trigger
    if trigger is None:
        return "Trigger: unknown"
    return f"Trigger: {trigger.kind.value} ({trigger.source})"


def _incident(deps: ReaperDependencies, routed: Routed[Any], acted: bool, about: list[str]) -> str:
    env = deps.settings.environment_name
    if routed.alarm is not None:
        return messages.transition_incident_id(env, routed.alarm)
    if acted:
        schedule_time = routed.trigger.detail.get("time")
        moment = datetime.fromisoformat(schedule_time) if schedule_time else deps.clock()
        return messages.run_incident_id(env, FUNCTION, moment)
    # Nothing done (a dry run, or only protected rooms): the same rooms are the same incident.
    return messages.subject_incident_id(env, FUNCTION, "rooms", about)


def _links(report: ReportBuilder, deps: ReaperDependencies) -> list[messages.Link]:
    settings = deps.settings
    return messages.function_links(
        region=settings.aws_region,
        environment=settings.environment_name,
        function=FUNCTION,
        runbook=settings.runbook(FUNCTION),
        invocation_id=report.invocation_id,
        around=report.started_at,
    )


def _compose(
    plan: ReapPlan,
    results: list[ReapResult],
    report: ReportBuilder,
    deps: ReaperDependencies,
    routed: Routed[Any],
) -> messages.Notification | None:
    """The message, when there is something an operator should know: rooms deleted (or that a
    dry run would delete), deletions refused or failed, rooms left by the cap, protected rooms
    past the default max age. A room that vanished by itself is not news."""
    kept = _protected_over_age(plan, deps)
    newsworthy = [r for r in results if r.outcome is not Outcome.ALREADY_DONE]
    would = list(plan.to_reap) if not report.acts else []
    if not (newsworthy or would or plan.trimmed or kept):
        return None
    settings = deps.settings
    listed = [r.decision for r in results] or would
    done = sum(r.outcome is Outcome.DONE for r in results)
    count = len(listed)
    oldest = f" (oldest {listed[0].room.name}, {format_age(listed[0].age_seconds)})" if listed else ""
    if count:
        acted = f"zombie reaper deleted {done} of {count} over-age room(s){oldest}"
        would_text = f"deleted {count} over-age room(s){oldest}"
    else:
        acted = f"zombie reaper kept {len(kept)} protected room(s) past the default max age"
        would_text = acted.removeprefix("zombie reaper ")
    why = [_trigger_line(report), *(_room_evidence(d) for d in listed), *kept]
    if plan.trimmed:
        why.append(
            f"{plan.trimmed} more over-age room(s) left for the next run by the cap of "
            f"{settings.reaper.policy.max_deletions_per_run} per run (oldest first)"
        )
    details = [f"{r.decision.room.name}: {r.outcome.value} ({r.reason})" for r in results]
    severity = messages.Severity.WARNING if (kept or plan.trimmed) else messages.Severity.INFO
    about = [d.room.sid for d in listed] + kept
    undo = [messages.stop_function_undo(settings.environment_name, FUNCTION)]
    if count:
        undo.insert(
            0,
            messages.Undo(
                label="Deleted rooms cannot be restored (participants rejoin from the app); "
                "protect a room name with a rule",
                command='cdk.json: reaper.policy.rules += {"name_pattern": "^<name>$", "protected": true}',
            ),
        )
    return messages.Notification(
        environment=settings.environment_name,
        function=FUNCTION,
        incident_id=_incident(deps, routed, bool(newsworthy), about),
        severity=severity,
        mode=report.mode,
        status=report.status(),
        headline=messages.mode_headline(report.mode, acted=acted, would=would_text),
        why=why,
        details=details,
        counts=messages.Counts.from_report(report),
        errors=[f"{e.code}: {e.message}" for e in report.errors],
        undo=undo,
        links=_links(report, deps),
        resources=[d.room.name for d in listed],
        invocation_id=report.invocation_id,
    )


def _compose_failure(
    error: RemediationError, report: ReportBuilder, deps: ReaperDependencies, routed: Routed[Any]
) -> messages.Notification:
    """A run that could not even list the rooms: said once an hour per error code (the
    self-monitoring alarm pages when it keeps happening)."""
    settings = deps.settings
    hour = deps.clock().replace(minute=0, second=0, microsecond=0)
    incident = (
        messages.transition_incident_id(settings.environment_name, routed.alarm)
        if routed.alarm is not None
        else f"{messages.run_incident_id(settings.environment_name, FUNCTION, hour)}.{error.code}"
    )
    text = f"checked for over-age rooms, but the run failed: {error.code}"
    return messages.Notification(
        environment=settings.environment_name,
        function=FUNCTION,
        incident_id=incident,
        severity=messages.Severity.CRITICAL,
        mode=report.mode,
        status=report.status(),
        headline=messages.mode_headline(report.mode, acted=f"zombie reaper {text}", would=text),
        why=[_trigger_line(report), f"{error.code}: {error.message}"],
        counts=messages.Counts.from_report(report),
        errors=[f"{e.code}: {e.message}" for e in report.errors],
        undo=[messages.stop_function_undo(settings.environment_name, FUNCTION)],
        links=_links(report, deps),
        invocation_id=report.invocation_id,
    )
