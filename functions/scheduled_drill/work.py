"""The scheduled drill's stages, one class the pipeline calls (``core.pipeline``, ``core.stages``):
read whether a drill may run and which task it touches (the refusals are ``lkfr drill``'s,
``domain.drill_steps``), decide the drill (pure), carry it out (mark the task, say it started, watch
the product's record until the answer or the marker's end, take the marker off in a ``finally``,
say the verdict), record, and tell the verdict in the channel — a refusal and a failure too.

Its own switch governs it (enforce: it drills; dry-run: it says which task it would drill; off:
nothing). The drilled service's switches are read as its first step: ``off`` there is a refusal,
``dry-run`` still drills and judges what the drainer would have done.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from fleet_remediation.adapters.drill_marker import (
    put_marker,
    read_drilled_mode,
    remove_marker,
    running_tasks,
)
from fleet_remediation.adapters.notifier import preview_or_deliver
from fleet_remediation.contract.budgets import ACTION_EVENTS_PUT, DRILL_POLL_SECONDS, DRILL_TAG_CALL
from fleet_remediation.contract.drills import DrillFault, DrillMarker
from fleet_remediation.contract.events import DRILL_EVENT_AGES, EventAges
from fleet_remediation.contract.naming import DrillFunctionName
from fleet_remediation.core import messages
from fleet_remediation.core.door import Door
from fleet_remediation.core.errors import AwsApiError
from fleet_remediation.core.pipeline import Run, Work
from fleet_remediation.core.report_model import Outcome
from fleet_remediation.core.routing import ManualEvent, ManualRoute, Routed, Router, ScheduleRoute
from fleet_remediation.core.stages import StageDefaults, Start
from fleet_remediation.core.told import Told
from fleet_remediation.domain.drill_steps import (
    DrillRefusedError,
    DrillRun,
    DrillTarget,
    check_allowed,
    choose_task,
    drill_event,
    told,
)
from scheduled_drill.dependencies import DrillDependencies
from scheduled_drill.messages import compose
from scheduled_drill.record import DrillRecord

SCHEDULED_DRILL = DrillFunctionName.SCHEDULED_DRILL
ROUTER: Router[ManualEvent] = Router("the scheduled drill", [ScheduleRoute(), ManualRoute(ManualEvent)])
# Kept free after the watch: the marker's removal and the verdict's action event.
AFTER_WATCH_SECONDS = DRILL_TAG_CALL.worst_case_seconds + ACTION_EVENTS_PUT.worst_case_seconds


@dataclass(frozen=True)
class DrillSnapshot:
    """The drilled service's effective mode and the one task the drill may touch."""

    mode: str
    target: DrillTarget
    tasks: int


@dataclass(frozen=True)
class DrillPlan:
    fault: DrillFault
    target: DrillTarget
    until: int
    drill_id: str

    def reason(self, minutes: int) -> str:
        return f"drill {self.drill_id}: {self.fault.value} on task {self.target.task_id} for {minutes} min"


@dataclass
class DrillOutcome:
    """The drill as it ran, and what its run could not do surely (said in the verdict)."""

    run: DrillRun
    missed_polls: int = 0
    problems: list[str] = field(default_factory=list)


Deps = DrillDependencies
Event = Routed[ManualEvent]
DrillWork = Work[DrillSnapshot, DrillPlan, DrillOutcome]
ScheduledRun = Run[Deps, Event]


