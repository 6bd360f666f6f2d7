"""The TTS-reach responder: alarm transition → mode → Logs Insights snapshot → decide → publish once.

On ALARM it finds the jobs that had responses but no first audio frame in the alarm's window,
decides whether they concentrate on one worker, hands a concentrated worker to the drainer (a
suspect-worker event) and sends one notification. On OK it sends one "resolved" notification.
A scheduled re-check, while the page stays in ALARM, runs the same analysis over the window ending
now: the first analysis, a minute after onset, often has too few failed sessions to name a worker,
and the page holds the incident without another transition. It tells only what is new: a worker
named for the first time in the incident (once per worker).

It is detection: it reads and tells in every mode. Only the hand-over to the drainer is an action —
done in ``enforce``, "DRY RUN — would have" in ``dry-run``, not done when the switch is ``off`` (the
message says so). Each action and each notification delivery runs at most once per alarm
transition (alarm name + state + state timestamp), under separate once-keys: a retry after a lost
notification re-sends the message without a second suspect-worker event.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from fleet_remediation.adapters.alarm_state import AlarmStates, CloudWatchAlarmStates
from fleet_remediation.adapters.common_wiring import kill_switch_for, notifiers_for
from fleet_remediation.adapters.idempotency import DynamoDBOnceGuard, OnceGuard
from fleet_remediation.adapters.logs_insights import CloudWatchLogsInsights, LogsInsights
from fleet_remediation.adapters.notifier import Notifier, NotifyingDependencies
from fleet_remediation.contract import metrics as metric_definitions
from fleet_remediation.contract.budgets import (
    NOTIFICATION_BUDGET_SECONDS,
    REPORT_MARGIN_SECONDS,
    SUSPECT_EVENT_PUT,
    guarded_action_seconds,
)
from fleet_remediation.contract.events import SuspectWorkerDetail
from fleet_remediation.contract.naming import EVENT_BUS_NAME, task_id_from_log_stream
from fleet_remediation.contract.settings import TtsReachSettings, settings_from_environment
from fleet_remediation.core import messages
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.invocation import decide_mode
from fleet_remediation.core.kill_switch import ModeSwitch
from fleet_remediation.core.observability import emit
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Decision, Outcome
from tts_reach_alarm.adapters.event_bus import EventBridgePublisher, EventPublisher, put_at_most_once
from tts_reach_alarm.analysis import MAX_JOBS, MAX_LISTED_JOBS
from tts_reach_alarm.investigation import Findings, investigate, recheck_alpha
from tts_reach_alarm.messages import compose_alarm_notification, compose_resolved_notification, incident_id
from tts_reach_alarm.transition import HANDLED_STATES, Transition, parse_transition


@dataclass
class TtsReachDependencies(NotifyingDependencies):
    settings: TtsReachSettings
    mode_switch: ModeSwitch
    notifier: Notifier
    events: EventPublisher
    insights: LogsInsights
    once: OnceGuard
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    chat_notifier: Notifier | None = None
    # The page's state, for the scheduled re-check (None: no re-check can find an open incident).
    alarm_states: AlarmStates | None = None

    @classmethod
    def from_environment(cls) -> TtsReachDependencies:
        settings = settings_from_environment(TtsReachSettings)
        notifier, chat_notifier = notifiers_for(settings)
        return cls(
            settings=settings,
            mode_switch=kill_switch_for(settings),
            notifier=notifier,
            chat_notifier=chat_notifier,
            events=EventBridgePublisher(EVENT_BUS_NAME),
            insights=CloudWatchLogsInsights(),
            once=DynamoDBOnceGuard(settings.idempotency_table_name),
            alarm_states=CloudWatchAlarmStates(),
        )


def run_tts_reach(
    event: Any,
    report: ReportBuilder,
    deps: TtsReachDependencies,
    remaining_seconds: float,
    context: LambdaContext | None = None,
) -> None:
    started = time.monotonic()
    settings = deps.settings
    report.environment = settings.environment_name
    trigger, transition = parse_transition(event, settings, deps.clock())
    report.trigger = trigger
    decide_mode(deps.mode_switch, transition.manual.dry_run if transition.manual else None, report)
    if transition.recheck:
        opened = _open_incident(transition, deps, report)
        if opened is None:
            return
        transition = opened
    if transition.state not in HANDLED_STATES:
        report.summary = {"skipped": f"state {transition.state} is neither ALARM nor OK: nothing to say"}
        return
    if isinstance(deps.once, DynamoDBOnceGuard) and context is not None:
        deps.once.register_lambda_context(context)
    # The notification (with its once-only records) and the report always keep their time.
    deadline = started + remaining_seconds - REPORT_MARGIN_SECONDS - NOTIFICATION_BUDGET_SECONDS
    if transition.state == "OK":
        report.summary = {"state": "OK", "window": transition.window.model_dump(mode="json")}
        _tell(compose_resolved_notification(transition, settings, report), transition, report, deps)
        return
    alpha = _alpha(transition, settings)
    findings = investigate(transition.window, deps.settings, deps.insights, deadline, alpha)
    _record_findings(findings, transition, report)
    if alpha is not None:
        report.summary["recheck_alpha"] = alpha
    suspect = _suspect_detail(findings, transition, settings)
    event_id, new = None, suspect is not None
    if suspect and report.acts:
        event_id, new = _emit_suspect(suspect, transition, report, deps, deadline)
    elif suspect:
        report.summary["would_emit"] = suspect.model_dump(mode="json")
    if transition.recheck and not (suspect and new):
        report.summary["recheck"] = "nothing new in the open incident: no message"
        return
    note = compose_alarm_notification(findings, transition, suspect, settings, report, event_id)
    notify_key = f"recheck-notify:{suspect.task_id}" if transition.recheck and suspect else "notify"
    _tell(note, transition, report, deps, notify_key)


def _alpha(transition: Transition, settings: TtsReachSettings) -> float | None:
    """A re-check's level: the how-many-th look at the incident it is (the ALARM's own analysis uses
    the configured alpha)."""
    if not transition.recheck or transition.change is None:
        return None
    minutes_open = (transition.window.end - transition.change.state.timestamp).total_seconds() / 60
    look = max(1, int(minutes_open // max(1, settings.tts_reach.recheck_minutes)))
    return recheck_alpha(settings.detection.tts_reach_alarm.concentration_alpha, look)


def _open_incident(
    transition: Transition, deps: TtsReachDependencies, report: ReportBuilder
) -> Transition | None:
    """The re-check's incident: the page's ALARM, while it lasts (its state's timestamp is the
    transition's, so the once-keys and the incident id are that ALARM's). None, with the reason in
    the report, when the page is not in ALARM or its state cannot be read."""
    name = deps.settings.alarm_name
    try:
        reading = deps.alarm_states.current(name) if deps.alarm_states else None
    except RemediationError as exc:
        report.error(exc)
        return None
    if reading is None or reading.value != "ALARM":
        state = reading.value if reading is not None else "not found"
        report.summary = {"recheck": f"{name} is {state}: no open incident"}
        return None
    if report.trigger is not None:
        report.trigger.detail["tts_alarm"] = f"ALARM since {reading.since.isoformat()}"
    return dataclasses.replace(transition, change=reading.change(name))


def _tell(
    note: messages.Notification,
    transition: Transition,
    report: ReportBuilder,
    deps: TtsReachDependencies,
    once_action: str = "notify",
) -> None:
    """Alarm transitions are told in every mode. A manual analysis in dry run is a person's preview:
    its message goes into the report only."""
    if transition.change is None and not report.acts:
        subject, text = messages.render_email(note)
        report.summary["would_publish"] = {"subject": subject, "text": text}
        return
    once_key = transition.once_key(once_action) if transition.change is not None else None
    deps.delivery.send(note, report, once_key)


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


def _suspect_detail(
    findings: Findings, transition: Transition, settings: TtsReachSettings
) -> SuspectWorkerDetail | None:
    c = findings.concentration
    if not c.concentrated or c.top is None or c.p_value_family is None:
        return None
    on_worker = [job for job in findings.failing if job.log_stream == c.top.log_stream]
    return SuspectWorkerDetail(
        environment=settings.environment_name,
        log_stream=c.top.log_stream,
        task_id=task_id_from_log_stream(c.top.log_stream),
        alarm_name=settings.alarm_name,
        p_value=c.p_value_family,
        window=transition.window,
        evidence={**c.evidence(), "failed_job_ids": [job.job_id for job in on_worker[:MAX_LISTED_JOBS]]},
        incident_id=incident_id(transition, settings),
    )


def _once(
    action: str, transition: Transition, deps: TtsReachDependencies, run: Callable[[], dict[str, Any]]
) -> tuple[dict[str, Any], bool]:
    if transition.change is None:
        return run(), False
    return deps.once.run_once(transition.once_key(action), run)


def _emit_suspect(
    detail: SuspectWorkerDetail,
    transition: Transition,
    report: ReportBuilder,
    deps: TtsReachDependencies,
    deadline: float,
) -> tuple[str | None, bool]:
    """Hand the worker to the drainer, once per transition; not started without the time to finish
    it (the notification after it keeps its own). Returns the event's id and whether it was sent
    now (not by an earlier run of the same transition)."""
    if time.monotonic() + guarded_action_seconds(SUSPECT_EVENT_PUT) > deadline:
        reason = "deadline: not enough time left to send it; the notification says what was found"
        report.action(detail.log_stream, "emit-suspect-worker", Outcome.SKIPPED, reason)
        return None, True
    intent = report.intend(detail.log_stream, "emit-suspect-worker", f"p={detail.p_value:.3g}")
    try:
        result, replayed = _once(
            f"suspect-worker:{detail.task_id}",
            transition,
            deps,
            lambda: put_at_most_once(deps.events, detail),
        )
    except RemediationError as exc:
        report.resolve(intent, Outcome.FAILED, exc.message, exc)
        return None, True
    if result.get("unknown"):
        report.resolve(intent, Outcome.UNKNOWN, str(result["unknown"]))
        return None, not replayed
    outcome = Outcome.ALREADY_DONE if replayed else Outcome.DONE
    report.resolve(intent, outcome, f"event {result['event_id']}")
    return str(result["event_id"]), not replayed
