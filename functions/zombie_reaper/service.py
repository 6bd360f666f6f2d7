"""The reaper's stages, as the pipeline calls them (``core.pipeline``; their work in ``work``): list
the rooms, warn or delete the over-age ones oldest first within the caps, tell once per set of rooms.
A retry of the same event replays the first attempt's results (``replays_retries``): only the
delivery repeats."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fleet_remediation.contract.events import REAPER_EVENT_AGES, EventAges
from fleet_remediation.contract.naming import FunctionName, vad_alarm_name
from fleet_remediation.core import messages
from fleet_remediation.core.door import Door
from fleet_remediation.core.pipeline import Pipeline
from fleet_remediation.core.report_model import Refusal
from fleet_remediation.core.routing import AlarmRoute, ManualRoute, Routed, Router, ScheduleRoute
from fleet_remediation.core.stages import Settled, StageDefaults, Start
from fleet_remediation.domain.reaping import ReapPlan, Verdict
from zombie_reaper import work as stages
from zombie_reaper.dependencies import ReaperDependencies
from zombie_reaper.messages import compose, compose_failure
from zombie_reaper.work import (
    NOTHING_REAPED,
    Reaped,
    ReaperEvent,
    ReaperManualEvent,
    ReaperRun,
    ReaperWork,
    RoomSnapshot,
)


def reaper_router(environment_name: str, services: Iterable[str]) -> Router[ReaperManualEvent]:
    """The schedule, any agent service's VAD alarm (a starving worker is often a zombie's doing;
    rooms are LiveKit-wide, so any service's alarm is the reaper's), or a manual invoke."""
    alarms = {vad_alarm_name(environment_name, service) for service in services}
    return Router("the reaper", [ScheduleRoute(), AlarmRoute(alarms), ManualRoute(ReaperManualEvent)])


Deps = ReaperDependencies


class ReaperStages(StageDefaults[Deps, ReaperEvent, RoomSnapshot, ReapPlan, Reaped, messages.Notification]):
    function = FunctionName.ZOMBIE_REAPER
    replays_retries = True
    note_type = messages.Notification

    def route(self, event: Any, deps: Deps, door: Door) -> Routed[Any]:
        settings = deps.settings
        services = (service.name for service in settings.agent_services)
        return reaper_router(settings.environment_name, services).route(event, door)

    def event_ages(self, deps: Deps) -> EventAges:
        return REAPER_EVENT_AGES

    def begin(self, start: Start[Deps]) -> ReaperEvent | Settled:
        routed = start.routed
        if routed.alarm is not None and routed.alarm.state.value != "ALARM":
            return Settled(f"alarm state {routed.alarm.state.value}: nothing to reap on recovery")
        event = ReaperEvent.of(routed, start.deps.settings.reaper.policy.max_age_minutes)
        start.resolve_mode(routed.manual.dry_run if routed.manual else None)
        return event

    def read(self, run: ReaperRun) -> RoomSnapshot:
        return stages.read(run)

    def decide(self, run: ReaperRun, snapshot: RoomSnapshot) -> ReapPlan:
        return stages.decide(run, snapshot)

    def hold(self, run: ReaperRun, snapshot: RoomSnapshot, plan: ReapPlan) -> tuple[ReapPlan, str | None]:
        return stages.hold(run, snapshot, plan)

    def act(self, run: ReaperRun, snapshot: RoomSnapshot, plan: ReapPlan) -> Reaped:
        return stages.act(run, snapshot, plan)

    def record(self, run: ReaperRun, work: ReaperWork) -> None:
        stages.record(run, work)

    def compose(self, run: ReaperRun, work: ReaperWork) -> messages.Notification | None:
        routed = run.event.routed
        if work.error is not None:
            return compose_failure(work.error, run.report.facts(), run.deps, routed)
        if work.plan is None:
            return None
        return compose(work.plan, (work.done or NOTHING_REAPED).results, run.report.facts(), run.deps, routed)

    def refusals(self, run: ReaperRun, work: ReaperWork) -> list[Refusal]:
        """Over-age rooms the per-run cap left for the next run."""
        decisions = work.plan.decisions if work.plan else ()
        return [
            Refusal(d.room.name, "delete-room", d.reason) for d in decisions if d.verdict is Verdict.OVER_CAP
        ]

    def tell(self, run: ReaperRun, note: messages.Notification) -> None:
        if run.event.routed.manual is not None and not run.acts:
            # A person's preview: the message goes into the report, nobody else is told.
            subject, text = messages.render_email(note)
            run.report.summary["would_notify"] = {"subject": subject, "text": text}
            return
        once_key = {"incident": note.incident_id, "mode": run.mode.value}
        run.deps.delivery.send(note, run.report, once_key=once_key)

    def incident_of(self, note: messages.Notification) -> str:
        return note.incident_id


REAPER = Pipeline(ReaperStages())
run_reaper = REAPER.invoke
