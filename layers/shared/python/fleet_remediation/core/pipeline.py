"""One invocation pipeline for every function, written once:

route → verify (one door for every event) → mode → deadline → once → read → decide → hold →
act (enforce only) → record → compose → action events → tell.

A function is a small ``FunctionSpec``: its router, how it reads its trigger, and its read, decide,
act, record and compose stages. The pipeline owns the order, the mode, the deadline, the
registration of the once-store, the catching of typed errors (a failed stage is recorded and still
told), the hold (quiet hours, a deployment in progress) and the version every report carries.
Each stage returns a value; only ``record`` writes the decisions into the report, and the executors
journal each destructive step in it (intent before, outcome after).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from aws_lambda_powertools.utilities.typing import LambdaContext

from fleet_remediation.contract.budgets import (
    ANNOUNCE_SECONDS,
    NOTIFICATION_BUDGET_SECONDS,
    REPORT_MARGIN_SECONDS,
)
from fleet_remediation.contract.events import EventAges
from fleet_remediation.core.announce import action_events, announce
from fleet_remediation.core.door import Door
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.invocation import decide_mode
from fleet_remediation.core.replay import replay_once
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Mode, Refusal
from fleet_remediation.core.routing import Routed

DepsT = TypeVar("DepsT")
EventT = TypeVar("EventT")
SnapT = TypeVar("SnapT")
PlanT = TypeVar("PlanT")
DoneT = TypeVar("DoneT")
NoteT = TypeVar("NoteT")

OFF_SUMMARY = "kill switch is off: nothing read, nothing changed"


@dataclass
class Run(Generic[DepsT, EventT]):
    """What every stage of one invocation sees."""

    deps: DepsT
    event: EventT
    report: ReportBuilder
    # The work's end on the monotonic clock: the notification and the report keep their own time.
    deadline: float
    context: LambdaContext | None = None

    @property
    def mode(self) -> Mode:
        return self.report.mode or Mode.DRY_RUN

    @property
    def acts(self) -> bool:
        return self.report.acts


@dataclass
class Work(Generic[SnapT, PlanT, DoneT]):
    """What the stages returned; a stage that failed leaves its value None and its error here."""

    snapshot: SnapT | None = None
    plan: PlanT | None = None
    # What of the plan was carried out (or, in a dry run, would have been): the plan less what a
    # hold kept back.
    acting: PlanT | None = None
    done: DoneT | None = None
    # Why the plan was not carried out (quiet hours, a deployment in progress), if it was held.
    held: str | None = None
    error: RemediationError | None = None


@dataclass(frozen=True)
class Settled:
    """The trigger needs no work (e.g. an alarm's recovery for the reaper): the reason, for the report."""

    reason: str


def _settings_environment(deps: Any) -> str:
    return str(deps.settings.environment_name)


def _settings_agent_service(deps: Any) -> str | None:
    service = getattr(deps.settings, "agent_service", None)
    return service if isinstance(service, str) else None


def _never_settled(run: Run[Any, Any]) -> Settled | None:
    return None


def _never_held(run: Run[Any, Any], snapshot: Any, plan: PlanT) -> tuple[PlanT, str | None]:
    return plan, None


def _no_refusals(run: Run[Any, Any], work: Work[Any, Any, Any]) -> list[Refusal]:
    return []


def _incident_of_note(note: Any) -> str | None:
    incident = getattr(note, "incident_id", None)
    return incident if isinstance(incident, str) else None


@dataclass(frozen=True)
class FunctionSpec(Generic[DepsT, EventT, SnapT, PlanT, DoneT, NoteT]):
    """One function's part of the pipeline: its stages, in the order the pipeline calls them.

    ``detection`` functions read and tell in every mode, ``off`` included; the others stop at
    ``off`` before reading anything. A spec that ``replays_retries`` runs its work once per event:
    Lambda's retry of it (same request id) replays the first attempt's record and message
    (a ``note_type``) instead of acting again (``core.replay``)."""

    # The function's name (a ``FunctionName`` for the built-in three).
    function: str
    # Which events it takes, each verified at the door (``core.door``) before anything else.
    route: Callable[[Any, DepsT, Door], Routed[Any]]
    # The maximum age of each EventBridge route's events (the targets' ``max_event_age``).
    event_ages: Callable[[DepsT], EventAges]
    begin: Callable[[Routed[Any], DepsT, LambdaContext | None], EventT | Settled]
    dry_run_asked: Callable[[EventT], bool | None]
    read: Callable[[Run[DepsT, EventT]], SnapT]
    decide: Callable[[Run[DepsT, EventT], SnapT], PlanT]
    act: Callable[[Run[DepsT, EventT], SnapT, PlanT], DoneT]
    record: Callable[[Run[DepsT, EventT], Work[SnapT, PlanT, DoneT]], None]
    compose: Callable[[Run[DepsT, EventT], Work[SnapT, PlanT, DoneT]], NoteT | None]
    tell: Callable[[Run[DepsT, EventT], NoteT], None]
    # After the mode: a trigger that turns out to need no work (it may refine ``run.event``).
    settle: Callable[[Run[DepsT, EventT]], Settled | None] = _never_settled
    # The plan to carry out now and, when part of it is kept back (quiet hours, a deployment in
    # progress), why: steps that finish or roll back an action already begun are never held.
    hold: Callable[[Run[DepsT, EventT], SnapT, PlanT], tuple[PlanT, str | None]] = _never_held
    # Decisions not to act that an operator must know, for the action events.
    refusals: Callable[[Run[DepsT, EventT], Work[SnapT, PlanT, DoneT]], list[Refusal]] = _no_refusals
    incident_of: Callable[[NoteT], str | None] = _incident_of_note
    environment: Callable[[DepsT], str] = _settings_environment
    # The agent service a service's function serves (None for the environment's functions).
    agent_service: Callable[[DepsT], str | None] = _settings_agent_service
    detection: bool = False
    replays_retries: bool = False
    note_type: type[Any] = object


@dataclass
class Pipeline(Generic[DepsT, EventT, SnapT, PlanT, DoneT, NoteT]):
    spec: FunctionSpec[DepsT, EventT, SnapT, PlanT, DoneT, NoteT]
    # The mode switch and the clock of the dependencies.
    mode_switch_of: Callable[[DepsT], Any] = field(default=lambda deps: deps.mode_switch)
    clock_of: Callable[[DepsT], Callable[[], datetime]] = field(default=lambda deps: deps.clock)

    def invoke(
        self,
        event: Any,
        report: ReportBuilder,
        deps: DepsT,
        remaining_seconds: float,
        context: LambdaContext | None = None,
    ) -> None:
        started = time.monotonic()
        spec = self.spec
        report.environment = spec.environment(deps)
        report.agent_service = spec.agent_service(deps)
        arn = context.invoked_function_arn if context is not None else None
        door = Door.for_invocation(arn, self.clock_of(deps)(), spec.event_ages(deps))
        routed = spec.route(event, deps, door)
        report.trigger = routed.trigger
        begun = spec.begin(routed, deps, context)
        if isinstance(begun, Settled):
            report.summary = {"skipped": begun.reason}
            return
        mode = decide_mode(self.mode_switch_of(deps), spec.dry_run_asked(begun), report)
        if mode is Mode.OFF and not spec.detection:
            report.summary = {"skipped": OFF_SUMMARY}
            return
        _register_once(deps, context)
        # The action events, the notification and the report keep their time after the work.
        reserved = REPORT_MARGIN_SECONDS + NOTIFICATION_BUDGET_SECONDS + ANNOUNCE_SECONDS
        deadline = started + remaining_seconds - reserved
        run = Run(deps, begun, report, deadline, context)
        settled = spec.settle(run)
        if settled is not None:
            report.summary = {"skipped": settled.reason}
            return
        if spec.replays_retries and run.acts and report.invocation_id:
            note = replay_once(run, self._recorded, spec.note_type, spec.function)
        else:
            note = self._recorded(run)
        incident = spec.incident_of(note) if note is not None else None
        report.incident = incident
        events = action_events(report, incident, self.clock_of(deps)())
        announce(report, events, getattr(deps, "action_events", None), getattr(deps, "once", None))
        if note is not None:
            spec.tell(run, note)

    def _recorded(self, run: Run[DepsT, EventT]) -> NoteT | None:
        """The work, recorded into the report, and what to tell about it."""
        work = self._work(run)
        if work.error is not None:
            run.report.error(work.error)
        self.spec.record(run, work)
        run.report.refusals.extend(self.spec.refusals(run, work))
        return self.spec.compose(run, work)

    def _work(self, run: Run[DepsT, EventT]) -> Work[SnapT, PlanT, DoneT]:
        """read → decide → hold → act; a typed error ends the work and is kept for record and tell."""
        spec, work = self.spec, Work[SnapT, PlanT, DoneT]()
        try:
            work.snapshot = spec.read(run)
            work.plan = spec.decide(run, work.snapshot)
            work.acting, work.held = spec.hold(run, work.snapshot, work.plan)
            if run.acts:
                work.done = spec.act(run, work.snapshot, work.acting)
        except RemediationError as exc:
            work.error = exc
        return work


def _register_once(deps: Any, context: LambdaContext | None) -> None:
    """The once-store learns the invocation's remaining time, so its records outlive no retry window."""
    register = getattr(getattr(deps, "once", None), "register_lambda_context", None)
    if context is not None and register is not None:
        register(context)
