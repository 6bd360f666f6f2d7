"""The drainer as a pipeline spec (``core.pipeline``): attribute the degradation to one task, reap its
over-age rooms, cordon it, wait for its jobs to end, stop it — or undo it all if it recovers. One
message per run with something new to say, threaded under its incident (``reporting``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from fleet_remediation.contract.events import DRAINER_EVENT_AGES
from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.core.door import Door
from fleet_remediation.core.pipeline import FunctionSpec, Pipeline
from fleet_remediation.core.routing import Routed
from worker_drainer import work as stages
from worker_drainer.dependencies import DrainerDependencies
from worker_drainer.events import drainer_router, drainer_trigger
from worker_drainer.incidents import alarm_behind, message_incident, trigger_incident
from worker_drainer.message_lines import Line, message_lines
from worker_drainer.messages import MessageContext
from worker_drainer.reporting import notify
from worker_drainer.validation import ServiceIdentity
from worker_drainer.work import NOTHING_PLANNED, DrainerEvent, DrainerRun, DrainerWork, held_lines

Deps = DrainerDependencies


@dataclass(frozen=True)
class DrainerNote:
    lines: list[Line]
    context: MessageContext

    @property
    def incident_id(self) -> str:
        return self.context.incident_id


def route(event: Any, deps: Deps, door: Door) -> Routed[Any]:
    return drainer_router(deps.settings).route(event, door)


def begin(routed: Routed[Any], deps: Deps, context: LambdaContext | None) -> DrainerEvent:
    arn = context.invoked_function_arn if context is not None else None
    return DrainerEvent(drainer_trigger(routed), ServiceIdentity.of(deps.settings.ecs_cluster, arn))


def dry_run_asked(event: DrainerEvent) -> bool | None:
    manual = event.trigger.manual
    # "plan" says what would happen now: it never acts, whatever dry_run says.
    return None if manual is None else (manual.dry_run or manual.action == "plan")


def compose(run: DrainerRun, work: DrainerWork) -> DrainerNote | None:
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


def tell(run: DrainerRun, note: DrainerNote) -> None:
    notify(run.report, note.lines, note.context, run.deps)


DRAINER = Pipeline(
    FunctionSpec(
        function=FunctionName.WORKER_DRAINER,
        route=route,
        event_ages=lambda deps: DRAINER_EVENT_AGES,
        begin=begin,
        dry_run_asked=dry_run_asked,
        read=stages.read,
        decide=stages.decide,
        hold=stages.hold,
        act=stages.act,
        record=stages.record,
        compose=compose,
        tell=tell,
        refusals=stages.refusals,
    )
)
run_drainer = DRAINER.invoke
