"""What the reaper tells on-call: one message per run in the shared model (what was deleted,
warned or would have been; the evidence; honest counts; undo and links), threaded by incident."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.core import incidents, messages
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.report_model import Outcome, RunFacts
from fleet_remediation.core.routing import Routed
from fleet_remediation.domain.reap_executor import ReapResult
from fleet_remediation.domain.reaping import (
    ReapPlan,
    RoomDecision,
    Verdict,
)
from zombie_reaper.accounting import count_outcome, deletes_of, warnings_of
from zombie_reaper.dependencies import ReaperDependencies

REAPER = FunctionName.ZOMBIE_REAPER


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


def _trigger_line(facts: RunFacts) -> str:
    trigger = facts.trigger
    if trigger is None:
        return "Trigger: unknown"
    return f"Trigger: {trigger.kind.value} ({trigger.source})"


def _incident(deps: ReaperDependencies, routed: Routed[Any], acted: bool, about: list[str]) -> str:
    env = deps.settings.environment_name
    if routed.alarm is not None:
        return incidents.transition_incident_id(env, routed.alarm)
    if acted:
        schedule_time = routed.trigger.detail.get("time")
        moment = datetime.fromisoformat(schedule_time) if schedule_time else deps.clock()
        return incidents.run_incident_id(env, FunctionName.ZOMBIE_REAPER, moment)
    # Nothing done (a dry run, or only protected rooms): the same rooms are the same incident.
    return incidents.subject_incident_id(env, FunctionName.ZOMBIE_REAPER, "rooms", about)


def _links(facts: RunFacts, deps: ReaperDependencies) -> list[messages.Link]:
    settings = deps.settings
    return messages.function_links(
        region=settings.aws_region,
        environment=settings.environment_name,
        function=FunctionName.ZOMBIE_REAPER,
        runbook=settings.runbook(FunctionName.ZOMBIE_REAPER),
        invocation_id=facts.invocation_id,
        around=facts.started_at,
    )


def _headlines(listed: list[RoomDecision], results: list[ReapResult], kept: list[str]) -> tuple[str, str]:
    """What was done (enforce) and what would have been (dry run), with honest counts; deletions
    and warnings each said only when there are some, the oldest room named once."""
    if not listed:
        acted = f"zombie reaper kept {len(kept)} protected room(s) past the default max age"
        return acted, acted.removeprefix("zombie reaper ")
    oldest = f" (oldest {listed[0].room.name}, {format_age(listed[0].age_seconds)})"
    deletes, warnings = deletes_of(results), warnings_of(results)
    to_warn = sum(d.verdict is Verdict.WARN for d in listed)
    done, would = [], []
    if deletes:
        deleted = f"deleted {count_outcome(deletes, Outcome.DONE)} of {len(deletes)} over-age room(s)"
        if unknown := count_outcome(deletes, Outcome.UNKNOWN):
            deleted += f"{oldest}, {unknown} of unknown outcome (reply lost, re-read failed)"
        done.append(deleted if unknown else deleted + oldest)
    if warnings:
        warned = count_outcome(warnings, Outcome.DONE)
        tail = "" if deletes else oldest
        done.append(
            f"warned {warned} of {len(warnings)} room(s) with participants before deleting them{tail}"
        )
    if len(listed) > to_warn:
        would.append(f"deleted {len(listed) - to_warn} over-age room(s){oldest}")
    if to_warn:
        tail = "" if would else oldest
        would.append(f"warned {to_warn} room(s) with participants before deleting them{tail}")
    return f"zombie reaper {'; '.join(done)}", "; ".join(would)


def _evidence(
    plan: ReapPlan, listed: list[RoomDecision], kept: list[str], facts: RunFacts, cap: int
) -> list[str]:
    why = [_trigger_line(facts), *(_room_evidence(d) for d in listed), *kept]
    if plan.trimmed:
        why.append(
            f"{plan.trimmed} more over-age room(s) left for the next run by the cap of "
            f"{cap} per run (oldest first)"
        )
    return why


def _undo(environment: str, region: str | None, deleted_any: bool) -> list[messages.Undo]:
    stop = messages.stop_function_undo(environment, FunctionName.ZOMBIE_REAPER, region)
    if not deleted_any:
        return [stop]
    protect = messages.Undo(
        label="Deleted rooms cannot be restored (participants rejoin from the app); "
        "protect a room name with a rule",
        command='cdk.json: reaper.policy.rules += {"name_pattern": "^<name>$", "protected": true}',
    )
    return [protect, stop]


def compose(
    plan: ReapPlan,
    results: list[ReapResult],
    facts: RunFacts,
    deps: ReaperDependencies,
    routed: Routed[Any],
) -> messages.Notification | None:
    """The message, when there is something an operator should know: rooms deleted (or that a
    dry run would delete), live rooms warned, deletions refused, failed or of unknown outcome, rooms
    left by the cap, protected rooms past the default max age. A room that vanished by itself is
    not news. The counts are honest whatever the mix of outcomes."""
    kept = _protected_over_age(plan, deps)
    newsworthy = [r for r in results if r.outcome is not Outcome.ALREADY_DONE]
    would = list(plan.to_act) if not facts.acts else []
    if not (newsworthy or would or plan.trimmed or kept):
        return None
    settings = deps.settings
    listed = [r.decision for r in results] or would
    acted, would_text = _headlines(listed, results, kept)
    about = [d.room.sid for d in listed] + kept
    return messages.Notification(
        environment=settings.environment_name,
        function=FunctionName.ZOMBIE_REAPER,
        incident_id=_incident(deps, routed, bool(newsworthy), about),
        severity=messages.Severity.WARNING if (kept or plan.trimmed) else messages.Severity.INFO,
        mode=facts.mode,
        status=facts.status,
        headline=messages.mode_headline(facts.mode, acted=acted, would=would_text),
        why=_evidence(plan, listed, kept, facts, settings.reaper.policy.max_deletions_per_run),
        details=[
            f"{r.decision.room.name}: {r.action} {r.outcome.value}" + (f" ({r.reason})" if r.reason else "")
            for r in results
        ],
        counts=messages.Counts.from_report(facts),
        errors=[f"{e.code}: {e.message}" for e in facts.errors],
        undo=_undo(
            settings.environment_name, settings.aws_region, any(d.verdict is Verdict.REAP for d in listed)
        ),
        links=_links(facts, deps),
        resources=[d.room.name for d in listed],
        invocation_id=facts.invocation_id,
    )


def compose_failure(
    error: RemediationError, facts: RunFacts, deps: ReaperDependencies, routed: Routed[Any]
) -> messages.Notification:
    """A run that could not even list the rooms: said once an hour per error code (the
    self-monitoring alarm pages when it keeps happening)."""
    settings = deps.settings
    hour = deps.clock().replace(minute=0, second=0, microsecond=0)
    incident = (
        incidents.transition_incident_id(settings.environment_name, routed.alarm)
        if routed.alarm is not None
        else f"{incidents.run_incident_id(settings.environment_name, REAPER, hour)}.{error.code}"
    )
    text = f"checked for over-age rooms, but the run failed: {error.code}"
    return messages.Notification(
        environment=settings.environment_name,
        function=FunctionName.ZOMBIE_REAPER,
        incident_id=incident,
        severity=messages.Severity.CRITICAL,
        mode=facts.mode,
        status=facts.status,
        headline=messages.mode_headline(facts.mode, acted=f"zombie reaper {text}", would=text),
        why=[_trigger_line(facts), f"{error.code}: {error.message}"],
        counts=messages.Counts.from_report(facts),
        errors=[f"{e.code}: {e.message}" for e in facts.errors],
        undo=[messages.stop_function_undo(settings.environment_name, REAPER, settings.aws_region)],
        links=_links(facts, deps),
        invocation_id=facts.invocation_id,
    )
