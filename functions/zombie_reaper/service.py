"""The reaper as a pipeline spec (``core.pipeline``; its stages in ``work``): list the rooms, warn or
delete the over-age ones oldest first within the caps, tell once per set of rooms. A retry of the
same event replays the first attempt's results (``replays_retries``): only the delivery repeats."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from fleet_remediation.contract.events import REAPER_EVENT_AGES
from fleet_remediation.contract.naming import FunctionName, vad_alarm_name
from fleet_remediation.core import messages
from fleet_remediation.core.door import Door
from fleet_remediation.core.pipeline import FunctionSpec, Pipeline, Settled
from fleet_remediation.core.report_model import Refusal
from fleet_remediation.core.routing import AlarmRoute, ManualRoute, Routed, Router, ScheduleRoute
from fleet_remediation.domain.reaping import Verdict
from zombie_reaper import work as stages
from zombie_reaper.dependencies import ReaperDependencies
from zombie_reaper.messages import compose, compose_failure
from zombie_reaper.work import NOTHING_REAPED, ReaperEvent, ReaperManualEvent, ReaperRun, ReaperWork


def reaper_router(environment_name: str, services: Iterable[str]) -> Router[ReaperManualEvent]:
    """The schedule, any agent service's VAD alarm (a starving worker is often a zombie's doing;
    rooms are LiveKit-wide, so any service's alarm is the reaper's), or a manual invoke."""
    alarms = {vad_alarm_name(environment_name, service) for service in services}
    return Router("the reaper", [ScheduleRoute(), AlarmRoute(alarms), ManualRoute(ReaperManualEvent)])


Deps = ReaperDependencies


def route(event: Any, deps: Deps, door: Door) -> Routed[Any]:
    settings = deps.settings
    services = (service.name for service in settings.agent_services)
    return reaper_router(settings.environment_name, services).route(event, door)


def begin(routed: Routed[Any], deps: Deps, context: LambdaContext | None) -> ReaperEvent | Settled:
    if routed.alarm is not None and routed.alarm.state.value != "ALARM":
        return Settled(f"alarm state {routed.alarm.state.value}: nothing to reap on recovery")
    return ReaperEvent.of(routed, deps.settings.reaper.policy.max_age_minutes)


def dry_run_asked(event: ReaperEvent) -> bool | None:
    return event.routed.manual.dry_run if event.routed.manual else None


def compose_note(run: ReaperRun, work: ReaperWork) -> messages.Notification | None:
    routed = run.event.routed
    if work.error is not None:
        return compose_failure(work.error, run.report, run.deps, routed)
    if work.plan is None:
        return None
    return compose(work.plan, (work.done or NOTHING_REAPED).results, run.report, run.deps, routed)


def refusals(run: ReaperRun, work: ReaperWork) -> list[Refusal]:
    """Over-age rooms the per-run cap left for the next run."""
    decisions = work.plan.decisions if work.plan else ()
    return [Refusal(d.room.name, "delete-room", d.reason) for d in decisions if d.verdict is Verdict.OVER_CAP]


def tell(run: ReaperRun, note: messages.Notification) -> None:
    if run.event.routed.manual is not None and not run.acts:
        # A person's preview: the message goes into the report, nobody else is told.
        subject, text = messages.render_email(note)
        run.report.summary["would_notify"] = {"subject": subject, "text": text}
        return
    once_key = {"incident": note.incident_id, "mode": run.mode.value}
    run.deps.delivery.send(note, run.report, once_key=once_key)


REAPER = Pipeline(
    FunctionSpec(
        function=FunctionName.ZOMBIE_REAPER,
        route=route,
        event_ages=lambda deps: REAPER_EVENT_AGES,
        begin=begin,
        dry_run_asked=dry_run_asked,
        read=stages.read,
        decide=stages.decide,
        hold=stages.hold,
        act=stages.act,
        record=stages.record,
        compose=compose_note,
        tell=tell,
        refusals=refusals,
        replays_retries=True,
        note_type=messages.Notification,
    )
)
run_reaper = REAPER.invoke
