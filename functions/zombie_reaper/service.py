"""The reaper's orchestration: trigger → mode → snapshot → decide → execute → report and notify.

The run (snapshot, decisions, deletions, the message about them) is one step under a once-key of
the invocation: when Lambda retries an event because the notification was lost, the retry replays
the first attempt's results instead of acting again, and only the delivery is repeated. Dry runs
notify like real ones ("DRY RUN — would have ..."), once per set of rooms, not on every tick.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, Field, StrictInt

from fleet_remediation.adapters.idempotency import DynamoDBOnceGuard
from fleet_remediation.contract.budgets import (
    NOTIFICATION_BUDGET_SECONDS,
    REPORT_MARGIN_SECONDS,
)
from fleet_remediation.contract.events import REAPER_EVENT_AGES
from fleet_remediation.contract.naming import FunctionName, vad_alarm_name
from fleet_remediation.contract.policies import MIN_MANUAL_MAX_AGE_SECONDS
from fleet_remediation.core import messages
from fleet_remediation.core.door import Door
from fleet_remediation.core.errors import InvalidEventError, RemediationError
from fleet_remediation.core.invocation import decide_mode
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import ActionRecord, Candidate, ErrorRecord, Mode, Outcome
from fleet_remediation.core.routing import AlarmRoute, ManualEvent, ManualRoute, Routed, Router, ScheduleRoute
from fleet_remediation.domain.reap_executor import ReapExecutor, ReapResult
from fleet_remediation.domain.reaping import (
    ReapPlan,
    Verdict,
    collector_paused,
    plan_reap,
)
from zombie_reaper.accounting import count_outcome, deletes_of, record_metrics, record_plan, warnings_of
from zombie_reaper.dependencies import ReaperDependencies
from zombie_reaper.messages import compose, compose_failure

FUNCTION = FunctionName.ZOMBIE_REAPER


class ReaperManualEvent(ManualEvent):
    max_age_seconds: StrictInt | None = Field(
        default=None,
        ge=MIN_MANUAL_MAX_AGE_SECONDS,
        description="Stricter max age for this run (a JSON integer, at least a minute).",
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
    door = Door.for_invocation(
        context.invoked_function_arn if context else None, deps.clock(), REAPER_EVENT_AGES
    )
    routed = reaper_router(settings.environment_name).route(event, door)
    report.trigger, manual = routed.trigger, routed.manual
    if routed.alarm is not None and routed.alarm.state.value != "ALARM":
        report.summary = {"skipped": f"alarm state {routed.alarm.state.value}: nothing to reap on recovery"}
        return
    override = _stricter_max_age(manual, settings.reaper.policy.max_age_minutes)
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
    note = _report_outcome(RunOutcome.model_validate(stored), report, replayed)
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
            record_plan(plan, scratch)
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
        record_metrics(len(snapshot), plan, results)
        scratch.summary = _summary(len(snapshot), plan, results, getattr(rooms, "calls", None))
        note = compose(plan, results, scratch, deps, routed)
    except RemediationError as exc:
        scratch.error(exc)
        note = compose_failure(exc, scratch, deps, routed)
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


def _stricter_max_age(manual: ReaperManualEvent | None, max_age_minutes: int) -> int | None:
    """A manual run's max age, which may only be stricter than the configured one."""
    override = manual.max_age_seconds if manual else None
    if override is not None and override >= max_age_minutes * 60:
        raise InvalidEventError(
            f"max_age_seconds={override} must be stricter than the configured "
            f"{max_age_minutes * 60}s (max_age_minutes={max_age_minutes})"
        )
    return override


def _report_outcome(
    outcome: RunOutcome, report: ReportBuilder, replayed: bool
) -> messages.Notification | None:
    """The run's stored record into the one report (a retry of the event replays the first run's)."""
    report.candidates.extend(outcome.candidates)
    report.actions.extend(outcome.actions)
    report.errors.extend(outcome.errors)
    report.skipped.update(outcome.skipped)
    if outcome.unlisted_skips:
        report.truncated["candidates"] += outcome.unlisted_skips
    report.summary = outcome.summary
    if replayed:
        report.summary["replayed"] = "a retry of this event: the first attempt's results, not acted again"
    return outcome.notification


IN_GRACE = Verdict.IN_GRACE


def _summary(
    seen: int, plan: ReapPlan, results: list[ReapResult], livekit_calls: int | None
) -> dict[str, Any]:
    deletes, warnings = deletes_of(results), warnings_of(results)
    return {
        "rooms_seen": seen,
        "rooms_over_age": len(plan.to_act)
        + plan.trimmed
        + sum(d.verdict is Verdict.IN_GRACE for d in plan.decisions),
        "to_reap": len(plan.to_reap),
        "to_warn": len(plan.to_warn),
        "trimmed_by_cap": plan.trimmed,
        "reaped": count_outcome(deletes, Outcome.DONE),
        "already_gone": count_outcome(deletes, Outcome.ALREADY_DONE),
        "failed": count_outcome(deletes, Outcome.FAILED),
        "unknown": count_outcome(deletes, Outcome.UNKNOWN),
        "warned": count_outcome(warnings, Outcome.DONE),
        "warnings_failed": count_outcome(warnings, Outcome.FAILED),
        "livekit_calls": livekit_calls,
    }
