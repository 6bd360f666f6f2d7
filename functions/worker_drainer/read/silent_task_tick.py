"""The scheduled tick's per-task TTS reach (docs/decisions/0010-per-task-detection.md).

A fleet-wide rate cannot see one silent task in a thousand. So each scheduled tick reads one row per
task over the last few minutes and tests each task's first-audio timeouts against its own volume
and the fleet's rate (``task_reach``). The most significant suspect becomes the tick's suspect
worker: the ladder cordons it under every guardrail a suspect-worker event has, and undoes the
cordon only on TTS evidence. A fleet-wide verdict names nobody.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import timedelta

from fleet_remediation.adapters.scan_budget import note_look_error
from fleet_remediation.contract.events import SuspectWorkerDetail, TimeWindow
from fleet_remediation.contract.naming import task_id_from_log_stream
from fleet_remediation.contract.settings import DrainerSettings
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.notes import Noted
from fleet_remediation.core.report_model import TriggerKind
from worker_drainer.adapters.ecs_model import EcsTask
from worker_drainer.decide.task_reach import TaskFacts, TaskReachAssessment, TaskVerdict
from worker_drainer.dependencies import DrainerDependencies
from worker_drainer.events import DrainerTrigger
from worker_drainer.read.job_evidence import query_deadline
from worker_drainer.read.task_reach_query import tick_verdict

# What a suspect found by the tick names as its alarm, in messages and the report.
PER_TASK_REACH = "per-task TTS reach"
# The trigger's detail key of a group event that holds the service's TTS drains.
GROUP_EVENT = "group_event"


def during_silent_task(
    parsed: DrainerTrigger,
    deps: DrainerDependencies,
    tasks: Sequence[EcsTask],
    noted: Noted,
    deadline: float,
) -> DrainerTrigger:
    """``parsed`` with the silent task as its suspect, when a scheduled tick finds one; a
    suspect-worker event re-checked against the same verdict (fleet-wide and group rules, and a
    group forming: a task that began failing since the last tick beside the suspect). A group event
    is recorded in the ledger (``GROUP_EVENT`` in the trigger's detail): while it holds, no cordon or
    stop starts (``DrainerStages.hold``), and the TTS cordons of its tasks are undone. An unreadable result is
    a report error and leaves the trigger as it was (a recorded group event still holds)."""
    kind = parsed.trigger.kind
    tick = kind is TriggerKind.SCHEDULE and parsed.suspect is None
    if not tick and kind is not TriggerKind.SUSPECT_WORKER:
        return parsed
    settings, reach = deps.settings, deps.settings.drainer.task_reach
    now = deps.clock()
    start = now - timedelta(minutes=reach.window_minutes)
    try:
        held = deps.ledger.group_event(now)
        earlier = deps.ledger.tick_memory.earlier(now)
        rows = deps.worker_logs.task_reach(start, now, query_deadline(deps, deadline))
    except RemediationError as exc:
        note_look_error(noted, exc)
        return parsed
    facts = [task_facts(task, settings) for task in tasks]
    found = tick_verdict(rows, reach, facts, now, earlier)
    if tick:
        _remember(found, deps, noted)
    parsed = _with_group(parsed, found, held, deps)
    if not tick or found.shared or not found.suspects or GROUP_EVENT in parsed.trigger.detail:
        return parsed
    top = found.suspects[0]
    suspect = _suspect(top, settings, TimeWindow(start=start, end=now))
    parsed.trigger.detail["silent_task"] = suspect.task_id
    return DrainerTrigger(parsed.trigger, True, suspect=suspect, group_members=parsed.group_members)


def _remember(found: TaskReachAssessment, deps: DrainerDependencies, noted: Noted) -> None:
    """The tick's failing tasks for the next tick's sightings; unwritten, the next tick sees each
    suspect for the first time again (a tick later, never sooner)."""
    reach = deps.settings.drainer.task_reach
    try:
        deps.ledger.tick_memory.remember(found.failing, deps.clock(), reach.window_minutes * 60)
    except RemediationError as exc:
        note_look_error(noted, exc)


def _with_group(
    parsed: DrainerTrigger, found: TaskReachAssessment, held: str | None, deps: DrainerDependencies
) -> DrainerTrigger:
    """``parsed`` told the verdict: a group seen now is recorded (its hold renewed) and its tasks
    named for the undo of their cordons; a group forming holds this run's drains."""
    detail, reach = parsed.trigger.detail, deps.settings.drainer.task_reach
    detail["task_reach"] = found.reason
    members: frozenset[str] = frozenset()
    if found.group is not None:
        held = found.group.describe()
        deps.ledger.hold_group_event(held, deps.clock(), reach.group_hold_minutes * 60)
        members = frozenset(task_id_from_log_stream(stream) for stream in found.group.members)
    if held is not None:
        detail[GROUP_EVENT] = held
    elif found.spreading and parsed.suspect is not None:
        # The tick names no suspect then; a suspect-worker event is held the same way.
        detail[GROUP_EVENT] = f"a group may be forming ({found.reason}): this suspect drains nobody"
    return dataclasses.replace(parsed, group_members=members)


def task_facts(task: EcsTask, settings: DrainerSettings) -> TaskFacts:
    return TaskFacts(
        settings.log_stream_for(task.task_id),
        task.availability_zone,
        task.task_definition_arn,
        task.started_at,
    )


def _suspect(verdict: TaskVerdict, settings: DrainerSettings, window: TimeWindow) -> SuspectWorkerDetail:
    return SuspectWorkerDetail(
        environment=settings.environment_name,
        agent_service=settings.agent_service,
        log_stream=verdict.log_stream,
        task_id=task_id_from_log_stream(verdict.log_stream),
        alarm_name=PER_TASK_REACH,
        p_value=verdict.p_value,
        window=window,
        evidence={
            "responses": verdict.responses,
            "timeouts": verdict.timeouts,
            "baseline_rate": verdict.baseline_rate,
        },
    )
