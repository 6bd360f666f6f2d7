"""One invocation pipeline for every function, written once:

route → verify (one door for every event) → begin (the function's event, the mode) → deadline →
once → read → decide → hold → act (enforce only) → record → compose → action events → tell.

A function is one typed class of stages (``core.stages.Stages``): its router, how it turns its
trigger into its own event, and its read, decide, act, record and compose stages. The pipeline owns
the order, the deadline, the registration of the once-store, the catching of typed errors (a failed
stage is recorded and still told), the hold (quiet hours, a deployment in progress) and the version
every report carries. Each stage returns a value; only ``record`` writes the decisions into the
report, the pipeline writes what ``tell`` returns (``core.told``), and the executors journal each
destructive step in it (intent before, outcome after: the one exception). What a stage sets aside
without failing for it (an error it tolerated, a look it skipped) it notes on the run
(``core.notes``); the pipeline records those before the act's journal and once the work ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from aws_lambda_powertools.utilities.typing import LambdaContext

from fleet_remediation.contract.budgets import (
    ANNOUNCE_SECONDS,
    NOTIFICATION_BUDGET_SECONDS,
    REPORT_MARGIN_SECONDS,
)
from fleet_remediation.core.announce import action_events, announce
from fleet_remediation.core.door import Door
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.invocation import run_reported
from fleet_remediation.core.notes import Noted
from fleet_remediation.core.replay import replay_once
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Mode, RunFacts
from fleet_remediation.core.stages import KnowsLambdaContext, PipelineDependencies, Settled, Stages, Start

DepsT = TypeVar("DepsT", bound=PipelineDependencies)
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
    mode: Mode
    report: ReportBuilder
    # The work's end on the monotonic clock: the notification and the report keep their own time.
    deadline: float
    context: LambdaContext | None = None
    # What the stages set aside on their way, until the pipeline records it.
    noted: Noted = field(default_factory=Noted)

    @property
    def acts(self) -> bool:
        """Whether this invocation may change anything at all."""
        return self.mode is Mode.ENFORCE

    @property
    def invocation_id(self) -> str | None:
        return self.report.invocation_id

    def facts(self, pending: Sequence[RemediationError] = ()) -> RunFacts:
        """What the run has recorded so far, as a value (for a message), and the errors a stage
        has met and not yet returned."""
        return self.report.facts(pending)


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


@dataclass
class Pipeline(Generic[DepsT, EventT, SnapT, PlanT, DoneT, NoteT]):
    stages: Stages[DepsT, EventT, SnapT, PlanT, DoneT, NoteT]

    def handle(self, event: Any, context: LambdaContext, dependencies: Callable[[], DepsT]) -> dict[str, Any]:
        """One Lambda invocation of the stages, with exactly one report, logged once and returned. The
        dependencies are built inside it, so a configuration failure is that report's error."""

        def body(report: ReportBuilder) -> None:
            remaining = context.get_remaining_time_in_millis() / 1000
            self.invoke(event, report, dependencies(), remaining, context)

        return run_reported(str(self.stages.function), context.aws_request_id, body)

    def invoke(
        self,
        event: Any,
        report: ReportBuilder,
        deps: DepsT,
        remaining_seconds: float,
        context: LambdaContext | None = None,
    ) -> None:
        started = time.monotonic()
        report.environment = deps.settings.environment_name
        report.agent_service = self.stages.agent_service(deps)
        arn = context.invoked_function_arn if context is not None else None
        door = Door.for_invocation(arn, deps.clock(), self.stages.event_ages(deps))
        routed = self.stages.route(event, deps, door)
        report.trigger = routed.trigger
        start = Start(routed, deps, context, deps.mode_switch)
        begun = self.stages.begin(start)
        if isinstance(begun, Settled):
            _started(report, start)
            _settled(report, begun)
            return
        # A begin that asks nothing of the mode follows the switch.
        mode = start.mode or start.resolve_mode(None)
        _started(report, start)
        if mode is Mode.OFF and not self.stages.detection:
            report.summary = {"skipped": OFF_SUMMARY}
            return
        if isinstance(deps.once, KnowsLambdaContext) and context is not None:
            # The once-store's records outlive no retry window.
            deps.once.register_lambda_context(context)
        # The action events, the notification and the report keep their time after the work.
        reserved = REPORT_MARGIN_SECONDS + NOTIFICATION_BUDGET_SECONDS + ANNOUNCE_SECONDS
        self._carry_out(Run(deps, begun, mode, report, started + remaining_seconds - reserved, context))

    def _carry_out(self, run: Run[DepsT, EventT]) -> None:
        """The work (once per event for a function that replays retries), recorded; its action
        events; and what it tells."""
        if self.stages.replays_retries and run.acts and run.invocation_id:
            note = replay_once(run, self._recorded, self.stages.note_type, self.stages.function)
        else:
            note = self._recorded(run)
        report, deps = run.report, run.deps
        incident = self.stages.incident_of(note) if note is not None else None
        report.incident = incident
        announce(report, action_events(report, incident, deps.clock()), deps.action_events, deps.once)
        told = self.stages.tell(run, note) if note is not None else None
        if told is not None:
            told.record(report)

    def _recorded(self, run: Run[DepsT, EventT]) -> NoteT | None:
        """The work, recorded into the report, and what to tell about it."""
        work = self._work(run)
        if work.error is not None:
            run.report.error(work.error)
        self.stages.record(run, work)
        run.report.refusals.extend(self.stages.refusals(run, work))
        return self.stages.compose(run, work)

    def _work(self, run: Run[DepsT, EventT]) -> Work[SnapT, PlanT, DoneT]:
        """read → decide → hold → act; a typed error ends the work and is kept for record and tell.
        What the stages noted goes into the report before the act journals, and what a failed stage
        had noted before its error (whatever the error)."""
        work = Work[SnapT, PlanT, DoneT]()
        try:
            work.snapshot = self.stages.read(run)
            work.plan = self.stages.decide(run, work.snapshot)
            work.acting, work.held = self.stages.hold(run, work.snapshot, work.plan)
            run.noted.record(run.report)
            if run.acts:
                work.done = self.stages.act(run, work.snapshot, work.acting)
        except RemediationError as exc:
            work.error = exc
        finally:
            run.noted.record(run.report)
        return work


def _started(report: ReportBuilder, start: Start[Any]) -> None:
    if start.switch_error is not None:
        report.error(start.switch_error)
    report.mode = start.mode


def _settled(report: ReportBuilder, settled: Settled) -> None:
    if settled.error is not None:
        report.error(settled.error)
    if report.trigger is not None:
        report.trigger.detail.update(settled.trigger_detail)
    report.summary = {"skipped": settled.reason}
