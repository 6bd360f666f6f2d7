"""The reaper's plan and results in the report (candidates, skip counts, the summary) and its EMF
metrics."""

from __future__ import annotations

from typing import Any

from fleet_remediation.contract import metrics as metric_definitions
from fleet_remediation.core.observability import emit
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Decision, Outcome
from fleet_remediation.domain.reap_executor import ReapResult
from fleet_remediation.domain.reaping import (
    ACTING,
    DELETE,
    WARN,
    ReapPlan,
    RoomDecision,
    Verdict,
)


def deletes_of(results: list[ReapResult]) -> list[ReapResult]:
    return [r for r in results if r.action == DELETE]


def warnings_of(results: list[ReapResult]) -> list[ReapResult]:
    return [r for r in results if r.action == WARN]


def count_outcome(results: list[ReapResult], outcome: Outcome) -> int:
    return sum(r.outcome is outcome for r in results)


def record_plan(plan: ReapPlan, report: ReportBuilder, *, held: bool = False) -> None:
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
        decision = report.planned(held) if acting else Decision.SKIP
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


def record_metrics(seen: int, plan: ReapPlan, results: list[ReapResult]) -> None:
    emit(metric_definitions.ROOMS_SEEN, seen)
    emit(metric_definitions.ROOMS_OVER_AGE, len(plan.to_act) + plan.trimmed)
    deletes = deletes_of(results)
    emit(metric_definitions.ROOMS_REAPED, count_outcome(deletes, Outcome.DONE))
    emit(metric_definitions.ROOM_REAP_FAILURES, count_outcome(deletes, Outcome.FAILED))
    emit(metric_definitions.ROOM_REAPS_UNKNOWN, count_outcome(deletes, Outcome.UNKNOWN))
    emit(metric_definitions.ROOMS_WARNED, count_outcome(warnings_of(results), Outcome.DONE))
    emit(metric_definitions.ROOMS_TRIMMED_BY_CAP, plan.trimmed)


def summary(seen: int, plan: ReapPlan, results: list[ReapResult], livekit_calls: int) -> dict[str, Any]:
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