class DrillStages(StageDefaults[Deps, Event, DrillSnapshot, DrillPlan, DrillOutcome, messages.Notification]):
    function = SCHEDULED_DRILL

    def route(self, event: Any, deps: Deps, door: Door) -> Event:
        return ROUTER.route(event, door)

    def event_ages(self, deps: Deps) -> EventAges:
        return DRILL_EVENT_AGES

    def agent_service(self, deps: Deps) -> str:
        return deps.settings.drilled_service

    def begin(self, start: Start[Deps]) -> Event:
        routed: Event = start.routed
        start.resolve_mode(routed.manual.dry_run if routed.manual else None)
        return routed

    def read(self, run: ScheduledRun) -> DrillSnapshot:
        """The refusals, in ``lkfr drill``'s order: named for drills and inside the window, the
        drilled service's switches, then its running tasks and the one to drill."""
        settings, clients = run.deps.settings, run.deps.clients
        env, service = settings.environment_name, settings.drilled_service
        check_allowed(settings.drills_enabled, env, settings.disruption_window, run.deps.clock())
        mode = read_drilled_mode(clients.ssm, env, service)
        tasks = running_tasks(clients.tasks, settings.ecs_cluster, settings.ecs_service)
        target = DrillTarget(settings.ecs_cluster, choose_task(tasks, None, service))
        return DrillSnapshot(mode, target, len(tasks))

    def decide(self, run: ScheduledRun, snapshot: DrillSnapshot) -> DrillPlan:
        drill = run.deps.settings.drill
        now = run.deps.clock()
        until = int(now.timestamp()) + 60 * drill.minutes
        return DrillPlan(drill.fault, snapshot.target, until, f"drill-{int(now.timestamp())}")

    def act(self, run: ScheduledRun, snapshot: DrillSnapshot, plan: DrillPlan) -> DrillOutcome:
        """Mark, say it started, watch; the marker comes off whatever happens, then the verdict."""
        deps = run.deps
        marker = DrillMarker(plan.fault, plan.until, plan.drill_id)
        drill = DrillRun(plan.fault, plan.target, marker, deps.clock(), snapshot.mode)
        outcome = DrillOutcome(drill)
        minutes = deps.settings.drill.minutes
        intent = run.report.intend(plan.target.task_arn, "drill-mark", plan.reason(minutes))
        try:
            try:
                put_marker(deps.clients.marker, plan.target, marker)
            except DrillRefusedError as exc:
                # Refused or no reply: it may have landed, so it is taken off below all the same.
                run.report.resolve(intent, Outcome.UNKNOWN, exc.message, exc)
                raise
            run.report.resolve(intent, Outcome.DONE)
            self._event(run, outcome, "drill-start", "started")
            self._watch(run, outcome)
        finally:
            self._unmark(run, outcome)
        self._event(run, outcome, "drill-verdict", drill.verdict)
        return outcome

    def _watch(self, run: ScheduledRun, outcome: DrillOutcome) -> None:
        """Read the record until it answers, the marker ends, or the invocation's time (less the
        removal and the verdict) would not hold another poll."""
        deps, drill = run.deps, outcome.run
        settings = deps.settings
        record = DrillRecord(
            deps.clients.logs,
            deps.clients.ledger,
            settings.environment_name,
            settings.drilled_service,
            settings.ledger_table_name,
        )
        while True:
            try:
                drill.look(record.read(drill.fault, drill.target.task_id, drill.started))
            except AwsApiError as exc:
                if not outcome.missed_polls:
                    run.noted.error(exc)
                outcome.missed_polls += 1
            if drill.answered is not None:
                return
            to_marker_end = (drill.until - deps.clock()).total_seconds()
            to_deadline = run.deadline - AFTER_WATCH_SECONDS - DRILL_POLL_SECONDS - time.monotonic()
            wait = min(float(settings.drill.poll_seconds), to_marker_end, to_deadline)
            if wait <= 0:
                return
            deps.sleep(wait)

    def _unmark(self, run: ScheduledRun, outcome: DrillOutcome) -> None:
        drill = outcome.run
        intent = run.report.intend(
            drill.target.task_arn, "drill-unmark", f"drill {drill.marker.drill_id} ends"
        )
        problem = remove_marker(run.deps.clients.marker, drill.target, drill.until.isoformat())
        drill.marker_removed = problem is None
        run.report.resolve(intent, Outcome.FAILED if problem else Outcome.DONE, problem or "")
        if problem:
            outcome.problems.append(problem)

    def _event(self, run: ScheduledRun, outcome: DrillOutcome, action: str, result: str) -> None:
        deps = run.deps
        if deps.action_events is None:
            return
        settings = deps.settings
        event = drill_event(
            outcome.run,
            SCHEDULED_DRILL.value,
            settings.environment_name,
            settings.drilled_service,
            action,
            result,
            deps.clock(),
        )
        problem = told(deps.action_events, event)
        if problem:
            outcome.problems.append(problem)

    def record(self, run: ScheduledRun, work: DrillWork) -> None:
        snapshot, plan, done = work.snapshot, work.plan, work.done
        if snapshot is None or plan is None:
            return
        minutes = run.deps.settings.drill.minutes
        run.report.candidate(plan.target.task_arn, run.report.planned(), plan.reason(minutes))
        summary: dict[str, Any] = {
            "fault": plan.fault.value,
            "task": plan.target.task_arn,
            "drill_id": plan.drill_id,
            "drilled_mode": snapshot.mode,
            "running_tasks": snapshot.tasks,
        }
        if done is not None:
            drill = done.run
            summary |= {
                "verdict": drill.verdict,
                "answered_after_seconds": drill.answered_after(),
                "marker_removed": drill.marker_removed,
                "missed_polls": done.missed_polls,
                "timeline": [
                    f"{e.at.isoformat(timespec='seconds')} {e.function} {e.kind} {e.action} {e.target}"
                    for e in drill.seen[:20]
                ],
            }
        run.report.summary = summary

    def compose(self, run: ScheduledRun, work: DrillWork) -> messages.Notification:
        return compose(work, run.facts(), run.deps, run.event)

    def tell(self, run: ScheduledRun, note: messages.Notification) -> Told:
        preview = run.event.manual is not None and not run.acts
        return preview_or_deliver(note, run.deps.delivery, run.mode, preview)

    def incident_of(self, note: messages.Notification) -> str:
        return note.incident_id
