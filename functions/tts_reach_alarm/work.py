"""The responder's stages. On ALARM: find the jobs whose responses got no first audio frame in the
alarm's window, decide whether they concentrate on one worker, hand that worker to the drainer (a
suspect-worker event, once per transition) and tell. On OK: tell that it is resolved. A scheduled
re-check, while the page stays in ALARM, runs the same analysis over the window ending now and tells
only a worker named for the first time in the incident.

It is detection: it reads and tells in every mode. Only the hand-over is an action — done in
``enforce``, "DRY RUN — would have" in ``dry-run``, not done when the switch is ``off``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fleet_remediation.adapters.scan_budget import LookPolicy, budget_refusal, looking, note_look_error
from fleet_remediation.contract import metrics as metric_definitions
from fleet_remediation.contract.budgets import SUSPECT_EVENT_PUT, guarded_action_seconds
from fleet_remediation.contract.events import SuspectWorkerDetail
from fleet_remediation.contract.naming import task_id_from_log_stream
from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.observability import emit
from fleet_remediation.core.pipeline import Run, Work
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Decision, Outcome
from fleet_remediation.core.stages import Settled
from tts_reach_alarm.adapters.event_bus import put_at_most_once
from tts_reach_alarm.analysis import MAX_JOBS, MAX_LISTED_JOBS
from tts_reach_alarm.dependencies import TtsReachDependencies
from tts_reach_alarm.investigation import Findings, investigate, recheck_alpha, recheck_due
from tts_reach_alarm.messages import incident_id
from tts_reach_alarm.transition import Transition


@dataclass(frozen=True)
class Look:
    """What the window held (None on OK: nothing to look at), and the level of a re-check's test."""

    findings: Findings | None
    alpha: float | None = None


@dataclass(frozen=True)
class HandedOver:
    """The suspect-worker event's id, and whether it went out now (not in an earlier run)."""

    event_id: str | None
    new: bool


ResponderRun = Run[TtsReachDependencies, Transition]
ResponderWork = Work[Look, SuspectWorkerDetail | None, HandedOver]


def open_incident(transition: Transition, deps: TtsReachDependencies) -> Transition | Settled:
    """A re-check belongs to the page's ALARM while it lasts (its once-keys and incident id are
    that ALARM's); settled when the page is not in ALARM or its state cannot be read."""
    if not transition.recheck:
        return transition
    name = deps.settings.alarm_name
    try:
        reading = deps.alarm_states.current(name) if deps.alarm_states else None
    except RemediationError as exc:
        return Settled(f"{name}: its state could not be read", error=exc)
    if reading is None or reading.value != "ALARM":
        state = reading.value if reading is not None else "not found"
        return Settled(f"{name} is {state}: no open incident")
    tts = deps.settings.tts_reach
    minutes_open = (transition.window.end - reading.since).total_seconds() / 60
    if not recheck_due(minutes_open, tts.recheck_minutes, tts.recheck_max_minutes):
        detail = {"tts_alarm": _alarm_since(reading.since)}
        return Settled(
            f"{name} in ALARM for {minutes_open:.0f} min: re-checks back off, no look this tick",
            trigger_detail=detail,
        )
    return dataclasses.replace(transition, change=reading.change(name), alarm_since=reading.since)


def _alarm_since(since: datetime) -> str:
    return f"ALARM since {since.isoformat()}"


def read(run: ResponderRun) -> Look:
    """The window's jobs. A re-check runs under the scan budget (skipped or stopped: no findings,
    told in the report's skips); the ALARM's own analysis always runs."""
    if run.event.state == "OK":
        return Look(None)
    alpha = _alpha(run.event, run.deps.settings)
    policy = LookPolicy(
        priority=not run.event.recheck, problem=run.report.error, alarm=run.deps.settings.alarm_name
    )
    try:
        with looking(run.deps.insights, policy):
            findings = investigate(
                run.event.window, run.deps.settings, run.deps.insights, run.deadline, alpha
            )
    except RemediationError as exc:
        if not budget_refusal(exc):
            raise
        note_look_error(run.report, exc)
        return Look(None, alpha)
    return Look(findings, alpha)


def decide(run: ResponderRun, look: Look) -> SuspectWorkerDetail | None:
    findings, transition, settings = look.findings, run.event, run.deps.settings
    c = findings.concentration if findings else None
    if findings is None or c is None or not c.concentrated or c.top is None or c.p_value_family is None:
        return None
    on_worker = [job for job in findings.failing if job.log_stream == c.top.log_stream]
    return SuspectWorkerDetail(
        environment=settings.environment_name,
        agent_service=settings.agent_service,
        log_stream=c.top.log_stream,
        task_id=task_id_from_log_stream(c.top.log_stream),
        alarm_name=settings.alarm_name,
        p_value=c.p_value_family,
        window=transition.window,
        evidence={**c.evidence(), "failed_job_ids": [job.job_id for job in on_worker[:MAX_LISTED_JOBS]]},
        incident_id=incident_id(transition, settings),
    )


