"""What the scheduled drill tells the channel: the verdict with its timeline, or why no drill ran
(a refusal or a failure is a message too, so a regression is found on the drill's day)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from fleet_remediation.contract.drill_schedule import ANSWERS
from fleet_remediation.contract.naming import DrillFunctionName, function_mode_parameter_name
from fleet_remediation.contract.settings import ScheduledDrillSettings
from fleet_remediation.core import incidents, messages
from fleet_remediation.core.report_model import RunFacts
from fleet_remediation.core.routing import Routed
from fleet_remediation.domain.drill_steps import DrillRefusedError, DrillRun
from scheduled_drill.dependencies import DrillDependencies

if TYPE_CHECKING:
    from scheduled_drill.work import DrillWork

SCHEDULED_DRILL = DrillFunctionName.SCHEDULED_DRILL


@dataclass
class Said:
    """The message's own words: what was done, what a dry run would have done, the evidence."""

    acted: str
    would: str
    why: list[str] = field(default_factory=list)
    severity: messages.Severity = messages.Severity.INFO
    resources: list[str] = field(default_factory=list)


def compose(
    work: DrillWork, facts: RunFacts, deps: DrillDependencies, routed: Routed[Any]
) -> messages.Notification:
    settings = deps.settings
    said = _said(work, settings)
    problems = [*(work.done.problems if work.done else [])]
    return messages.Notification(
        environment=settings.environment_name,
        function=SCHEDULED_DRILL,
        agent_service=settings.drilled_service,
        incident_id=incidents.run_incident_id(
            settings.environment_name, SCHEDULED_DRILL, _moment(routed, deps)
        ),
        severity=messages.Severity.WARNING if problems else said.severity,
        mode=facts.mode,
        status=facts.status,
        headline=messages.mode_headline(facts.mode, acted=said.acted, would=said.would),
        why=[f"Trigger: {routed.trigger.kind.value} ({routed.trigger.source})", *said.why],
        counts=messages.Counts.from_report(facts),
        errors=[*(f"{e.code}: {e.message}" for e in facts.errors), *problems],
        undo=[_stop_drills(settings.environment_name, settings.aws_region)],
        links=messages.function_links(
            region=settings.aws_region,
            environment=settings.environment_name,
            function=SCHEDULED_DRILL,
            runbook=settings.runbook(SCHEDULED_DRILL),
            invocation_id=facts.invocation_id,
            around=facts.started_at,
        ),
        resources=said.resources,
        invocation_id=facts.invocation_id,
    )


def _said(work: DrillWork, settings: ScheduledDrillSettings) -> Said:
    drill = settings.drill
    if work.error is not None:
        # A marker that could not be written is a drill that failed to start, not a refusal.
        refused = isinstance(work.error, DrillRefusedError) and work.error.code != "DrillNotStarted"
        text = f"drill {'refused' if refused else 'failed'}: {work.error.code}"
        why = [f"{work.error.code}: {work.error.message}"]
        return Said(f"scheduled {text}", f"drilled, but the {text}", why, messages.Severity.WARNING)
    if work.done is None:
        task = work.plan.target if work.plan else None
        text = f"drilled task {task.task_id if task else '?'} ({drill.fault.value}, {drill.minutes} min)"
        return Said(text, text, resources=[task.task_arn] if task else [])
    return _verdict(work.done.run, work.done.missed_polls, settings)


def _verdict(run: DrillRun, missed_polls: int, settings: ScheduledDrillSettings) -> Said:
    drill = settings.drill
    answerer, _ = ANSWERS[drill.fault]
    after = run.answered_after()
    on = f"{drill.fault.value} on task {run.target.task_id}"
    if run.answered is not None and after is not None:
        by = f"{run.answered.function} {run.answered.action}"
        said = Said(f"scheduled drill passed: {on} answered by {by} after {after:.0f} s", "")
    else:
        text = f"scheduled drill FAILED: {on}, no answer from {answerer.value} in {drill.minutes} min"
        said = Said(text, "", severity=messages.Severity.WARNING)
    said.would, said.resources = said.acted, [run.target.task_arn]
    if run.mode == "dry-run":
        said.why.append(f"{settings.drilled_service} is in dry-run: judged on what it would have done")
    said.why.append(
        f"{run.started.isoformat(timespec='seconds')} fault in effect (drill {run.marker.drill_id})"
    )
    said.why += [
        f"{e.at.isoformat(timespec='seconds')} {e.function} {e.kind} {e.action} {e.target}"
        for e in run.seen[:10]
    ]
    said.why.append("marker removed" if run.marker_removed else "marker NOT removed: it ends by itself")
    if missed_polls:
        said.why.append(f"{missed_polls} read(s) of the record failed")
    return said


def _moment(routed: Routed[Any], deps: DrillDependencies) -> datetime:
    scheduled = routed.trigger.detail.get("time")
    return datetime.fromisoformat(scheduled) if scheduled else deps.clock()


def _stop_drills(environment: str, region: str | None) -> messages.Undo:
    """The scheduled drills' own switch (the environment's stays as it is)."""
    name = function_mode_parameter_name(environment, SCHEDULED_DRILL)
    option = f" --region {region}" if region else ""
    return messages.Undo(
        label="Stop the scheduled drills (their own switch)",
        command=f"aws ssm put-parameter --overwrite --name {name} --value off{option}",
    )
