"""The responder's stages, one class the pipeline calls (``core.pipeline``, ``core.stages``). On
ALARM: find the jobs whose responses got no first audio frame in the alarm's window, decide whether
they concentrate on one worker, hand that worker to the drainer (a suspect-worker event, once per
transition) and tell. On OK: tell that it is resolved. A scheduled re-check, while the page stays in
ALARM, runs the same analysis over the window ending now and tells only a worker named for the first
time in the incident (``recheck``).

It is detection: it reads and tells in every mode. Only the hand-over is an action — done in
``enforce``, "DRY RUN — would have" in ``dry-run``, not done when the switch is ``off``. Each action
and each notification delivery runs at most once per alarm transition (alarm name + state + state
timestamp), under separate once-keys: a retry after a lost notification re-sends the message without
a second suspect-worker event.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fleet_remediation.adapters.scan_budget import LookPolicy, budget_refusal, looking, note_look_error
from fleet_remediation.contract import metrics as metric_definitions
from fleet_remediation.contract.budgets import SUSPECT_EVENT_PUT, guarded_action_seconds
from fleet_remediation.contract.events import EventAges, SuspectWorkerDetail, responder_event_ages
from fleet_remediation.contract.naming import FunctionName, task_id_from_log_stream
from fleet_remediation.core import messages
from fleet_remediation.core.door import Door
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.observability import emit
from fleet_remediation.core.pipeline import Run, Work
from fleet_remediation.core.report_model import Decision, Outcome
from fleet_remediation.core.routing import Routed
from fleet_remediation.core.stages import Settled, StageDefaults, Start
from fleet_remediation.core.told import Told
from tts_reach_alarm.adapters.event_bus import put_at_most_once
from tts_reach_alarm.analysis import MAX_JOBS, MAX_LISTED_JOBS
from tts_reach_alarm.dependencies import TtsReachDependencies
from tts_reach_alarm.investigation import Findings, investigate
from tts_reach_alarm.messages import compose_alarm_notification, compose_resolved_notification, incident_id
from tts_reach_alarm.recheck import alarm_since, open_incident, recheck_level
from tts_reach_alarm.transition import HANDLED_STATES, Transition, responder_router, transition_of

Deps = TtsReachDependencies


@dataclass(frozen=True)
class Look:
    """What the window held (None on OK: nothing to look at), and the level of a re-check's test."""

    findings: Findings | None
    alpha: float | None = None


@dataclass(frozen=True)
class HandedOver:
    """The suspect-worker event's id, and whether it went out now (not in an earlier run)."""

    event_id: str | None
    new: bool


@dataclass(frozen=True)
class ResponderNote:
    note: messages.Notification
    # The delivery's once-action: one message per transition, one more per worker a re-check names.
    once_action: str = "notify"

    @property
    def incident_id(self) -> str:
        return self.note.incident_id


