"""What the on-call person reads: the ALARM analysis (evidence, failing sessions, the suspect worker,
how to keep the drainer off it, links) and the resolution, in the shared message model."""

from __future__ import annotations

from fleet_remediation.contract.events import SuspectWorkerDetail
from fleet_remediation.contract.naming import FunctionName, task_id_from_log_stream
from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.core import incidents, messages
from fleet_remediation.core.console_links import alarm_link, ecs_task_link, logs_insights_link
from fleet_remediation.core.report_model import RunFacts
from tts_reach_alarm.analysis import MAX_JOBS, MAX_LISTED_JOBS, NOT_NAMED, Verdict, job_outcomes_query
from tts_reach_alarm.investigation import Findings
from tts_reach_alarm.transition import Transition

# CloudWatch's own limit for an alarm's state reason; a longer one is not from CloudWatch.
ALARM_REASON_LIMIT = 1023

FUNCTION = FunctionName.TTS_REACH_ALARM


def incident_id(transition: Transition, settings: TtsReachSettings) -> str:
    """The alarm's incident; a manual analysis is named after its window's end."""
    if transition.change is not None:
        return incidents.transition_incident_id(settings.environment_name, transition.change)
    return incidents.alarm_incident_id(settings.environment_name, settings.alarm_name, transition.window.end)


def links(
    transition: Transition, settings: TtsReachSettings, task_id: str | None = None
) -> list[messages.Link]:
    query = job_outcomes_query(settings.detection.catalog(), failing_only=True)
    window = transition.window
    region, log_group = settings.aws_region, settings.agent_log_group
    found = [
        messages.Link(label="Runbook", url=settings.runbook(FUNCTION)),
        messages.Link(label="Alarm", url=alarm_link(region, settings.alarm_name)),
        messages.Link(
            label="Logs Insights (failing jobs)",
            url=logs_insights_link(region, [log_group], query, window.start, window.end),
        ),
    ]
    if task_id and settings.ecs_cluster:
        found.append(
            messages.Link(label="ECS task", url=ecs_task_link(region, settings.ecs_cluster, task_id))
        )
    found += messages.function_links(
        region=region,
        environment=settings.environment_name,
        function=FUNCTION,
        runbook=settings.runbook(FUNCTION),
        invocation_id=None,
        around=window.end,
        agent_service=settings.agent_service,
    )[1:]  # the runbook is already first
    return found


_WHERE = {Verdict.FLEET_WIDE: "fleet-wide", Verdict.INCONCLUSIVE: "no single worker to blame"}


def _headlines(findings: Findings, suspect: SuspectWorkerDetail | None) -> tuple[str, str, str]:
    """(enforce, dry run, off), in plain words: how many sessions heard nothing, where, and what was
    done. Subjects stay under SNS's 100 characters, so they name the task by its first 8
    characters (the full id is in the evidence)."""
    count = len(findings.failing)
    silent = f"{count} session{'' if count == 1 else 's'} had no TTS audio"
    if suspect:
        short = suspect.task_id[:8]
        return (
            f"{silent}, mostly worker {short}; sent to the drainer",
            f"sent worker {short} to the drainer ({silent})",
            f"{silent}, mostly worker {short}; drainer not asked",
        )
    c = findings.concentration
    where = f"group event: {c.group.label}" if c.group else _WHERE.get(c.verdict, c.verdict.value)
    return (
        f"{silent} ({where}); nothing drained",
        f"only notified ({silent}, {where})",
        f"{silent} ({where})",
    )


def _evidence(
    findings: Findings,
    transition: Transition,
    suspect: SuspectWorkerDetail | None,
) -> list[str]:
    """Why, in words: what the sessions lived through, where it concentrates, what follows."""
    c, window = findings.concentration, transition.window
    reach = "n/a" if findings.reach is None else f"{findings.reach:.0%}"
    why = [
        f"{len(findings.failing)} of {len(findings.jobs)} session(s) with agent replies between "
        f"{window.start:%H:%M} and {window.end:%H:%M} UTC heard no TTS audio; {reach} of replies "
        f"reached audio, on {c.workers} worker(s)",
    ]
    if transition.recheck and transition.change is not None:
        why.insert(
            0,
            f"Re-check of the incident open since {transition.change.state.timestamp:%H:%M} UTC: "
            "its first analysis named no worker",
        )
    if findings.truncated:
        why.append(f"The window holds more than {MAX_JOBS} jobs: these figures cover the first {MAX_JOBS}.")
    if suspect:
        why.append(f"They concentrate on worker task {suspect.task_id}, more than chance allows")
    elif c.group is not None:
        why.append(
            f"Shared by a group of tasks, not one worker's: {c.group.describe()}; investigate the group."
        )
    elif c.verdict is Verdict.FLEET_WIDE:
        why.append("Looks fleet-wide (e.g. a TTS provider outage): no worker is drained; investigate.")
    elif c.reason.startswith(NOT_NAMED):
        why.append(f"No worker is named or drained: {c.reason.removeprefix(NOT_NAMED)}.")
    else:
        why.append("Too little evidence to blame a worker or the fleet: no worker is drained; investigate.")
    return why


