"""The TTS-reach responder as a pipeline spec (``core.pipeline``; the stages in ``work``).

Each action and each notification delivery runs at most once per alarm transition (alarm name +
state + state timestamp), under separate once-keys: a retry after a lost notification re-sends the
message without a second suspect-worker event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from fleet_remediation.contract.events import responder_event_ages
from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.core import messages
from fleet_remediation.core.door import Door
from fleet_remediation.core.pipeline import FunctionSpec, Pipeline, Settled
from fleet_remediation.core.routing import Routed
from tts_reach_alarm.dependencies import TtsReachDependencies
from tts_reach_alarm.messages import compose_alarm_notification, compose_resolved_notification
from tts_reach_alarm.transition import HANDLED_STATES, Transition, responder_router, transition_of
from tts_reach_alarm.work import ResponderRun, ResponderWork, act, decide, news, open_incident, read, record

Deps = TtsReachDependencies


@dataclass(frozen=True)
class ResponderNote:
    note: messages.Notification
    # The delivery's once-action: one message per transition, one more per worker a re-check names.
    once_action: str = "notify"

    @property
    def incident_id(self) -> str:
        return self.note.incident_id


def route(event: Any, deps: Deps, door: Door) -> Routed[Any]:
    return responder_router(deps.settings).route(event, door)


def begin(routed: Routed[Any], deps: Deps, context: LambdaContext | None) -> Transition | Settled:
    transition = transition_of(routed, deps.settings, deps.clock())
    if transition.state not in HANDLED_STATES:
        return Settled(f"state {transition.state} is neither ALARM nor OK: nothing to say")
    return transition


def dry_run_asked(event: Transition) -> bool | None:
    return event.manual.dry_run if event.manual else None


def compose(run: ResponderRun, work: ResponderWork) -> ResponderNote | None:
    transition, settings, report = run.event, run.deps.settings, run.report
    if transition.state == "OK":
        return ResponderNote(compose_resolved_notification(transition, settings, report))
    look = work.snapshot
    if look is None or look.findings is None or (transition.recheck and not news(work)):
        return None
    suspect, event_id = work.plan, work.done.event_id if work.done else None
    note = compose_alarm_notification(look.findings, transition, suspect, settings, report, event_id)
    if transition.recheck and suspect is not None:
        return ResponderNote(note, f"recheck-notify:{suspect.task_id}")
    return ResponderNote(note)


def tell(run: ResponderRun, note: ResponderNote) -> None:
    """Alarm transitions are told in every mode. A manual analysis in dry run is a person's
    preview: its message goes into the report only."""
    transition, report = run.event, run.report
    if transition.change is None and not report.acts:
        subject, text = messages.render_email(note.note)
        report.summary["would_publish"] = {"subject": subject, "text": text}
        return
    once_key = transition.once_key(note.once_action) if transition.change is not None else None
    run.deps.delivery.send(note.note, report, once_key)


RESPONDER = Pipeline(
    FunctionSpec(
        function=FunctionName.TTS_REACH_ALARM,
        route=route,
        event_ages=lambda deps: responder_event_ages(deps.settings.tts_reach.recheck_minutes),
        begin=begin,
        dry_run_asked=dry_run_asked,
        settle=open_incident,
        read=read,
        decide=decide,
        act=act,
        record=record,
        compose=compose,
        tell=tell,
        detection=True,
    )
)
run_tts_reach = RESPONDER.invoke
