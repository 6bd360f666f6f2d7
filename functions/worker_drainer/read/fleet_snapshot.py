"""The snapshot the decision needs, read once per invocation: the service's running tasks (and the
check that an event's task is one of them), the slow-VAD statistics per worker, each draining
task's active jobs and rooms, the over-age rooms of candidates, TTS evidence for suspect workers,
capacity debts and the service's desired count."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from fleet_remediation.adapters.scan_budget import note_look_error
from fleet_remediation.contract.events import SuspectWorkerDetail
from fleet_remediation.core.errors import ChatRequestRefusedError, RemediationError
from fleet_remediation.core.message_model import p_value
from fleet_remediation.core.notes import Noted
from fleet_remediation.domain.reaping import RoomDecision, plan_reap
from worker_drainer.adapters.ecs_model import EcsTask
from worker_drainer.decide.attribution import FleetAssessment, assess_fleet
from worker_drainer.decide.plan_model import ManualRequest, Snapshot
from worker_drainer.decide.recovery_evidence import TtsEvidence
from worker_drainer.decide.task_tags import STOP_REASON_PREFIX, Cause, State, TaskMarks, marks_of
from worker_drainer.dependencies import DrainerDependencies
from worker_drainer.events import DrainerTrigger
from worker_drainer.read.group_event_hold import group_event_refusal
from worker_drainer.read.job_evidence import RoomsSeen, query_deadline, read_rooms, read_tts_evidence
from worker_drainer.read.manual_targets import check_absent_target, check_running_target, running_target
from worker_drainer.read.silent_task_tick import GROUP_EVENT
from worker_drainer.read.target_checks import (
    ServiceIdentity,
    check_manual_target,
    validate_suspect_running,
)


def read_snapshot(
    parsed: DrainerTrigger,
    deps: DrainerDependencies,
    tasks: Sequence[EcsTask],
    noted: Noted,
    deadline: float,
    identity: ServiceIdentity,
) -> tuple[Snapshot, int]:
    """Everything the decision needs over the service's running ``tasks``, and how many LiveKit
    calls reading it took. Raises ``UntrustedEventError`` (before anything else is read) when the
    event names a task that is not one of them in our account, region and cluster."""
    now = deps.clock()
    parsed = _check_targets(parsed, tasks, deps, noted, identity)
    marks = marks_of(tasks)  # the only place the snapshot's tasks' tags are read
    marked = any(m.marked for m in marks.values())
    fleet = _assess(parsed, deps, tasks, noted, now, deadline) if parsed.start_new or marked else None
    candidates = _candidates(tasks, marks, fleet) if parsed.start_new else []
    draining = [t for t in tasks if marks[t.task_id].state is State.DRAINING]
    active_jobs = {t.task_id: deps.worker_probe.active_jobs(t) for t in draining}
    guards = any(rule.protected for rule in deps.settings.reaper.policy.rules)
    rooms: RoomsSeen | None = None
    livekit_calls = 0
    if candidates or any(active_jobs[t.task_id] is None or guards for t in draining):
        rooms, livekit_calls = read_rooms(tasks, deps, noted, now, deadline, [*candidates, *draining])
    snapshot = Snapshot(
        now=now,
        tasks=tasks,
        fleet=fleet,
        rooms_to_reap=_rooms_to_reap(candidates, rooms, deps, now),
        active_jobs=_active_jobs(active_jobs, rooms),
        capacity_debts=deps.ledger.capacity_debts(),
        start_new=parsed.start_new,
        manual=_manual_request(parsed),
        suspect_task_id=parsed.suspect.task_id if parsed.suspect else None,
        guards_protected_rooms=guards,
        protected_rooms=_protected(draining, rooms, deps),
        tts_evidence=_tts_evidence(tasks, marks, deps, noted, now, deadline),
        marks=marks,
        shared_failures=_shared_failures(parsed, marks, deps, now),
    )
    return dataclasses.replace(snapshot, desired_count=_desired_count(snapshot, deps, noted)), livekit_calls


def _shared_failures(
    parsed: DrainerTrigger, marks: Mapping[str, TaskMarks], deps: DrainerDependencies, now: datetime
) -> dict[str, str]:
    """The tasks of the group event seen now that were cordoned (or reaped) one by one on TTS
    evidence before it was seen, within its hold: each with why its cordon is undone."""
    group = parsed.trigger.detail.get(GROUP_EVENT)
    recent = now - timedelta(minutes=deps.settings.drainer.task_reach.group_hold_minutes)
    undone = {}
    for task_id in parsed.group_members & marks.keys():
        mark = marks[task_id]
        one_by_one = mark.marked and mark.cause is Cause.TTS_SUSPECT
        if one_by_one and mark.since is not None and mark.since >= recent:
            undone[task_id] = f"undone: its failure is shared, not its own — TTS {group}"
    return undone


def _manual_request(parsed: DrainerTrigger) -> ManualRequest | None:
    manual = parsed.manual
    if manual is None:
        return None
    return ManualRequest(manual.action, manual.reference.task_id if manual.reference else None)


def _candidates(
    tasks: Sequence[EcsTask], marks: Mapping[str, TaskMarks], fleet: FleetAssessment | None
) -> list[EcsTask]:
    """Healthy tasks the fleet assessment found degraded: where a new ladder may start."""
    if fleet is None:
        return []
    return [t for t in tasks if marks[t.task_id].state is State.HEALTHY and _degraded(fleet, t.task_id)]


def _check_targets(
    parsed: DrainerTrigger,
    tasks: Sequence[EcsTask],
    deps: DrainerDependencies,
    noted: Noted,
    identity: ServiceIdentity,
) -> DrainerTrigger:
    """``parsed``, or without its suspect when the drainer itself already stopped that worker (a
    later page's analysis still sees its failed sessions): nothing left to do, so not an error."""
    suspect, manual = parsed.suspect, parsed.manual
    reference = manual.reference if manual else None
    if manual is not None and reference is not None:
        check_manual_target(reference, identity, tasks)
        _check_manual_task(manual.action, reference.task_id, tasks, deps)
        if manual.chat is not None and manual.action == "drain":
            _check_no_group_event(deps)
    if suspect is None or suspect.task_id in {t.task_id for t in tasks}:
        return parsed
    stopped = _stopped_by_drainer(suspect.task_id, deps)
    evidence = {"log_stream": suspect.log_stream, "p_value": suspect.p_value}
    if stopped is not None:
        reason = f"suspect worker already stopped by the drainer ({stopped.stopped_reason})"
        noted.skip(suspect.task_id, reason, **evidence)
        return dataclasses.replace(parsed, suspect=None, start_new=False)
    noted.skip(
        suspect.task_id,
        f"suspect worker is not a RUNNING task of service {deps.settings.ecs_service} "
        "(already stopped, or elsewhere)",
        **evidence,
    )
    validate_suspect_running(suspect, tasks, deps.settings.ecs_service)
    return parsed


def _check_manual_task(
    action: str, task_id: str, tasks: Sequence[EcsTask], deps: DrainerDependencies
) -> None:
    """A manual drain or undrain names a task the drainer can act on (``manual_targets``)."""
    task = running_target(tasks, task_id)
    if task is None:
        check_absent_target(task_id, deps, action)
    else:
        check_running_target(task, TaskMarks.read(task.tags), action)


def _check_no_group_event(deps: DrainerDependencies) -> None:
    service = deps.settings.agent_service
    refusal = group_event_refusal(deps.ledger, service, deps.clock())
    if refusal is not None:
        raise ChatRequestRefusedError(f"chat drain refused: {refusal}", resource=service)


def _stopped_by_drainer(task_id: str, deps: DrainerDependencies) -> EcsTask | None:
    """The task, when ECS still describes it as a stopped task of our service that the drainer
    stopped; None otherwise, or when that cannot be read (the event is then refused as before)."""
    try:
        task = deps.ecs.describe_task(task_id)
    except RemediationError:
        return None
    if task is None or task.running or task.group != f"service:{deps.settings.ecs_service}":
        return None
    return task if task.stopped_reason.startswith(STOP_REASON_PREFIX) else None


def _degraded(fleet: FleetAssessment, task_id: str) -> bool:
    worker = fleet.for_task(task_id)
    return worker is not None and worker.degraded


def _assess(
    parsed: DrainerTrigger,
    deps: DrainerDependencies,
    tasks: Sequence[EcsTask],
    noted: Noted,
    now: datetime,
    deadline: float,
) -> FleetAssessment | None:
    """The window's slow-VAD statistics per worker, judged against the fleet (None: logs unknown)."""
    policy = deps.settings.drainer.policy
    window_start = now - timedelta(minutes=policy.window_minutes)
    try:
        stats = deps.worker_logs.worker_stats(window_start, now, query_deadline(deps, deadline))
    except RemediationError as exc:
        note_look_error(noted, exc)
        return None
    streams = {deps.settings.log_stream_for(t.task_id): t.task_id for t in tasks}
    fleet = assess_fleet(stats, streams, [t.task_id for t in tasks], policy)
    return fleet if parsed.suspect is None else _with_suspect(fleet, parsed.suspect)


def _with_suspect(fleet: FleetAssessment, suspect: SuspectWorkerDetail) -> FleetAssessment:
    """tts_reach_alarm found the failing rooms concentrated on this worker: that is attribution
    enough, unless the slowness is fleet-wide."""
    if fleet.fleet_wide:
        return fleet
    workers = tuple(
        dataclasses.replace(
            w,
            degraded=True,
            reason=f"suspect worker ({suspect.alarm_name}, {p_value(suspect.p_value)}); {w.reason}",
        )
        if w.task_id == suspect.task_id
        else w
        for w in fleet.workers
    )
    return dataclasses.replace(fleet, workers=workers)


def _active_jobs(probed: dict[str, int | None], rooms: RoomsSeen | None) -> dict[str, int | None]:
    """/worker's answer where it gave one, else the task's live rooms (logs + LiveKit), else unknown."""
    return {
        task_id: jobs if jobs is not None or rooms is None else rooms.active_jobs(task_id)
        for task_id, jobs in probed.items()
    }


def _rooms_to_reap(
    candidates: Sequence[EcsTask], rooms: RoomsSeen | None, deps: DrainerDependencies, now: datetime
) -> dict[str, Sequence[RoomDecision] | None]:
    policy = deps.settings.reaper.policy
    found: dict[str, Sequence[RoomDecision] | None] = {}
    for task in candidates:
        mine = rooms.rooms_of(task.task_id) if rooms else None
        found[task.task_id] = None if mine is None else plan_reap(mine, policy, now).to_reap
    return found


def _protected(
    draining: Sequence[EcsTask], rooms: RoomsSeen | None, deps: DrainerDependencies
) -> dict[str, tuple[str, ...] | None]:
    policy = deps.settings.reaper.policy
    return {t.task_id: rooms.protected_rooms(t.task_id, policy) if rooms else None for t in draining}


def _tts_evidence(
    tasks: Sequence[EcsTask],
    marks: Mapping[str, TaskMarks],
    deps: DrainerDependencies,
    noted: Noted,
    now: datetime,
    deadline: float,
) -> dict[str, TtsEvidence | None]:
    """Only for TTS-suspect marks old enough for evidence to matter (a query per such task)."""
    policy = deps.settings.drainer.policy
    earliest = timedelta(minutes=min(policy.reap_grace_minutes, policy.recovery_minutes))
    evidence: dict[str, TtsEvidence | None] = {}
    for task in tasks:
        mark = marks[task.task_id]
        since = mark.since
        if mark.marked and mark.cause is Cause.TTS_SUSPECT and since is not None and now - since >= earliest:
            evidence[task.task_id] = read_tts_evidence(task, since, deps, noted, now, deadline)
    return evidence


def _desired_count(snapshot: Snapshot, deps: DrainerDependencies, noted: Noted) -> int | None:
    holds = any(marks.raised_capacity for marks in snapshot.marks.values())
    if not holds and not snapshot.capacity_debts:
        return None
    try:
        return deps.ecs.capacity().desired_count
    except RemediationError as exc:
        noted.error(exc)
        return None
