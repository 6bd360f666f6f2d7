"""The drainer's stages, as the pipeline calls them (``core.pipeline``): attribute the degradation
to one task, reap its over-age rooms, cordon it, wait for its jobs to end, stop it — or undo it all
if it recovers. One message per run with something new to say, threaded under its incident
(``delivery``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleet_remediation.contract.events import DRAINER_EVENT_AGES, EventAges
from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.core.door import Door
from fleet_remediation.core.pipeline import Pipeline
from fleet_remediation.core.report_model import Refusal
from fleet_remediation.core.routing import Routed
from fleet_remediation.core.stages import StageDefaults, Start
from worker_drainer import work as stages
from worker_drainer.decide.plan_model import LadderPlan
from worker_drainer.dependencies import DrainerDependencies
from worker_drainer.events import drainer_router, drainer_trigger
from worker_drainer.read.target_checks import ServiceIdentity
from worker_drainer.tell.delivery import notify
from worker_drainer.tell.incident_thread import alarm_behind, message_incident, trigger_incident
from worker_drainer.tell.message import MessageContext
from worker_drainer.tell.message_lines import Line, message_lines
from worker_drainer.work import (
    NOTHING_PLANNED,
    DrainerEvent,
    DrainerRun,
    DrainerWork,
    Executed,
    FleetRead,
    held_lines,
)

Deps = DrainerDependencies


@dataclass(frozen=True)
class DrainerNote:
    lines: list[Line]
    context: MessageContext

    @property
    def incident_id(self) -> str:
        return self.context.incident_id


class DrainerStages(StageDefaults[Deps, DrainerEvent, FleetRead, LadderPlan, Executed, DrainerNote]):
    function = FunctionName.WORKER_DRAINER

    def route(self, event: Any, deps: Deps, door: Door) -> Routed[Any]:
        return drainer_router(deps.settings).route(event, door)

    def event_ages(self, deps: Deps) -> EventAges:
        return DRAINER_EVENT_AGES

    def agent_service(self, deps: Deps) -> str:
        return deps.settings.agent_service

    def begin(self, start: Start[Deps]) -> DrainerEvent:
        context = start.context
        arn = context.invoked_function_arn if context is not None else None
        trigger = drainer_trigger(start.routed)
        manual = trigger.manual
        # "plan" says what would happen now: it never acts, whatever dry_run says.
        start.resolve_mode(None if manual is None else (manual.dry_run or manual.action == "plan"))
        return DrainerEvent(trigger, ServiceIdentity.of(start.deps.settings.ecs_cluster, arn))

    def read(self, run: DrainerRun) -> FleetRead:
        return stages.read(run)

    def decide(self, run: DrainerRun, snapshot: FleetRead) -> LadderPlan:
        return stages.decide(run, snapshot)

    def hold(self, run: DrainerRun, snapshot: FleetRead, plan: LadderPlan) -> tuple[LadderPlan, str | None]:
        return stages.hold(run, snapshot, plan)

    def act(self, run: DrainerRun, snapshot: FleetRead, plan: LadderPlan) -> Executed:
        return stages.act(run, snapshot, plan)

    def record(self, run: DrainerRun, work: DrainerWork) -> None:
        stages.record(run, work)

    def refusals(self, run: DrainerRun, work: DrainerWork) -> list[Refusal]:
        return stages.refusals(run, work)

    def compose(self, run: DrainerRun, work: DrainerWork) -> DrainerNote | None:
        """A manual plan is answered by its report; everything else is told (a dry run as "would")."""
        trigger = run.event.trigger
        if trigger.manual is not None and trigger.manual.action == "plan":
            return None
        fleet, settings = work.snapshot, run.deps.settings
        if fleet is not None:
            trigger, incident = fleet.trigger, fleet.incident
        else:
            incident = trigger_incident(
                trigger, settings.environment_name, settings.agent_service, run.deps.clock()
            )
        plan = work.plan or NOTHING_PLANNED
        snapshot = fleet.snapshot if fleet else None
        thread = message_incident(trigger, incident, plan, snapshot)
        context = MessageContext(settings, run.event.identity, thread, alarm_behind(trigger))
        lines = message_lines(run.report, work.acting or plan, snapshot) + held_lines(work)
        return DrainerNote(lines, context)

    def tell(self, run: DrainerRun, note: DrainerNote) -> None:
        notify(run.report, note.lines, note.context, run.deps)

    def incident_of(self, note: DrainerNote) -> str:
        return note.incident_id


DRAINER = Pipeline(DrainerStages())
run_drainer = DRAINER.invoke
