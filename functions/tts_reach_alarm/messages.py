"""What the on-call person reads: the ALARM notification with its evidence and links."""

from __future__ import annotations

from fleet_remediation.contract.events import SuspectWorkerDetail
from fleet_remediation.contract.naming import FunctionName, task_id_from_log_stream
from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.core.console_links import alarm_link, dashboard_link, logs_insights_link
from tts_reach_alarm.analysis import MAX_JOBS, MAX_LISTED_JOBS, job_outcomes_query
from tts_reach_alarm.investigation import Findings
from tts_reach_alarm.transition import Transition


def links(transition: Transition, settings: TtsReachSettings) -> list[str]:
    query = job_outcomes_query(settings.detection.catalog(), failing_only=True)
    window = transition.window
    region, log_group = settings.aws_region, settings.agent_log_group
    return [
        f"Runbook: {settings.runbook(FunctionName.TTS_REACH_ALARM)}",
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
        f"Alarm: {settings.alarm_name} (threshold {settings.detection.tts_reach_alarm.threshold:.0%})",
        f"Window: {window.start:%Y-%m-%d %H:%M} - {window.end:%H:%M} UTC",
        f"TTS reach in window (first audio frames / responses): {reach}; alarm datapoints: {alarm_view}",
        f"Jobs with responses: {len(findings.jobs)} on {c.workers} worker(s); "
        f"failing: {len(findings.failing)}",
        *(
            [f"Note: the window holds more than {MAX_JOBS} jobs; these figures cover the first {MAX_JOBS}."]
            if findings.truncated
            else []
        ),
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
    lines += ["", *links(transition, settings)]
    return subject, "\n".join(lines)
