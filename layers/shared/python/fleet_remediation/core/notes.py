"""What a stage sets aside on its way without failing for it: an error it tolerated, a target or a
look it skipped. A stage and its helpers note these on the run (``Run.noted``); they never see the
report. The pipeline records them (``core.pipeline``) before the act journals its first step and
once the work ends, failed or not, so the report lists everything in the order it happened and a
stage that fails keeps what it noted before."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Decision


@dataclass(frozen=True)
class Skipped:
    """A target or a look left alone, and why (a skipped candidate in the report)."""

    resource: str
    reason: str
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass
class Noted:
    """Append-only: what the stages noted and the report does not hold yet, in order."""

    pending: list[RemediationError | Skipped] = field(default_factory=list)

    def error(self, error: RemediationError) -> None:
        self.pending.append(error)

    def skip(self, resource: str, reason: str, **facts: Any) -> None:
        self.pending.append(Skipped(resource, reason, facts))

    def record(self, report: ReportBuilder) -> None:
        """Write what is pending into ``report``, in the order it was noted, and forget it."""
        for item in self.pending:
            if isinstance(item, Skipped):
                report.candidate(item.resource, Decision.SKIP, item.reason, **item.facts)
            else:
                report.error(item)
        self.pending.clear()