def _figures(
    findings: Findings,
    transition: Transition,
    suspect: SuspectWorkerDetail | None,
    settings: TtsReachSettings,
) -> list[str]:
    """The alarm's formula, its datapoints and the test's p-value: for whoever checks the maths."""
    alarm_view = ", ".join(messages.figure(p) for p in transition.reach_datapoints) or "n/a"
    found = [
        f"Alarm {settings.alarm_name}: {settings.detection.tts_reach_alarm.describe()}",
        f"Alarm datapoints (1 = breaching window): {alarm_view}",
        f"Window {transition.window.start:%Y-%m-%d %H:%M} - {transition.window.end:%H:%M} UTC",
        f"Verdict: {findings.concentration.reason}",
    ]
    if suspect:
        found.append(
            f"Suspect log stream {suspect.log_stream}: {messages.p_value(suspect.p_value)} that some worker "
            "would look this bad by chance (exact min-p hypergeometric test)"
        )
    return found


def _silent_sessions(findings: Findings, event_id: str | None) -> list[str]:
    details = []
    for job in findings.failing[:MAX_LISTED_JOBS]:
        room = findings.rooms.get(job.job_id, {})
        details.append(
            f"job {job.job_id} room {room.get('room', '?')} ({room.get('room_id', '?')}) on "
            f"{task_id_from_log_stream(job.log_stream)}: {job.responses} responses, 0 first frames"
        )
    if event_id:
        details.append(f"Suspect-worker event sent to the drainer: {event_id}")
    return details


def _undo(settings: TtsReachSettings, suspect: SuspectWorkerDetail | None) -> list[messages.Undo]:
    stop = messages.stop_function_undo(
        settings.environment_name, FunctionName.WORKER_DRAINER, settings.aws_region
    )
    if not suspect:
        return [stop]
    keep_off = messages.drainer_undo(
        f"Keep the drainer off worker {suspect.task_id} (undrain it)",
        settings.environment_name,
        settings.agent_service,
        "undrain",
        suspect.task_id,
        settings.aws_region,
    )
    return [keep_off, stop]


def compose_alarm_notification(
    findings: Findings,
    transition: Transition,
    suspect: SuspectWorkerDetail | None,
    settings: TtsReachSettings,
    facts: RunFacts,
    event_id: str | None = None,
) -> messages.Notification:
    acted, would, off = _headlines(findings, suspect)
    return messages.Notification(
        environment=settings.environment_name,
        function=FUNCTION,
        agent_service=settings.agent_service,
        incident_id=incident_id(transition, settings),
        severity=messages.Severity.CRITICAL,
        mode=facts.mode,
        status=facts.status,
        headline=messages.mode_headline(facts.mode, acted=acted, would=would, off=off),
        why=_evidence(findings, transition, suspect),
        details=_figures(findings, transition, suspect, settings) + _silent_sessions(findings, event_id),
        counts=messages.Counts.from_report(facts),
        errors=[f"{e.code}: {e.message}" for e in facts.errors],
        undo=_undo(settings, suspect),
        links=links(transition, settings, suspect.task_id if suspect else None),
        resources=[suspect.log_stream] if suspect else [],
        invocation_id=facts.invocation_id,
    )


def compose_resolved_notification(
    transition: Transition, settings: TtsReachSettings, facts: RunFacts
) -> messages.Notification:
    fact = f"TTS reach resolved: {settings.alarm_name} is OK"
    change = transition.change
    return messages.Notification(
        environment=settings.environment_name,
        function=FUNCTION,
        agent_service=settings.agent_service,
        incident_id=incident_id(transition, settings),
        severity=messages.Severity.INFO,
        mode=facts.mode,
        status=facts.status,
        headline=messages.mode_headline(facts.mode, acted=fact, would=f"taken no action ({fact})", off=fact),
        why=[
            f"Since {transition.window.end:%Y-%m-%d %H:%M:%S} UTC",
            f"Reason: {change.state.reason[:ALARM_REASON_LIMIT] if change else 'manual'}",
        ],
        counts=messages.Counts.from_report(facts),
        errors=[f"{e.code}: {e.message}" for e in facts.errors],
        links=links(transition, settings),
        invocation_id=facts.invocation_id,
    )
