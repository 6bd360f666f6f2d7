"""The invocation report: exactly one per invocation, also when it fails.

A report is bounded whatever the fleet size or the input, so its one log line always fits one
CloudWatch Logs event (256 KB before 2025, 1 MB since) with room to spare and the runbooks'
``report.*`` queries keep working:

- every acted and would-act candidate and every action is listed;
- skipped candidates are counted by reason in ``skipped``; the first ``SKIPPED_SAMPLE_SIZE`` of
  each reason are listed, the rest only counted;
- strings are cut to ``MAX_STRING_CHARS`` and lists/objects inside facts, the summary and the
  trigger to ``MAX_COLLECTION_ITEMS``;
- if the serialized report would still exceed ``MAX_REPORT_BYTES``, the listed skips go first,
  then the candidates' facts, then (only in extreme cases) the tail of the lists.

``truncated`` says what is not in the report and how much (empty when nothing is missing). What
the cap pushed out of an acted candidate, an action or an error is logged before the report as
``remediation report detail`` lines (each at most ``DETAIL_LINE_BYTES``, same invocation id);
skipped candidates beyond the sample are logged there too when the log level is DEBUG.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from fleet_remediation import __version__
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.observability import logger
from fleet_remediation.core.report_bounds import (
    MAX_COLLECTION_ITEMS,
    MAX_SKIP_REASONS,
    OTHER_REASONS,
    SKIPPED_SAMPLE_SIZE,
    Bounder,
    cut_text,
    detail_chunks,
    fit_report,
    skip_reason,
)
from fleet_remediation.core.report_model import (
    ActionRecord,
    Candidate,
    Decision,
    ErrorRecord,
    Intent,
    Mode,
    Outcome,
    Refusal,
    Report,
    RunFacts,
    Trigger,
)


class ReportBuilder:
    """Collects what one invocation saw, decided and did. ``finish`` is called exactly once.

    ``full_detail``: keep every skipped candidate beyond the sample for the detail log lines
    (costly at fleet scale; the handlers turn it on at DEBUG log level only)."""

    def __init__(
        self,
        function: str,
        invocation_id: str | None,
        started_at: datetime | None = None,
        *,
        full_detail: bool = False,
    ) -> None:
        self.function = function
        self.invocation_id = invocation_id
        self.started_at = started_at or datetime.now(UTC)
        self.full_detail = full_detail
        self.environment: str | None = None
        # A service's responder or drainer names its agent service (None: the environment's function).
        self.agent_service: str | None = None
        self.incident: str | None = None
        self.version = __version__
        # Decisions not to act that an operator must know (each becomes an action event).
        self.refusals: list[Refusal] = []
        self.trigger: Trigger | None = None
        self.mode: Mode | None = None
        self.candidates: list[Candidate] = []
        self.actions: list[ActionRecord] = []
        self.errors: list[ErrorRecord] = []
        self.summary: dict[str, Any] = {}
        self.notifications: list[str] = []
        self._intents: list[Intent] = []
        self.skipped: Counter[str] = Counter()
        self.truncated: Counter[str] = Counter()
        self.detail: list[dict[str, Any]] = []
        self._bound = Bounder(self.truncated)
        self._listed_skips: Counter[str] = Counter()
        # Raised once the report is logged, so Lambda retries the asynchronous event (e.g. a
        # notification SNS did not take); the retry's once-keys keep it from repeating actions.
        self.failure_after_report: RemediationError | None = None

    def candidate(self, resource: str, decision: Decision, reason: str, **facts: Any) -> None:
        """Record a decision. A skip is counted under ``skip_reason(reason)`` and listed only while
        that reason's sample has room."""
        if decision is Decision.SKIP:
            key = self._skip_key(reason)
            self.skipped[key] += 1
            if self._listed_skips[key] >= SKIPPED_SAMPLE_SIZE:
                self.truncated["candidates"] += 1
                if self.full_detail:
                    self.detail.append(
                        self._candidate(resource, decision, reason, facts).model_dump(mode="json")
                    )
                return
            self._listed_skips[key] += 1
        self.candidates.append(self._candidate(resource, decision, reason, facts))

    def skip_sample_room(self, reason: str) -> int:
        """How many more skips with this reason would be listed (or kept for the detail lines).
        A caller deciding a whole fleet builds candidates for that many and counts the rest with
        ``count_skip``, so a skipped room costs no candidate at all."""
        if self.full_detail:
            return sys.maxsize
        return max(SKIPPED_SAMPLE_SIZE - self._listed_skips[self._skip_key(reason)], 0)

    def count_skip(self, reason: str, count: int = 1) -> None:
        """Count skips that are not listed (see ``skip_sample_room``)."""
        if count <= 0:
            return
        self.skipped[self._skip_key(reason)] += count
        self.truncated["candidates"] += count

    def action(
        self,
        resource: str,
        action: str,
        outcome: Outcome,
        reason: str = "",
        error: RemediationError | None = None,
    ) -> ActionRecord:
        record = ActionRecord(
            resource=self._bound.text(resource),
            action=action,
            outcome=outcome,
            reason=self._bound.text(reason),
            error=self._error_record(error.code, error.message, error.resource) if error else None,
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

    def resolve_unfinished(self) -> None:
        """Report every announced step that has no outcome as ``unknown``."""
        for intent in self._intents:
            if not intent.resolved:
                self.resolve(intent, Outcome.UNKNOWN, "no outcome recorded: the step was interrupted")

    def error(self, error: RemediationError) -> None:
        self.errors.append(self._error_record(error.code, error.message, error.resource))
        if error.fails_invocation:
            self.fail_after_report(error)

    def fail_after_report(self, error: RemediationError) -> None:
        """End the invocation with ``error`` after its report is logged (the first one wins)."""
        if self.failure_after_report is None:
            self.failure_after_report = error

    def internal_error(self, exc: BaseException) -> None:
        self.errors.append(self._error_record("InternalError", f"{type(exc).__name__}: {exc}", None))

    @property
    def acts(self) -> bool:
        """Whether this invocation may change anything at all."""
        return self.mode is Mode.ENFORCE

    def planned(self, held: bool = False) -> Decision:
        """How a positive decision is recorded in this mode, or under a hold."""
        if held:
            return Decision.HELD
        return Decision.ACT if self.acts else Decision.WOULD_ACT

    def status(self, errors: Sequence[ErrorRecord] | None = None) -> str:
        errors = self.errors if errors is None else errors
        failed_actions = any(a.outcome in (Outcome.FAILED, Outcome.UNKNOWN) for a in self.actions)
        if errors and not self.actions:
            return "failed"
        if errors or failed_actions:
            return "partial"
        return "ok"

    def facts(self, pending: Sequence[RemediationError] = ()) -> RunFacts:
        """What the stages recorded so far, and the ``pending`` errors a stage has met but the
        report does not hold yet, for the message."""
        errors = (*self.errors, *(_unbounded_record(error) for error in pending))
        recorded = (self.trigger, tuple(self.actions), errors, tuple(self.candidates))
        return RunFacts(
            self.function, self.invocation_id, self.started_at, self.mode, self.status(errors), *recorded
        )

    def finish(self, finished_at: datetime | None = None) -> Report:
        self.resolve_unfinished()
        trigger = self.trigger
        if trigger is not None:
            trigger = Trigger(
                kind=trigger.kind,
                source=None if trigger.source is None else self._bound.text(trigger.source),
                detail=self._bound.mapping(trigger.detail),
            )
        report = Report(
            function=self.function,
            version=self.version,
            environment=self.environment,
            agent_service=self.agent_service,
            invocation_id=self.invocation_id,
            incident=self.incident,
            trigger=trigger,
            mode=self.mode,
            status=self.status(),
            started_at=self.started_at,
            finished_at=finished_at or datetime.now(UTC),
            candidates=list(self.candidates),
            skipped=dict(self.skipped),
            actions=list(self.actions),
            errors=list(self.errors),
            summary=self._bound.mapping(self.summary),
            notifications=[self._bound.text(n) for n in self.notifications[:MAX_COLLECTION_ITEMS]],
            truncated={},
        )
        if len(self.notifications) > MAX_COLLECTION_ITEMS:
            self.truncated["notifications"] += len(self.notifications) - MAX_COLLECTION_ITEMS
        fit_report(report, self.truncated, self.detail, full_detail=self.full_detail)
        report.truncated = dict(self.truncated)
        return report

    def detail_lines(self) -> Iterator[list[dict[str, Any]]]:
        """What the report could not hold, in chunks of at most ``DETAIL_LINE_BYTES``."""
        return detail_chunks(self.detail)

    def _skip_key(self, reason: str) -> str:
        key = skip_reason(reason)
        if key not in self.skipped and len(self.skipped) >= MAX_SKIP_REASONS:
            return OTHER_REASONS
        return key

    def _candidate(self, resource: str, decision: Decision, reason: str, facts: dict[str, Any]) -> Candidate:
        bound = self._bound
        return Candidate(
            resource=bound.text(resource),
            decision=decision,
            reason=bound.text(reason),
            facts=bound.mapping(facts),
        )

    def _error_record(self, code: str, message: str, resource: str | None) -> ErrorRecord:
        bound = self._bound
        return ErrorRecord(
            code=code,
            message=bound.text(message),
            resource=None if resource is None else bound.text(resource),
        )


def _unbounded_record(error: RemediationError) -> ErrorRecord:
    """``error`` as the report will hold it, cut as it will be (counted when it is recorded)."""
    resource = None if error.resource is None else cut_text(error.resource)
    return ErrorRecord(code=error.code, message=cut_text(error.message), resource=resource)
