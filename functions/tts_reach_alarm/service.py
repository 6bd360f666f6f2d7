"""The TTS-reach responder: alarm transition → mode → Logs Insights snapshot → decide → publish once.

On ALARM it finds the jobs that had responses but no first audio frame in the alarm's window,
decides whether they concentrate on one worker, hands a concentrated worker to the drainer (a
suspect-worker event) and sends one notification. On OK it sends one "resolved" notification.
Each action runs at most once per alarm transition (alarm name + state + state timestamp).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import Field, field_validator, model_validator

from fleet_remediation.config import FunctionSettings, join_url, settings_from_environment
from fleet_remediation.console_links import alarm_link, dashboard_link, logs_insights_link
from fleet_remediation.detection import DetectionConfig
from fleet_remediation.errors import InvalidEventError, UnknownAlarmError
from fleet_remediation.idempotency import DynamoDBOnceGuard, OnceGuard
from fleet_remediation.invocation import decide_mode
from fleet_remediation.logs_insights import CloudWatchLogsInsights, LogsInsights
from fleet_remediation.mode import ModeSwitch, SsmModeSwitch
from fleet_remediation.notifier import Notifier, SnsNotifier
from fleet_remediation.observability import metrics
from fleet_remediation.report import Decision, Mode, Outcome, ReportBuilder, Trigger, TriggerKind
from fleet_remediation.suspect_worker import (
    EventBridgePublisher,
    EventPublisher,
    SuspectWorkerDetail,
    TimeWindow,
    task_id_from_log_stream,
)
from fleet_remediation.triggers import (
    ALARM_DETAIL_TYPE,
    AlarmStateChange,
    ManualEvent,
    alarm_trigger,
    is_eventbridge,
    parse_detail,
    parse_eventbridge,
    parse_manual,
)
from tts_reach_alarm.analysis import (
    MAX_LISTED_JOBS,
    Concentration,
    JobOutcome,
    assess_concentration,
    failing_jobs,
    job_outcomes_query,
    job_rooms_query,
    parse_job_outcomes,
)

FUNCTION = "tts_reach_alarm"
RUNBOOK_PATH = "docs/runbooks/tts-reach.md"
# Left for the report, the notification and metrics after the last query.
SAFETY_MARGIN_SECONDS = 5.0
# Alarms are evaluated after their minutes close and logs arrive late: the window reaches back further.
WINDOW_SLACK_MINUTES = 2
HANDLED_STATES = ("ALARM", "OK")


class TtsReachSettings(FunctionSettings):
    aws_region: str = Field(min_length=1, description="Set by Lambda; used for console links.")
    alarm_name: str = Field(min_length=1)
    agent_log_group: str = Field(min_length=1)
    dashboard_name: str = Field(min_length=1)
    event_bus_name: str = Field(default="default", min_length=1)
    idempotency_table_name: str = Field(min_length=1)
    detection: DetectionConfig = DetectionConfig()
    query_timeout_seconds: float = Field(default=20.0, gt=0, le=300)

    @field_validator("detection", mode="before")
    @classmethod
    def _parse_detection_json(cls, value: Any) -> Any:
        return json.loads(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _timeouts_in_order(self) -> TtsReachSettings:
        # Two queries in sequence, then the report: all inside the function's own timeout.
        if 2 * self.query_timeout_seconds + SAFETY_MARGIN_SECONDS >= self.function_timeout_seconds:
            raise ValueError(
                f"query_timeout_seconds ({self.query_timeout_seconds}) x 2 + {SAFETY_MARGIN_SECONDS}s must "
                f"be below function_timeout_seconds ({self.function_timeout_seconds})"
            )
        return self

    @property
    def window_minutes(self) -> int:
        return self.detection.tts_reach_alarm.analysis_window_minutes + WINDOW_SLACK_MINUTES


class TtsReachManualEvent(ManualEvent):
    """Run the ALARM analysis by hand, e.g. ``{"dry_run": true, "window_end": "2026-09-15T17:50:00Z"}``."""

    window_end: datetime | None = None
    window_minutes: int | None = Field(default=None, ge=1, le=24 * 60)


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
            mode_switch=SsmModeSwitch(settings.mode_parameter_name),
            notifier=SnsNotifier(settings.notification_topic_arn),
            events=EventBridgePublisher(settings.event_bus_name),
            insights=CloudWatchLogsInsights(),
            once=DynamoDBOnceGuard(settings.idempotency_table_name),
        )


@dataclass(frozen=True)
class Transition:
    """What to handle: an alarm state (ALARM or OK) over a window, or a manual ALARM analysis."""

    state: str
    window: TimeWindow
    change: AlarmStateChange | None
    reach_datapoints: tuple[float, ...] = ()
    manual: TtsReachManualEvent | None = None

    def once_key(self, action: str) -> dict[str, str]:
        assert self.change is not None  # manual runs are deliberate and not deduplicated
        return {
            "alarm": self.change.alarm_name,
            "state": self.change.state.value,
            "timestamp": self.change.state.timestamp.isoformat(),
            "action": action,
        }


def _recent_datapoints(envelope: EventBridgeModel) -> tuple[float, ...]:
    """The alarm's own datapoints (1 = a breaching window), from ``state.reasonData`` (a JSON
    string), if present."""
    detail = envelope.detail
    state = detail.get("state") if isinstance(detail, dict) else None
    raw = state.get("reasonData") if isinstance(state, dict) else None
    try:
        points = json.loads(raw).get("recentDatapoints", []) if isinstance(raw, str) else []
        return tuple(float(p) for p in points)
    except (ValueError, TypeError, AttributeError):
        return ()


def parse_transition(event: Any, settings: TtsReachSettings, now: datetime) -> tuple[Trigger, Transition]:
    if is_eventbridge(event):
        envelope = parse_eventbridge(event)
        if envelope.detail_type != ALARM_DETAIL_TYPE:
            raise InvalidEventError(f"tts_reach_alarm does not handle '{envelope.detail_type}' events")
        change = parse_detail(envelope, AlarmStateChange)
        if change.alarm_name != settings.alarm_name:
            raise UnknownAlarmError(
                f"alarm {change.alarm_name!r} is not this environment's TTS reach alarm "
                f"({settings.alarm_name!r})",
                resource=change.alarm_name,
            )
        end = change.state.timestamp.astimezone(UTC)
        window = TimeWindow(start=end - timedelta(minutes=settings.window_minutes), end=end)
        return alarm_trigger(change), Transition(
            change.state.value, window, change, _recent_datapoints(envelope)
        )
    manual = parse_manual(event, TtsReachManualEvent)
    end = (manual.window_end or now).astimezone(UTC)
    minutes = manual.window_minutes or settings.window_minutes
    trigger = Trigger(kind=TriggerKind.MANUAL, source="invoke", detail=manual.model_dump(mode="json"))
    window = TimeWindow(start=end - timedelta(minutes=minutes), end=end)
    return trigger, Transition("ALARM", window, None, manual=manual)


@dataclass(frozen=True)
class Findings:
    jobs: list[JobOutcome]
    failing: list[JobOutcome]
    rooms: dict[str, dict[str, str]]
    concentration: Concentration

    @property
    def reach(self) -> float | None:
        responses = sum(job.responses for job in self.jobs)
        return sum(job.first_frames for job in self.jobs) / responses if responses else None


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
    deadline = started + remaining_seconds - SAFETY_MARGIN_SECONDS
    if transition.state == "OK":
        _resolved(transition, report, deps)
        return
    findings = investigate(transition.window, deps, deadline)
    _record_findings(findings, transition, report)
    suspect = _suspect_detail(findings, transition, settings)
    subject, message = compose_alarm_notification(findings, transition, suspect, settings)
    if not report.acts:
        report.summary["would_publish"] = {"subject": subject, "message": message}
        if suspect:
            report.summary["would_emit"] = suspect.model_dump(mode="json")
        return
    event_id = _emit_suspect(suspect, transition, report, deps) if suspect else None
    if event_id:
        message += f"\nSuspect-worker event sent to the drainer: {event_id}"
    _publish(subject, message, transition, report, deps)


def investigate(window: TimeWindow, deps: TtsReachDependencies, deadline: float) -> Findings:
    settings = deps.settings
    catalog = settings.detection.catalog()
    query_deadline = min(deadline, time.monotonic() + settings.query_timeout_seconds)
    result = deps.insights.run_query(
        settings.agent_log_group, job_outcomes_query(catalog), window.start, window.end, query_deadline
    )
    jobs = parse_job_outcomes(result.rows)
    failing = failing_jobs(jobs)
    rooms: dict[str, dict[str, str]] = {}
    if failing:
        listed = [job.job_id for job in failing[:MAX_LISTED_JOBS]]
        # A job's "received job request" line may predate the window by up to a lesson's length.
        lookback = window.start - timedelta(hours=3)
        query_deadline = min(deadline, time.monotonic() + settings.query_timeout_seconds)
        found = deps.insights.run_query(
            settings.agent_log_group, job_rooms_query(listed), lookback, window.end, query_deadline
        )
        rooms = {row["job_id"]: row for row in found.rows if row.get("job_id")}
    alarm = settings.detection.tts_reach_alarm
    concentration = assess_concentration(
        jobs, alpha=alarm.concentration_alpha, min_failed_jobs=alarm.min_failed_jobs
    )
    return Findings(jobs, failing, rooms, concentration)


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
    }
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


def _links(transition: Transition, settings: TtsReachSettings) -> list[str]:
    query = job_outcomes_query(settings.detection.catalog(), failing_only=True)
    window = transition.window
    region, log_group = settings.aws_region, settings.agent_log_group
    return [
        f"Runbook: {join_url(settings.runbook_base_url, RUNBOOK_PATH)}",
        f"Alarm: {alarm_link(region, settings.alarm_name)}",
        "Logs Insights (failing jobs): "
        + logs_insights_link(region, [log_group], query, window.start, window.end),
        f"Dashboard: {dashboard_link(region, settings.dashboard_name)}",
    ]


def compose_alarm_notification(
    findings: Findings,
    transition: Transition,
    suspect: SuspectWorkerDetail | None,
    settings: TtsReachSettings,
) -> tuple[str, str]:
    c = findings.concentration
    where = f"worker {suspect.task_id}" if suspect else "fleet-wide"
    subject = (
        f"[{settings.environment_name}] TTS reach ALARM: {len(findings.failing)} lesson(s) without "
        f"first audio, {where}"
    )
    reach = "n/a" if findings.reach is None else f"{findings.reach:.1%}"
    alarm_view = ", ".join(f"{p:.3f}" for p in transition.reach_datapoints) or "n/a"
    window = transition.window
    lines = [
        subject,
        "",
        f"Alarm: {settings.alarm_name} ({settings.detection.tts_reach_alarm.describe()})",
        f"Window: {window.start:%Y-%m-%d %H:%M} - {window.end:%H:%M} UTC",
        f"TTS reach in window (first audio frames / responses): {reach}; "
        f"alarm datapoints (1 = breaching window): {alarm_view}",
        f"Jobs with responses: {len(findings.jobs)} on {c.workers} worker(s); "
        f"failing: {len(findings.failing)}",
        "",
        f"Verdict: {c.reason}",
    ]
    if suspect:
        lines += [
            f"Suspect worker: task {suspect.task_id} (log stream {suspect.log_stream})",
            f"Evidence: p = {suspect.p_value:.3g} that some worker of {c.workers} would look this bad by "
            "chance (exact min-p hypergeometric test); the drainer will cordon and drain it.",
        ]
    else:
        lines.append("Looks fleet-wide (e.g. TTS provider outage): no worker is drained; investigate.")
    lines += ["", "Failing lessons (responses but no first audio frame):"]
    for job in findings.failing[:MAX_LISTED_JOBS]:
        room = findings.rooms.get(job.job_id, {})
        lines.append(
            f"  - job {job.job_id} room {room.get('room', '?')} ({room.get('room_id', '?')}) on "
            f"{task_id_from_log_stream(job.log_stream)}: {job.responses} responses, 0 first frames"
        )
    if len(findings.failing) > MAX_LISTED_JOBS:
        lines.append(f"  ... and {len(findings.failing) - MAX_LISTED_JOBS} more")
    lines += ["", *_links(transition, settings)]
    return subject, "\n".join(lines)


def _once(
    action: str, transition: Transition, deps: TtsReachDependencies, run: Callable[[], dict[str, Any]]
) -> tuple[dict[str, Any], bool]:
    if transition.change is None:
        return run(), False
    return deps.once.run_once(transition.once_key(action), run)


def _emit_suspect(
    detail: SuspectWorkerDetail, transition: Transition, report: ReportBuilder, deps: TtsReachDependencies
) -> str | None:
    result, replayed = _once(
        "suspect-worker", transition, deps, lambda: {"event_id": deps.events.put_suspect_worker(detail)}
    )
    outcome = Outcome.ALREADY_DONE if replayed else Outcome.DONE
    report.action(detail.log_stream, "emit-suspect-worker", outcome, f"event {result['event_id']}")
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
        *_links(transition, settings),
    ]
    report.summary = {"state": "OK", "window": transition.window.model_dump(mode="json")}
    if not report.acts:
        report.summary["would_publish"] = {"subject": subject, "message": "\n".join(lines)}
        return
    _publish(subject, "\n".join(lines), transition, report, deps)
