"""What the pipeline (``core.pipeline``) calls: a function's stages, one typed class per function, and
what it reads from that function's dependencies. Typed Protocols, so a reader, a type checker or an
IDE walks from ``Pipeline.invoke`` to each function's stages and from them to every adapter.

A function's stages class states its own types (``Stages[Deps, Event, Snapshot, Plan, Done, Note]``)
and inherits the optional stages from ``StageDefaults``: nothing held back, no refusal, no incident,
no agent service.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

from aws_lambda_powertools.utilities.typing import LambdaContext

from fleet_remediation.contract.events import EventAges
from fleet_remediation.core.announce import ActionEventSink
from fleet_remediation.core.door import Door
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.invocation import decide_mode
from fleet_remediation.core.kill_switch import ModeSwitch
from fleet_remediation.core.report_model import Mode, Refusal
from fleet_remediation.core.routing import Routed
from fleet_remediation.core.told import Told

if TYPE_CHECKING:
    from fleet_remediation.core.pipeline import Run, Work

DepsT = TypeVar("DepsT", bound="PipelineDependencies")
EventT = TypeVar("EventT")
SnapT = TypeVar("SnapT")
PlanT = TypeVar("PlanT")
DoneT = TypeVar("DoneT")
NoteT = TypeVar("NoteT")


class RunsOnce(Protocol):
    def run_once(
        self, key: dict[str, str], action: Callable[[], dict[str, Any]]
    ) -> tuple[dict[str, Any], bool]: ...


@runtime_checkable
class KnowsLambdaContext(Protocol):
    """A once-store whose records must outlive no retry window: it learns the invocation's time."""

    def register_lambda_context(self, context: LambdaContext) -> None: ...


class NamedSettings(Protocol):
    @property
    def environment_name(self) -> str: ...


class PipelineDependencies(Protocol):
    """What the pipeline itself reads from a function's dependencies."""

    @property
    def settings(self) -> NamedSettings: ...
    @property
    def mode_switch(self) -> ModeSwitch: ...
    @property
    def clock(self) -> Callable[[], datetime]: ...
    @property
    def once(self) -> RunsOnce: ...

    # Where each action and refusal is announced (None: nowhere, e.g. the replay).
    @property
    def action_events(self) -> ActionEventSink | None: ...


@dataclass(frozen=True)
class Settled:
    """The trigger needs no work (e.g. an alarm's recovery for the reaper): the reason, and what
    ``begin`` found on the way, for the report."""

    reason: str
    error: RemediationError | None = None
    trigger_detail: dict[str, str] = field(default_factory=dict)


@dataclass
class Start(Generic[DepsT]):
    """What ``begin`` turns into the function's event: the routed trigger and, once ``begin`` knows
    what a manual event asked for, the mode (the switch is the ceiling)."""

    routed: Routed[Any]
    deps: DepsT
    context: LambdaContext | None
    switch: ModeSwitch
    mode: Mode | None = None
    # The switch could not be read: the mode fails safe (dry run) and the report says why.
    switch_error: RemediationError | None = None

    def resolve_mode(self, dry_run_asked: bool | None) -> Mode:
        self.mode, self.switch_error = decide_mode(self.switch, dry_run_asked)
        return self.mode


class Stages(Protocol[DepsT, EventT, SnapT, PlanT, DoneT, NoteT]):
    """One function's part of the pipeline, in the order the pipeline calls it.

    ``detection`` functions read and tell in every mode, ``off`` included; the others stop at ``off``
    before reading anything. A function that ``replays_retries`` runs its work once per event:
    Lambda's retry of it (same request id) replays the first attempt's record and message (a
    ``note_type``) instead of acting again (``core.replay``)."""

    @property
    def function(self) -> str:
        """The function's name (a ``FunctionName`` for the built-in three)."""
        ...

    @property
    def detection(self) -> bool: ...
    @property
    def replays_retries(self) -> bool: ...
    @property
    def note_type(self) -> type[Any]: ...

    def route(self, event: Any, deps: DepsT, door: Door) -> Routed[Any]:
        """Which events it takes, each verified at the door (``core.door``) before anything else."""
        ...

    def event_ages(self, deps: DepsT) -> EventAges:
        """The maximum age of each EventBridge route's events (the targets' ``max_event_age``)."""
        ...

    def agent_service(self, deps: DepsT) -> str | None:
        """The agent service a service's function serves (None for the environment's functions)."""
        ...

    def begin(self, start: Start[DepsT]) -> EventT | Settled:
        """The routed trigger as the function's own event, with the mode resolved
        (``start.resolve_mode``), or ``Settled`` when it needs no work."""
        ...

    def read(self, run: Run[DepsT, EventT]) -> SnapT: ...
    def decide(self, run: Run[DepsT, EventT], snapshot: SnapT) -> PlanT: ...

    def hold(self, run: Run[DepsT, EventT], snapshot: SnapT, plan: PlanT) -> tuple[PlanT, str | None]:
        """The plan to carry out now and, when part of it is kept back (quiet hours, a deployment
        in progress), why: steps that finish or roll back an action already begun are never held."""
        ...

    def act(self, run: Run[DepsT, EventT], snapshot: SnapT, plan: PlanT) -> DoneT: ...
    def record(self, run: Run[DepsT, EventT], work: Work[SnapT, PlanT, DoneT]) -> None: ...

    def refusals(self, run: Run[DepsT, EventT], work: Work[SnapT, PlanT, DoneT]) -> list[Refusal]:
        """Decisions not to act that an operator must know, for the action events."""
        ...

    def compose(self, run: Run[DepsT, EventT], work: Work[SnapT, PlanT, DoneT]) -> NoteT | None: ...
    def tell(self, run: Run[DepsT, EventT], note: NoteT) -> Told | None:
        """Deliver the message; what the delivery did comes back for the pipeline to record (None:
        nothing to record)."""
        ...

    def incident_of(self, note: NoteT) -> str | None: ...


class StageDefaults(Generic[DepsT, EventT, SnapT, PlanT, DoneT, NoteT]):
    """The optional stages, for a function that has none of its own."""

    detection = False
    replays_retries = False
    note_type: type[Any] = object

    def agent_service(self, deps: DepsT) -> str | None:
        return None

    def hold(self, run: Run[DepsT, EventT], snapshot: SnapT, plan: PlanT) -> tuple[PlanT, str | None]:
        return plan, None

    def refusals(self, run: Run[DepsT, EventT], work: Work[SnapT, PlanT, DoneT]) -> list[Refusal]:
        return []

    def incident_of(self, note: NoteT) -> str | None:
        return None
