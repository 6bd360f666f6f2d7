"""The invocation report (DESIGN.md §3): exactly one per invocation, also when it fails."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.observability import logger


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

    @classmethod
    def from_error(cls, error: RemediationError) -> ErrorRecord:
        return cls(code=error.code, message=error.message, resource=error.resource)


class Candidate(BaseModel):
    resource: str
    decision: Decision
    reason: str
    facts: dict[str, Any] = Field(default_factory=dict)


class ActionRecord(BaseModel):
    resource: str
    action: str
    outcome: Outcome
    reason: str = ""
    error: ErrorRecord | None = None


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
    environment: str | None
    invocation_id: str | None
    trigger: Trigger | None
    mode: Mode | None
    status: str
    started_at: datetime
    finished_at: datetime
    candidates: list[Candidate]
    actions: list[ActionRecord]
    errors: list[ErrorRecord]
    summary: dict[str, Any]
    notifications: list[str]


class ReportBuilder:
    """Collects what one invocation saw, decided and did. ``finish`` is called exactly once."""

    def __init__(self, function: str, invocation_id: str | None, started_at: datetime | None = None) -> None:
        self.function = function
        self.invocation_id = invocation_id
        self.started_at = started_at or datetime.now(UTC)
        self.environment: str | None = None
        self.trigger: Trigger | None = None
        self.mode: Mode | None = None
        self.candidates: list[Candidate] = []
        self.actions: list[ActionRecord] = []
        self.errors: list[ErrorRecord] = []
        self.summary: dict[str, Any] = {}
        self.notifications: list[str] = []
        self._intents: list[Intent] = []
        # Raised once the report is logged, so Lambda retries the asynchronous event (e.g. a
        # notification SNS did not take); the retry's once-keys keep it from repeating actions.
        self.failure_after_report: RemediationError | None = None

    def candidate(self, resource: str, decision: Decision, reason: str, **facts: Any) -> None:
        self.candidates.append(Candidate(resource=resource, decision=decision, reason=reason, facts=facts))

    def action(
        self,
        resource: str,
        action: str,
        outcome: Outcome,
        reason: str = "",
        error: RemediationError | None = None,
    ) -> ActionRecord:
        record = ActionRecord(
            resource=resource,
            action=action,
            outcome=outcome,
            reason=reason,
            error=ErrorRecord.from_error(error) if error else None,
        )
        self.actions.append(record)
        return record

    def intend(self, resource: str, action: str, reason: str) -> Intent:
        """Journal a destructive step before it runs: one log line now, so a crash, a hang or a killed
        invocation still leaves a record; a step never resolved is reported with outcome ``unknown``."""
        intent = Intent(len(self._intents), resource, action, reason)
        self._intents.append(intent)
        logger.info(
            "journal: intent",
            extra={
                "journal": {"step": intent.sequence, "resource": resource, "action": action, "reason": reason}
            },
        )
        return intent

    def resolve(
        self, intent: Intent, outcome: Outcome, reason: str = "", error: RemediationError | None = None
    ) -> ActionRecord:
        """Journal how an announced step ended (a log line) and add it to the report's actions."""
        intent.resolved = True
        logger.info(
            "journal: outcome",
            extra={
                "journal": {
                    "step": intent.sequence,
                    "resource": intent.resource,
                    "action": intent.action,
                    "outcome": outcome.value,
                    "reason": reason,
                    "error": error.code if error else None,
                }
            },
        )
        return self.action(intent.resource, intent.action, outcome, reason, error)

    def _unresolved_as_unknown(self) -> None:
        for intent in self._intents:
            if not intent.resolved:
                self.resolve(intent, Outcome.UNKNOWN, "no outcome recorded: the step was interrupted")

    def error(self, error: RemediationError) -> None:
        self.errors.append(ErrorRecord.from_error(error))

    def fail_after_report(self, error: RemediationError) -> None:
        """End the invocation with ``error`` after its report is logged (the first one wins)."""
        if self.failure_after_report is None:
            self.failure_after_report = error

    def internal_error(self, exc: BaseException) -> None:
        self.errors.append(ErrorRecord(code="InternalError", message=f"{type(exc).__name__}: {exc}"))

    @property
    def acts(self) -> bool:
        """Whether this invocation may change anything at all."""
        return self.mode is Mode.ENFORCE

    def planned(self) -> Decision:
        """How a positive decision is recorded in this mode."""
        return Decision.ACT if self.acts else Decision.WOULD_ACT

    def status(self) -> str:
        failed_actions = any(a.outcome in (Outcome.FAILED, Outcome.UNKNOWN) for a in self.actions)
        if self.errors and not self.actions:
            return "failed"
        if self.errors or failed_actions:
            return "partial"
        return "ok"

    def finish(self, finished_at: datetime | None = None) -> Report:
        self._unresolved_as_unknown()
        return Report(
            function=self.function,
            environment=self.environment,
            invocation_id=self.invocation_id,
            trigger=self.trigger,
            mode=self.mode,
            status=self.status(),
            started_at=self.started_at,
            finished_at=finished_at or datetime.now(UTC),
            candidates=self.candidates,
            actions=self.actions,
            errors=self.errors,
            summary=self.summary,
            notifications=self.notifications,
        )
