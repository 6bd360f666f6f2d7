"""The invocation report's shape: the trigger, the mode, candidates with decisions,
actions with outcomes, typed errors. Exactly one per invocation, also when it fails."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field


class Mode(StrEnum):
    ENFORCE = "enforce"
    DRY_RUN = "dry-run"
    OFF = "off"


class TriggerKind(StrEnum):
    SCHEDULE = "schedule"
    MANUAL = "manual"
    ALARM = "alarm"
    SUSPECT_WORKER = "suspect-worker"


class Trigger(BaseModel):
    kind: TriggerKind
    source: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)


class Decision(StrEnum):
    ACT = "act"
    WOULD_ACT = "would-act"
    SKIP = "skip"
    # Planned, but kept back by a hold (quiet hours, a deployment in progress): nothing was done.
    HELD = "held"


class Outcome(StrEnum):
    DONE = "done"
    ALREADY_DONE = "already-done"
    SKIPPED = "skipped"
    FAILED = "failed"
    # The step was started and its result never came back (a lost reply, an interrupted run): the
    # resource must be re-read before anyone counts it as done or not done.
    UNKNOWN = "unknown"


class ErrorRecord(BaseModel):
    code: str
    message: str
    resource: str | None = None


# Empty facts, an empty reason and a missing error are left out of the serialized report: a
# thousand deletions are a thousand candidates and a thousand actions, and must fit the cap.
def _empty(value: Any) -> bool:
    return not value


class Candidate(BaseModel):
    resource: str
    decision: Decision
    reason: str
    facts: dict[str, Any] = Field(default_factory=dict, exclude_if=_empty)


class ActionRecord(BaseModel):
    resource: str
    action: str
    outcome: Outcome
    reason: str = Field(default="", exclude_if=_empty)
    error: ErrorRecord | None = Field(default=None, exclude_if=_empty)


@dataclass(frozen=True)
class Refusal:
    """A step the run decided not to take that an operator must know (a guardrail, a cap, a hold)."""

    resource: str
    action: str
    reason: str


@dataclass
class Intent:
    """A destructive step announced before it runs; ``resolve`` records how it ended."""

    sequence: int
    resource: str
    action: str
    reason: str
    resolved: bool = False


class Report(BaseModel):
    function: str
    # The release that wrote it (``fleet_remediation.__version__``).
    version: str
    environment: str | None
    agent_service: str | None = None
    invocation_id: str | None
    # The incident the run's message belongs to (``core.incidents``): what ``lkfr audit`` groups by.
    incident: str | None = None
    trigger: Trigger | None
    mode: Mode | None
    status: str
    started_at: datetime
    finished_at: datetime
    candidates: list[Candidate]
    skipped: dict[str, int]
    actions: list[ActionRecord]
    errors: list[ErrorRecord]
    summary: dict[str, Any]
    notifications: list[str]
    truncated: dict[str, int]

    def serialized_bytes(self) -> int:
        """The size of the report as the logger writes it (compact JSON, UTF-8)."""
        return len(self.model_dump_json().encode())


@dataclass(frozen=True)
class RunFacts:
    """What a run's message is built from: the results its stages recorded, as one value."""

    function: str
    invocation_id: str | None
    started_at: datetime
    mode: Mode | None
    status: str
    trigger: Trigger | None
    actions: tuple[ActionRecord, ...]
    errors: tuple[ErrorRecord, ...]
    candidates: tuple[Candidate, ...]

    @property
    def acts(self) -> bool:
        return self.mode is Mode.ENFORCE
