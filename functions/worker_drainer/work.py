"""The drainer's stages, one class the pipeline calls (``core.pipeline``, ``core.stages``): check
the event, read the fleet (tasks, rooms, logs, the VAD page; ``read/``), plan each task's ladder
(pure; ``decide/``), carry it out re-checking every task (``act/``), record and tell (``tell/``):
attribute the degradation to one task, reap its over-age rooms, cordon it, wait for its jobs to end,
stop it — or undo it all if it recovers. One message per run with something new to say, threaded
under its incident (``tell/delivery.py``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from fleet_remediation.adapters.scan_budget import LookPolicy, looking
from fleet_remediation.contract.drainer_steps import STARTING
from fleet_remediation.contract.events import DRAINER_EVENT_AGES, EventAges
from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.core.door import Door
from fleet_remediation.core.holds import hold_reason
from fleet_remediation.core.pipeline import Run, Work
from fleet_remediation.core.report_model import Refusal, TriggerKind
from fleet_remediation.core.routing import Routed
from fleet_remediation.core.stages import StageDefaults, Start
from fleet_remediation.core.told import Told
from worker_drainer.act.ladder_executor import DrainerExecutor
from worker_drainer.adapters.ecs_tasks import EcsTaskService
from worker_drainer.adapters.tags_as_written import tags_as_written
from worker_drainer.decide.ladder import plan_ladder
from worker_drainer.decide.plan_model import LadderPlan, PlannedStep, Snapshot
from worker_drainer.dependencies import DrainerDependencies
from worker_drainer.events import DrainerTrigger, drainer_router, drainer_trigger
from worker_drainer.read.fleet_snapshot import read_snapshot
from worker_drainer.read.silent_task_tick import GROUP_EVENT, during_silent_task
from worker_drainer.read.target_checks import ServiceIdentity
from worker_drainer.read.vad_alarm_tick import during_vad_alarm
from worker_drainer.tell.delivery import notify
from worker_drainer.tell.incident_thread import alarm_behind, message_incident, trigger_incident
from worker_drainer.tell.message import MessageContext
from worker_drainer.tell.message_lines import Line, message_lines
from worker_drainer.tell.record import record_metrics, record_plan, summarize

NOTHING_PLANNED = LadderPlan((), 0, 0)


@dataclass(frozen=True)
class DrainerEvent:
    trigger: DrainerTrigger
    identity: ServiceIdentity


@dataclass(frozen=True)
class FleetRead:
    """The fleet as read, and the trigger as the run treats it (a scheduled tick during the VAD
    page may start ladders, under the incident that page opened)."""

    trigger: DrainerTrigger
    incident: str
    snapshot: Snapshot
    livekit_calls: int
    # ECS as the drainer wrote it (``tags_as_written``): what the steps re-check against too.
    ecs: EcsTaskService


@dataclass(frozen=True)
class Executed:
    livekit_calls: int


DrainerRun = Run[DrainerDependencies, DrainerEvent]
DrainerWork = Work[FleetRead, LadderPlan, Executed]


@dataclass(frozen=True)
class DrainerNote:
    lines: list[Line]
    context: MessageContext

    @property
    def incident_id(self) -> str:
        return self.context.incident_id


class DrainerStages(
    StageDefaults[DrainerDependencies, DrainerEvent, FleetRead, LadderPlan, Executed, DrainerNote]
):
    function = FunctionName.WORKER_DRAINER

    def route(self, event: Any, deps: DrainerDependencies, door: Door) -> Routed[Any]:
        return drainer_router(deps.settings).route(event, door)

    def event_ages(self, deps: DrainerDependencies) -> EventAges:
        return DRAINER_EVENT_AGES

    def agent_service(self, deps: DrainerDependencies) -> str:
        return deps.settings.agent_service

    def begin(self, start: Start[DrainerDependencies]) -> DrainerEvent:
        context = start.context
        arn = context.invoked_function_arn if context is not None else None
        trigger = drainer_trigger(start.routed)
        manual = trigger.manual
        # "plan" says what would happen now: it never acts, whatever dry_run says.
        start.resolve_mode(None if manual is None else (manual.dry_run or manual.action == "plan"))
        return DrainerEvent(trigger, ServiceIdentity.of(start.deps.settings.ecs_cluster, arn))

    def read(self, run: DrainerRun) -> FleetRead:
        """The fleet. The scheduled tick's looks run under the scan budget; those a new ALARM or a
        suspect worker triggers always run."""
        settings = run.deps.settings
        ecs = tags_as_written(run.deps.ecs, run.deps.ledger, run.deps.clock)
        deps = dataclasses.replace(run.deps, ecs=ecs)
        trigger = run.event.trigger
        kind = trigger.trigger.kind
        # A person's run and a suspect worker (the responder's own look is rate-limited) are not limited.
        policy = LookPolicy(
            priority=kind is not TriggerKind.SCHEDULE,
            problem=run.noted.error,
            alarm=settings.vad_alarm_name if kind is TriggerKind.ALARM else None,
        )
        with looking(getattr(deps.worker_logs, "insights", None), policy):
            trigger = during_vad_alarm(trigger, deps.alarm_states, settings.vad_alarm_name, run.noted)
            # Listed once per tick: the silent-task look and the snapshot judge the same tasks.
            tasks = ecs.running_tasks()
            trigger = during_silent_task(trigger, deps, tasks, run.noted, run.deadline)
            incident = trigger_incident(
                trigger, settings.environment_name, settings.agent_service, deps.clock()
            )
            snapshot, calls = read_snapshot(trigger, deps, tasks, run.noted, run.deadline, run.event.identity)
        if ecs.unread is not None:
            run.noted.error(ecs.unread)
        return FleetRead(trigger, incident, snapshot, calls, ecs)

    def decide(self, run: DrainerRun, fleet: FleetRead) -> LadderPlan:
        return plan_ladder(fleet.snapshot, run.deps.settings.drainer.policy)

    def hold(self, run: DrainerRun, fleet: FleetRead, plan: LadderPlan) -> tuple[LadderPlan, str | None]:
        """Outside the disruption window, and while the service deploys, no new reap, cordon or stop
        starts; steps that finish or roll back one already begun go on. A manual run may override."""
        going_on = tuple(step for step in plan.steps if step.step not in STARTING)
        if len(going_on) == len(plan.steps) or run.event.trigger.manual is not None:
            return plan, None
        group_event = fleet.trigger.trigger.detail.get(GROUP_EVENT)
        if group_event:
            # A failure shared by a group is not one bad worker: no task is drained while it lasts.
            return dataclasses.replace(plan, steps=going_on), str(group_event)
        deps = run.deps
        why = hold_reason(
            deps.settings.disruption_window, fleet.snapshot.now, deps.ecs.deployment_in_progress, run.noted
        )
        return (plan, None) if why is None else (dataclasses.replace(plan, steps=going_on), why)

    def act(self, run: DrainerRun, fleet: FleetRead, plan: LadderPlan) -> Executed:
        settings = run.deps.settings
        executor = DrainerExecutor(
            ecs=fleet.ecs,
            ledger=run.deps.ledger,
            mode_switch=run.deps.mode_switch,
            room_service_factory=run.deps.room_service_factory,
            policy=settings.drainer.policy,
            reaper_policy=settings.reaper.policy,
            cluster=settings.ecs_cluster,
            service=settings.ecs_service,
            task_scope=settings.drainer.task_action_scope,
            invocation_id=run.report.invocation_id or "local",
            incident_id=fleet.incident,
            clock=run.deps.clock,
            deadline=run.deadline,
            livekit_request_timeout_seconds=settings.drainer.livekit_request_timeout_seconds,
        )
        executor.run(plan, run.report)
        return Executed(executor.livekit_calls)

    def record(self, run: DrainerRun, work: DrainerWork) -> None:
        fleet = work.snapshot
        if fleet is None:
            return
        plan = work.plan or NOTHING_PLANNED
        record_plan(fleet.snapshot, plan, run.report, held_steps(work))
        calls = fleet.livekit_calls + (work.done.livekit_calls if work.done else 0)
        run.report.summary = summarize(fleet.snapshot, plan, run.report.actions, run.deps, calls)
        if work.held is not None:
            run.report.summary["held"] = work.held
        record_metrics(plan, run.report)

    def refusals(self, run: DrainerRun, work: DrainerWork) -> list[Refusal]:
        """The steps a guardrail, a cooldown, an exclusion or a live room kept back."""
        plan = work.plan or NOTHING_PLANNED
        return [Refusal(s.task_id, s.step.value, s.reason) for s in plan.steps if s.notify]

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
        lines = message_lines(run.facts(), work.acting or plan, snapshot) + held_lines(work)
        return DrainerNote(lines, context)

    def tell(self, run: DrainerRun, note: DrainerNote) -> Told:
        return notify(run, note.lines, note.context)

    def incident_of(self, note: DrainerNote) -> str:
        return note.incident_id


def held_steps(work: DrainerWork) -> frozenset[PlannedStep]:
    if work.plan is None or work.acting is None:
        return frozenset()
    return frozenset(work.plan.steps) - frozenset(work.acting.steps)


def held_lines(work: DrainerWork) -> list[Line]:
    """What a hold kept back, told once an hour per step (like a refusal)."""
    return [
        Line(
            "refused",
            f"{s.task_id}: held, would {s.step.value} — {work.held}",
            s.step.value,
            s.task_id,
            f"held#{s.task_id}#{s.step.value}",
            s,
        )
        for s in sorted(held_steps(work), key=lambda step: (step.task_id, step.step.value))
    ]
