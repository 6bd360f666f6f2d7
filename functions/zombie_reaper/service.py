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
from pydantic import BaseModel, Field, StrictInt

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.adapters.idempotency import DynamoDBOnceGuard, OnceGuard, RunEveryTime
from fleet_remediation.adapters.livekit_rooms import RoomService, room_service_factory
from fleet_remediation.adapters.notifier import NotificationDelivery, Notifier, SnsNotifier
from fleet_remediation.contract import metrics as metric_definitions
from fleet_remediation.contract.budgets import (
    KILL_SWITCH_READ,
    NOTIFICATION_BUDGET_SECONDS,
    REPORT_MARGIN_SECONDS,
)
from fleet_remediation.contract.naming import FunctionName, vad_alarm_name
from fleet_remediation.contract.policies import MIN_MANUAL_MAX_AGE_SECONDS
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
    ACTING,
    DELETE,
    WARN,
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
            mode_switch=SsmModeSwitch(
                settings.mode_parameter_name,
                settings.function_mode_parameter_name,
                client=aws_client(KILL_SWITCH_READ),
            ),
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
    actions: list[ActionRecord] = Field(default_factory=list)
    errors: list[ErrorRecord] = Field(default_factory=list)
    summary: dict[str, Any] = Field(default_factory=dict)
    notification: messages.Notification | None = None
    # Skipped rooms counted by reason, and how many of them are not listed (a bounded report).
    skipped: dict[str, int] = Field(default_factory=dict)
    unlisted_skips: int = 0


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
    # The notification and the report keep their time whatever the rooms take.
    deadline = started + remaining_seconds - REPORT_MARGIN_SECONDS - NOTIFICATION_BUDGET_SECONDS
    # The run's own record (stored under its once-key); each step is journaled in it as it happens.
    scratch = ReportBuilder(report.function, report.invocation_id, report.started_at)
    scratch.mode, scratch.trigger = report.mode, report.trigger

    def run() -> dict[str, Any]:
        outcome = asyncio.run(_reap(scratch, deps, routed, override, deadline))
        return outcome.model_dump(mode="json")

    try:
        if mode is Mode.ENFORCE and report.invocation_id:
            # Deletions happened at most once per event: a retry (same request id) replays them.
            key = {"function": FUNCTION.value, "request": report.invocation_id, "step": "run"}
            stored, replayed = deps.once.run_once(key, run)
        else:
            stored, replayed = run(), False
    except Exception:
        # A run broken by an unexpected error: what it had done goes into the one report, its
        # unfinished steps as unknown, before the error is reported.
        scratch.resolve_unfinished()
        report.candidates.extend(scratch.candidates)
        report.actions.extend(scratch.actions)
        raise
    outcome = RunOutcome.model_validate(stored)
    report.candidates.extend(outcome.candidates)
    report.actions.extend(outcome.actions)
    report.errors.extend(outcome.errors)
    report.skipped.update(outcome.skipped)
    if outcome.unlisted_skips:
        report.truncated["candidates"] += outcome.unlisted_skips
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
    scratch: ReportBuilder,
    deps: ReaperDependencies,
    routed: Routed[Any],
    override: int | None,
    deadline: float,
) -> RunOutcome:
    settings = deps.settings
    policy = settings.reaper.policy
    # Created inside the event loop: the LiveKit client's HTTP session binds to the running loop.
    rooms = deps.room_service_factory()
    try:
        with collector_paused():
            snapshot = await rooms.list_rooms()
            now = deps.clock()
            plan = plan_reap(
                snapshot,
                policy,
                now,
                max_age_override_seconds=override,
                live_room_grace_seconds=policy.live_room_grace_seconds,
            )
            _record_plan(plan, scratch)
        results: list[ReapResult] = []
        if scratch.acts and plan.to_act:
            # The executor journals each step (intent before, outcome after) in the run's record.
            executor = ReapExecutor(
                rooms=rooms,
                concurrency=policy.delete_concurrency,
                deadline=deadline,
                request_timeout_seconds=settings.reaper.livekit_request_timeout_seconds,
                journal=scratch,
                mode_switch=deps.mode_switch,
                live_room_grace_seconds=policy.live_room_grace_seconds,
                now=now,
            )
            results = await executor.run(plan.to_act)
        _record_metrics(len(snapshot), plan, results)
        deletes, warnings = _deletes(results), _warnings(results)
        scratch.summary = {
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
        note = _compose(plan, results, scratch, deps, routed)
    except RemediationError as exc:
        scratch.error(exc)
        note = _compose_failure(exc, scratch, deps, routed)
    finally:
        await rooms.aclose()
    return RunOutcome(
        candidates=scratch.candidates,
        actions=scratch.actions,
        errors=scratch.errors,
        summary=scratch.summary,
        notification=note,
        skipped=dict(scratch.skipped),
        unlisted_skips=scratch.truncated["candidates"],
    )


def _deletes(results: list[ReapResult]) -> list[ReapResult]:
    return [r for r in results if r.action == DELETE]


def _warnings(results: list[ReapResult]) -> list[ReapResult]:
    return [r for r in results if r.action == WARN]


def _count(results: list[ReapResult], outcome: Outcome) -> int:
    return sum(r.outcome is outcome for r in results)


def _record_plan(plan: ReapPlan, report: ReportBuilder) -> None:
    by_verdict: dict[Verdict, list[RoomDecision]] = {}
    for d in plan.decisions:
        by_verdict.setdefault(d.verdict, []).append(d)
    for verdict, decisions in by_verdict.items():
        listed = decisions
        acting = verdict in ACTING
        if not acting:
            # Most of a large fleet: a sample is listed, the rest only counted.
            listed = decisions[: report.skip_sample_room(verdict.value)]
            report.count_skip(verdict.value, len(decisions) - len(listed))
        decision = report.planned() if acting else Decision.SKIP
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
    emit(metric_definitions.ROOMS_OVER_AGE, len(plan.to_act) + plan.trimmed)
    deletes = _deletes(results)
    emit(metric_definitions.ROOMS_REAPED, _count(deletes, Outcome.DONE))
    emit(metric_definitions.ROOM_REAP_FAILURES, _count(deletes, Outcome.FAILED))
    emit(metric_definitions.ROOM_REAPS_UNKNOWN, _count(deletes, Outcome.UNKNOWN))
    emit(metric_definitions.ROOMS_WARNED, _count(_warnings(results), Outcome.DONE))
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
    dry run would delete), live rooms warned, deletions refused, failed or of unknown outcome, rooms
    left by the cap, protected rooms past the default max age. A room that vanished by itself is
    not news. The counts are honest whatever the mix of outcomes."""
    kept = _protected_over_age(plan, deps)
    newsworthy = [r for r in results if r.outcome is not Outcome.ALREADY_DONE]
    would = list(plan.to_act) if not report.acts else []
    if not (newsworthy or would or plan.trimmed or kept):
        return None
    settings = deps.settings
    listed = [r.decision for r in results] or would
    deletes, warnings = _deletes(results), _warnings(results)
    count = len(listed)
    oldest = f" (oldest {listed[0].room.name}, {format_age(listed[0].age_seconds)})" if listed else ""
    if count:
        deleted = _count(deletes, Outcome.DONE)
        acted = f"zombie reaper deleted {deleted} of {len(deletes)} over-age room(s){oldest}"
        if unknown := _count(deletes, Outcome.UNKNOWN):
            acted += f", {unknown} of unknown outcome (reply lost, re-read failed)"
        if warnings:
            acted += f"; warned {_count(warnings, Outcome.DONE)} of {len(warnings)} room(s) with participants"
        to_warn = sum(d.verdict is Verdict.WARN for d in listed)
        would_text = f"deleted {count - to_warn} over-age room(s){oldest}"
        if to_warn:
            would_text += f" and warned {to_warn} with participants"
    else:
        acted = f"zombie reaper kept {len(kept)} protected room(s) past the default max age"
        would_text = acted.removeprefix("zombie reaper ")
    why = [_trigger_line(report), *(_room_evidence(d) for d in listed), *kept]
    if plan.trimmed:
        why.append(
            f"{plan.trimmed} more over-age room(s) left for the next run by the cap of "
            f"{settings.reaper.policy.max_deletions_per_run} per run (oldest first)"
        )
    details = [
        f"{r.decision.room.name}: {r.action} {r.outcome.value}" + (f" ({r.reason})" if r.reason else "")
        for r in results
    ]
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
