"""The TTS-reach responder's stages, as the pipeline calls them (``core.pipeline``; their work in
``work``).

Each action and each notification delivery runs at most once per alarm transition (alarm name +
state + state timestamp), under separate once-keys: a retry after a lost notification re-sends the
message without a second suspect-worker event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleet_remediation.contract.events import EventAges, SuspectWorkerDetail, responder_event_ages
from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.core import messages
from fleet_remediation.core.door import Door
from fleet_remediation.core.pipeline import Pipeline
from fleet_remediation.core.routing import Routed
from fleet_remediation.core.stages import Settled, StageDefaults, Start
from tts_reach_alarm.dependencies import TtsReachDependencies
from tts_reach_alarm.messages import compose_alarm_notification, compose_resolved_notification
from tts_reach_alarm.transition import HANDLED_STATES, Transition, responder_router, transition_of
from tts_reach_alarm.work import (
    HandedOver,
    Look,
    ResponderRun,
    ResponderWork,
    act,
    decide,
    news,
    open_incident,
    read,
    record,
)

Deps = TtsReachDependencies


@dataclass(frozen=True)
class ResponderNote:
    note: messages.Notification
    # The delivery's once-action: one message per transition, one more per worker a re-check names.
    once_action: str = "notify"

    @property
    def incident_id(self) -> str:
        return self.note.incident_id


class ResponderStages(
    StageDefaults[Deps, Transition, Look, SuspectWorkerDetail | None, HandedOver, ResponderNote]
):
    function = FunctionName.TTS_REACH_ALARM
    detection = True

    def route(self, event: Any, deps: Deps, door: Door) -> Routed[Any]:
        return responder_router(deps.settings).route(event, door)

    def event_ages(self, deps: Deps) -> EventAges:
        return responder_event_ages(deps.settings.tts_reach.recheck_minutes)

    def agent_service(self, deps: Deps) -> str:
        return deps.settings.agent_service

    def begin(self, start: Start[Deps]) -> Transition | Settled:
        deps = start.deps
        transition = transition_of(start.routed, deps.settings, deps.clock())
        if transition.state not in HANDLED_STATES:
            return Settled(f"state {transition.state} is neither ALARM nor OK: nothing to say")
        start.resolve_mode(transition.manual.dry_run if transition.manual else None)
        return open_incident(transition, deps)

    def read(self, run: ResponderRun) -> Look:
        return read(run)

    def decide(self, run: ResponderRun, snapshot: Look) -> SuspectWorkerDetail | None:
        return decide(run, snapshot)

    def act(self, run: ResponderRun, snapshot: Look, plan: SuspectWorkerDetail | None) -> HandedOver:
        return act(run, snapshot, plan)

    def record(self, run: ResponderRun, work: ResponderWork) -> None:
        record(run, work)

    def compose(self, run: ResponderRun, work: ResponderWork) -> ResponderNote | None:
        transition, settings, facts = run.event, run.deps.settings, run.report.facts()
        if transition.state == "OK":
            return ResponderNote(compose_resolved_notification(transition, settings, facts))
        look = work.snapshot
        if look is None or look.findings is None or (transition.recheck and not news(work)):
            return None
        suspect, event_id = work.plan, work.done.event_id if work.done else None
        note = compose_alarm_notification(look.findings, transition, suspect, settings, facts, event_id)
        if transition.recheck and suspect is not None:
            return ResponderNote(note, f"recheck-notify:{suspect.task_id}")
        return ResponderNote(note)

    def tell(self, run: ResponderRun, note: ResponderNote) -> None:
        """Alarm transitions are told in every mode. A manual analysis in dry run is a person's
        preview: its message goes into the report only."""
        transition, report = run.event, run.report
        if transition.change is None and not run.acts:
            subject, text = messages.render_email(note.note)
            report.summary["would_publish"] = {"subject": subject, "text": text}
            return
        once_key = transition.once_key(note.once_action) if transition.change is not None else None
        run.deps.delivery.send(note.note, report, once_key)

    def incident_of(self, note: ResponderNote) -> str:
        return note.incident_id


RESPONDER = Pipeline(ResponderStages())
run_tts_reach = RESPONDER.invoke
