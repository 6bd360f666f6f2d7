"""What a function's tell stage did, as a value: the pipeline writes it into the report
(``core.pipeline``), so the stage itself never sees the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.report import ReportBuilder


class Delivered(Protocol):
    """One notification's delivery (``adapters.notifier.Delivery``)."""

    @property
    def message_ids(self) -> list[str]: ...
    @property
    def problems(self) -> list[RemediationError]: ...
    @property
    def lost(self) -> list[Any]: ...


@dataclass
class Told:
    """The message ids the channels gave, what went wrong on the way (in order), the messages SNS
    did not take (the invocation fails after its report, so Lambda retries the event), and the
    summary's entries about the telling (e.g. a person's preview of the message)."""

    notifications: list[str] = field(default_factory=list)
    errors: list[RemediationError] = field(default_factory=list)
    lost: list[RemediationError] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)

    def delivered(self, delivery: Delivered) -> Told:
        self.notifications.extend(delivery.message_ids)
        self.errors.extend([*delivery.problems, *delivery.lost])
        self.lost.extend(delivery.lost)
        return self

    def record(self, report: ReportBuilder) -> None:
        report.notifications.extend(self.notifications)
        for error in self.errors:
            report.error(error)
            if any(error is lost for lost in self.lost):
                report.fail_after_report(error)
        report.summary.update(self.summary)
