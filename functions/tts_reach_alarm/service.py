"""The TTS-reach responder: alarm transition → mode → Logs Insights snapshot → decide → publish once.

On ALARM it finds the jobs that had responses but no first audio frame in the alarm's window,
decides whether they concentrate on one worker, hands a concentrated worker to the drainer (a
suspect-worker event) and sends one notification. On OK it sends one "resolved" notification.
Each action runs at most once per alarm transition (alarm name + state + state timestamp).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from fleet_remediation.adapters.aws_clients import aws_client, ssm_provider
from fleet_remediation.adapters.idempotency import DynamoDBOnceGuard, OnceGuard
from fleet_remediation.adapters.logs_insights import CloudWatchLogsInsights, LogsInsights
from fleet_remediation.adapters.notifier import Notifier, SnsNotifier
from fleet_remediation.contract.budgets import (
    NOTIFICATION_PUBLISH,
    REPORT_MARGIN_SECONDS,
    SUSPECT_EVENT_PUT,
    guarded_action_seconds,
)
from fleet_remediation.contract.events import SuspectWorkerDetail
from fleet_remediation.contract.naming import EVENT_BUS_NAME, task_id_from_log_stream
from fleet_remediation.contract.settings import TtsReachSettings, settings_from_environment
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.invocation import decide_mode
from fleet_remediation.core.kill_switch import ModeSwitch, SsmModeSwitch
from fleet_remediation.core.observability import metrics
from fleet_remediation.core.report import Decision, Mode, Outcome, ReportBuilder
from tts_reach_alarm.adapters.event_bus import EventBridgePublisher, EventPublisher
from tts_reach_alarm.analysis import MAX_JOBS, MAX_LISTED_JOBS
from tts_reach_alarm.investigation import Findings, investigate
from tts_reach_alarm.messages import compose_alarm_notification, links
from tts_reach_alarm.transition import HANDLED_STATES, Transition, parse_transition


@dataclass
class TtsReachDependencies:
    settings: TtsReachSettings
    mode_switch: ModeSwitch
    notifier: Notifier
    events: EventPublisher
    insights: LogsInsights
    once: OnceGuard
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    @classmethod
    def from_environment(cls) -> TtsReachDependencies:
        settings = settings_from_environment(TtsReachSettings)
        return cls(
            settings=settings,
            mode_switch=SsmModeSwitch(settings.mode_parameter_name, provider=ssm_provider()),
            notifier=SnsNotifier(settings.notification_topic_arn, client=aws_client(NOTIFICATION_PUBLISH)),
            events=EventBridgePublisher(EVENT_BUS_NAME),
            insights=CloudWatchLogsInsights(),
            once=DynamoDBOnceGuard(settings.idempotency_table_name),
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
    mode = decide_mode(deps.mode_switch, transition.manual.dry_run if transition.manual else None, report)
    if mode is Mode.OFF:
        report.summary = {"skipped": "kill switch is off: nothing read, nothing published"}
        return
    if transition.state not in HANDLED_STATES:
        report.summary = {"skipped": f"state {transition.state} is neither ALARM nor OK: nothing to say"}
        return
    if isinstance(deps.once, DynamoDBOnceGuard) and context is not None:
        deps.once.register_lambda_context(context)
    # The notification (with its once-only record) and the report always keep their time.
    deadline = (
        started + remaining_seconds - REPORT_MARGIN_SECONDS - guarded_action_seconds(NOTIFICATION_PUBLISH)
    )
    if transition.state == "OK":
        _resolved(transition, report, deps)
        return
    findings = investigate(transition.window, deps.settings, deps.insights, deadline)
    _record_findings(findings, transition, report)
    suspect = _suspect_detail(findings, transition, settings)
    subject, message = compose_alarm_notification(findings, transition, suspect, settings)
    if not report.acts:
        report.summary["would_publish"] = {"subject": subject, "message": message}
        if suspect:
            report.summary["would_emit"] = suspect.model_dump(mode="json")
        return
    event_id = _emit_suspect(suspect, transition, report, deps, deadline) if suspect else None
    if event_id:
        message += f"\nSuspect-worker event sent to the drainer: {event_id}"
    _publish(subject, message, transition, report, deps)


def _record_findings(findings: Findings, transition: Transition, report: ReportBuilder) -> None:
    c = findings.concentration
    report.summary = {
        "state": transition.state,
        "window": transition.window.model_dump(mode="json"),
        "jobs_with_responses": len(findings.jobs),
        "failing_jobs": len(findings.failing),
        "reach_in_window": None if findings.reach is None else round(findings.reach, 4),
        "alarm_datapoints": list(transition.reach_datapoints),
        "verdict": "concentrated" if c.concentrated else "fleet-wide",
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
    metrics.add_metric(name="TtsReachFailingJobs", unit=MetricUnit.Count, value=len(findings.failing))
    metrics.add_metric(name="TtsReachSuspectWorkers", unit=MetricUnit.Count, value=int(c.concentrated))


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
) -> str | None:
    """Hand the worker to the drainer, once per transition; not started without the time to finish
    it (the notification after it keeps its own)."""
    if time.monotonic() + guarded_action_seconds(SUSPECT_EVENT_PUT) > deadline:
        reason = "deadline: not enough time left to send it; the notification says what was found"
        report.action(detail.log_stream, "emit-suspect-worker", Outcome.SKIPPED, reason)
        return None
    intent = report.intend(detail.log_stream, "emit-suspect-worker", f"p={detail.p_value:.3g}")
    try:
        result, replayed = _once(
            "suspect-worker", transition, deps, lambda: {"event_id": deps.events.put_suspect_worker(detail)}
        )
    except RemediationError as exc:
        report.resolve(intent, Outcome.FAILED, exc.message, exc)
        return None
    outcome = Outcome.ALREADY_DONE if replayed else Outcome.DONE
    report.resolve(intent, outcome, f"event {result['event_id']}")
    return str(result["event_id"])


def _publish(
    subject: str, message: str, transition: Transition, report: ReportBuilder, deps: TtsReachDependencies
) -> None:
    attributes = {"environment": deps.settings.environment_name, "alarm_state": transition.state}
    result, replayed = _once(
        "notify",
        transition,
        deps,
        lambda: {"message_id": deps.notifier.publish(subject, message, attributes)},
    )
    message_id = str(result["message_id"])
    if replayed:
        reason = f"already notified for this transition (message {message_id})"
        report.action(deps.settings.notification_topic_arn, "notify", Outcome.ALREADY_DONE, reason)
        return
    report.action(deps.settings.notification_topic_arn, "notify", Outcome.DONE, subject)
    report.notifications.append(message_id)


def _resolved(transition: Transition, report: ReportBuilder, deps: TtsReachDependencies) -> None:
    settings = deps.settings
    subject = f"[{settings.environment_name}] TTS reach resolved: {settings.alarm_name} is OK"
    change = transition.change
    lines = [
        subject,
        "",
        f"Since: {transition.window.end:%Y-%m-%d %H:%M:%S} UTC",
        f"Reason: {change.state.reason if change else ''}",
        "",
        *links(transition, settings),
    ]
    report.summary = {"state": "OK", "window": transition.window.model_dump(mode="json")}
    if not report.acts:
        report.summary["would_publish"] = {"subject": subject, "message": "\n".join(lines)}
        return
    _publish(subject, "\n".join(lines), transition, report, deps)