def act(run: ResponderRun, look: Look, suspect: SuspectWorkerDetail | None) -> HandedOver:
    """Hand the worker to the drainer, once per transition; not started without the time to finish
    it (the notification after it keeps its own)."""
    if suspect is None:
        return HandedOver(None, False)
    report = run.report
    if time.monotonic() + guarded_action_seconds(SUSPECT_EVENT_PUT) > run.deadline:
        reason = "deadline: not enough time left to send it; the notification says what was found"
        report.action(suspect.log_stream, "emit-suspect-worker", Outcome.SKIPPED, reason)
        return HandedOver(None, True)
    intent = report.intend(suspect.log_stream, "emit-suspect-worker", f"p={suspect.p_value:.3g}")
    key = f"suspect-worker:{suspect.task_id}"
    try:
        result, replayed = _once(key, run, lambda: put_at_most_once(run.deps.events, suspect))
    except RemediationError as exc:
        report.resolve(intent, Outcome.FAILED, exc.message, exc)
        return HandedOver(None, True)
    if result.get("unknown"):
        # It may have landed: never sent again; the drainer takes a duplicate as already done.
        report.resolve(intent, Outcome.UNKNOWN, str(result["unknown"]))
        return HandedOver(None, not replayed)
    report.resolve(intent, Outcome.ALREADY_DONE if replayed else Outcome.DONE, f"event {result['event_id']}")
    return HandedOver(str(result["event_id"]), not replayed)


def record(run: ResponderRun, work: ResponderWork) -> None:
    report, transition = run.report, run.event
    if transition.alarm_since is not None and report.trigger is not None:
        report.trigger.detail["tts_alarm"] = _alarm_since(transition.alarm_since)
    if transition.state == "OK":
        report.summary = {"state": "OK", "window": transition.window.model_dump(mode="json")}
        return
    if work.snapshot is None or work.snapshot.findings is None:
        return
    _record_findings(work.snapshot.findings, transition, report)
    if work.snapshot.alpha is not None:
        report.summary["recheck_alpha"] = work.snapshot.alpha
    if work.plan is not None and not report.acts:
        report.summary["would_emit"] = work.plan.model_dump(mode="json")
    if transition.recheck and not news(work):
        report.summary["recheck"] = "nothing new in the open incident: no message"


def news(work: ResponderWork) -> bool:
    """Whether a worker is named for the first time (a dry run's would-be hand-over counts)."""
    if work.plan is None:
        return False
    return work.done.new if work.done is not None else True


def _alpha(transition: Transition, settings: TtsReachSettings) -> float | None:
    """A re-check's level: the how-many-th look at the incident it is (the ALARM's own analysis uses
    the configured alpha)."""
    if not transition.recheck or transition.change is None:
        return None
    minutes_open = (transition.window.end - transition.change.state.timestamp).total_seconds() / 60
    look = max(1, int(minutes_open // max(1, settings.tts_reach.recheck_minutes)))
    return recheck_alpha(settings.detection.tts_reach_alarm.concentration_alpha, look)


def _record_findings(findings: Findings, transition: Transition, report: ReportBuilder) -> None:
    c = findings.concentration
    report.summary = {
        "state": transition.state,
        "window": transition.window.model_dump(mode="json"),
        "jobs_with_responses": len(findings.jobs),
        "failing_jobs": len(findings.failing),
        "reach_in_window": None if findings.reach is None else round(findings.reach, 4),
        "alarm_datapoints": list(transition.reach_datapoints),
        "verdict": c.verdict.value,
        "reason": c.reason,
        "p_value": c.p_value_family,
        "p_value_exact": c.p_value_family_exact,
    }
    if findings.truncated:
        report.summary["jobs_truncated"] = (
            f"the window holds more than MAX_JOBS={MAX_JOBS} jobs (Logs Insights returns at most "
            f"10,000 rows); the test covers the {len(findings.jobs)} the query returned"
        )
    if c.top is not None:
        report.candidate(
            c.top.log_stream,
            report.planned() if c.concentrated else Decision.SKIP,
            c.reason,
            task_id=task_id_from_log_stream(c.top.log_stream),
            **c.evidence(),
        )
    emit(metric_definitions.TTS_REACH_FAILING_JOBS, len(findings.failing))
    emit(metric_definitions.TTS_REACH_SUSPECT_WORKERS, int(c.concentrated))


def _once(action: str, run: ResponderRun, do: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], bool]:
    if run.event.change is None:
        return do(), False
    return run.deps.once.run_once(run.event.once_key(action), do)