ResponderRun = Run[Deps, Transition]
ResponderWork = Work[Look, SuspectWorkerDetail | None, HandedOver]


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
        """The window's jobs. A re-check runs under the scan budget (skipped or stopped: no findings,
        told in the report's skips); the ALARM's own analysis always runs."""
        if run.event.state == "OK":
            return Look(None)
        alpha = recheck_level(run.event, run.deps.settings)
        policy = LookPolicy(
            priority=not run.event.recheck, problem=run.noted.error, alarm=run.deps.settings.alarm_name
        )
        try:
            with looking(run.deps.insights, policy):
                findings = investigate(
                    run.event.window,
                    run.deps.settings,
                    run.deps.insights,
                    run.deadline,
                    alpha,
                    run.deps.task_facts,
                )
        except RemediationError as exc:
            if not budget_refusal(exc):
                raise
            note_look_error(run.noted, exc)
            return Look(None, alpha)
        for error in findings.facts.errors if findings.facts else ():
            run.noted.error(error)
        return Look(findings, alpha)

    def decide(self, run: ResponderRun, look: Look) -> SuspectWorkerDetail | None:
        findings, transition, settings = look.findings, run.event, run.deps.settings
        c = findings.concentration if findings else None
        if findings is None or c is None or not c.concentrated or c.top is None or c.p_value_family is None:
            return None
        on_worker = [job for job in findings.failing if job.log_stream == c.top.log_stream]
        return SuspectWorkerDetail(
            environment=settings.environment_name,
            agent_service=settings.agent_service,
            log_stream=c.top.log_stream,
            task_id=task_id_from_log_stream(c.top.log_stream),
            alarm_name=settings.alarm_name,
            p_value=c.p_value_family,
            window=transition.window,
            evidence={**c.evidence(), "failed_job_ids": [job.job_id for job in on_worker[:MAX_LISTED_JOBS]]},
            incident_id=incident_id(transition, settings),
        )

    def act(self, run: ResponderRun, look: Look, suspect: SuspectWorkerDetail | None) -> HandedOver:
        """Hand the worker to the drainer, once per transition; not started without the time to
        finish it (the notification after it keeps its own)."""
        if suspect is None:
            return HandedOver(None, False)
        report = run.report
        if time.monotonic() + guarded_action_seconds(SUSPECT_EVENT_PUT) > run.deadline:
            reason = "deadline: not enough time left to send it; the notification says what was found"
            report.action(suspect.log_stream, "emit-suspect-worker", Outcome.SKIPPED, reason)
            return HandedOver(None, True)
        intent = report.intend(suspect.log_stream, "emit-suspect-worker", f"p={suspect.p_value:.3g}")
        key = f"suspect-worker:{suspect.task_id}"
        try:
            result, replayed = _once(key, run, lambda: put_at_most_once(run.deps.events, suspect))
        except RemediationError as exc:
            report.resolve(intent, Outcome.FAILED, exc.message, exc)
            return HandedOver(None, True)
        if result.get("unknown"):
            # It may have landed: never sent again; the drainer takes a duplicate as already done.
            report.resolve(intent, Outcome.UNKNOWN, str(result["unknown"]))
            return HandedOver(None, not replayed)
        done = Outcome.ALREADY_DONE if replayed else Outcome.DONE
        report.resolve(intent, done, f"event {result['event_id']}")
        return HandedOver(str(result["event_id"]), not replayed)

    def record(self, run: ResponderRun, work: ResponderWork) -> None:
        report, transition = run.report, run.event
        if transition.alarm_since is not None and report.trigger is not None:
            report.trigger.detail["tts_alarm"] = alarm_since(transition.alarm_since)
        if transition.state == "OK":
            report.summary = {"state": "OK", "window": transition.window.model_dump(mode="json")}
            return
        if work.snapshot is None or work.snapshot.findings is None:
            return
        findings = work.snapshot.findings
        report.summary = findings_summary(findings, transition)
        c = findings.concentration
        if c.top is not None:
            decision = report.planned() if c.concentrated else Decision.SKIP
            task_id = task_id_from_log_stream(c.top.log_stream)
            report.candidate(c.top.log_stream, decision, c.reason, task_id=task_id, **c.evidence())
        emit(metric_definitions.TTS_REACH_FAILING_JOBS, len(findings.failing))
        emit(metric_definitions.TTS_REACH_SUSPECT_WORKERS, int(c.concentrated))
        if work.snapshot.alpha is not None:
            report.summary["recheck_alpha"] = work.snapshot.alpha
        if work.plan is not None and not report.acts:
            report.summary["would_emit"] = work.plan.model_dump(mode="json")
        if transition.recheck and not news(work):
            report.summary["recheck"] = "nothing new in the open incident: no message"

    def compose(self, run: ResponderRun, work: ResponderWork) -> ResponderNote | None:
        transition, settings, facts = run.event, run.deps.settings, run.facts()
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

    def tell(self, run: ResponderRun, note: ResponderNote) -> Told:
        """Alarm transitions are told in every mode. A manual analysis in dry run is a person's
        preview: its message goes into the report only."""
        transition = run.event
        if transition.change is None and not run.acts:
            subject, text = messages.render_email(note.note)
            return Told(summary={"would_publish": {"subject": subject, "text": text}})
        once_key = transition.once_key(note.once_action) if transition.change is not None else None
        return Told().delivered(run.deps.delivery.deliver(note.note, once_key))

    def incident_of(self, note: ResponderNote) -> str:
        return note.incident_id


def news(work: ResponderWork) -> bool:
    """Whether a worker is named for the first time (a dry run's would-be hand-over counts)."""
    if work.plan is None:
        return False
    return work.done.new if work.done is not None else True


def findings_summary(findings: Findings, transition: Transition) -> dict[str, Any]:
    """What the window held, as the report's summary."""
    c = findings.concentration
    summary: dict[str, Any] = {
        "state": transition.state,
        "window": transition.window.model_dump(mode="json"),
        "jobs_with_responses": len(findings.jobs),
        "failing_jobs": len(findings.failing),
        "reach_in_window": None if findings.reach is None else round(findings.reach, 4),
        "alarm_datapoints": list(transition.reach_datapoints),
        "verdict": c.verdict.value,
        "reason": c.reason,
        "p_value": c.p_value_family,
        "p_value_exact": c.p_value_family_exact,
    }
    if c.group is not None:
        summary["group_event"] = c.group.describe()
    if findings.facts is not None:
        summary["task_facts"] = findings.facts.describe()
    if findings.truncated:
        summary["jobs_truncated"] = (
            f"the window holds more than MAX_JOBS={MAX_JOBS} jobs (Logs Insights returns at most "
            f"10,000 rows); the test covers the {len(findings.jobs)} the query returned"
        )
    return summary


def _once(action: str, run: ResponderRun, do: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], bool]:
    if run.event.change is None:
        return do(), False
    return run.deps.once.run_once(run.event.once_key(action), do)
