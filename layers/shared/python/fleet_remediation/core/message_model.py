"""The message model every function fills (``core.messages`` renders it): what happened, why, the
honest counts, how to undo it, where to look, which incident and how urgent.

Plain words first: the headline says what happened to whom and what was done; ``why`` gives the
evidence in words; formulas, p-values and datapoints go in ``details``. Numbers a person reads go
through ``p_value`` or ``figure`` so one message never shows one quantity two ways.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field, model_validator

from fleet_remediation.contract.naming import DrillFunctionName, FunctionName
from fleet_remediation.core.chat_actions import ChatTokenRequest
from fleet_remediation.core.report_model import ActionRecord, Candidate, Decision, ErrorRecord, Mode, Outcome

DRY_RUN_PREFIX = "DRY RUN — would have "
OFF_PREFIX = "remediation is off — "
# SNS: a subject is ASCII, one line, at most 100 characters.
SUBJECT_LIMIT = 100
# What a run's status means to the reader, said apart from the severity of the situation.
RUN_STATUS_WORDS = {"ok": "run completed", "partial": "run partly failed", "failed": "run failed"}


class Severity(StrEnum):
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"


_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.CRITICAL: 2}


def probability(p: float) -> str:
    """One format for a probability: two significant figures, in scientific notation below 0.001."""
    return f"{p:.2g}" if p >= 0.001 else f"{p:.1e}"


def p_value(p: float) -> str:
    return f"p = {probability(p)}"


def figure(value: float) -> str:
    """One format for a measured quantity: three significant figures, no exponent below a million."""
    return f"{value:.3g}" if abs(value) < 1e6 else f"{value:,.0f}"


class Link(BaseModel):
    label: str = Field(min_length=1)
    url: str


class Undo(BaseModel):
    """How to reverse (or stop) what the message reports: a label and a command that pastes.

    ``button`` names the chat custom action that does the same in one tap, with the values it
    reads from the message's ``additionalContext`` (strings, see ``core.chat_actions``). ``chat``:
    what a token button would do; the sender records it under a token and fills ``button`` with it."""

    label: str
    command: str
    button: dict[str, str] | None = None
    chat: ChatTokenRequest | None = None
    # The same with the console commands installed (``lkfr undo ...``): shorter to type.
    short: str | None = None

    def lines(self) -> str:
        """The e-mail's form: the label, the command, and its short form when there is one."""
        short = f"\n  or: {self.short}" if self.short else ""
        return f"{self.label}:\n  {self.command}{short}"


class Counts(BaseModel):
    """Honest counts from the report: actions by outcome, would-act decisions, errors."""

    done: int = 0
    already_done: int = 0
    refused: int = 0
    failed: int = 0
    unknown: int = 0
    would: int = 0
    errors: int = 0

    @classmethod
    def from_records(
        cls, actions: Iterable[ActionRecord], candidates: Iterable[Candidate], errors: Sequence[ErrorRecord]
    ) -> Counts:
        outcomes = [action.outcome for action in actions]
        return cls(
            done=outcomes.count(Outcome.DONE),
            already_done=outcomes.count(Outcome.ALREADY_DONE),
            refused=outcomes.count(Outcome.SKIPPED),
            failed=outcomes.count(Outcome.FAILED),
            unknown=outcomes.count(Outcome.UNKNOWN),
            would=sum(c.decision is Decision.WOULD_ACT for c in candidates),
            errors=len(errors),
        )

    @classmethod
    def from_report(cls, report: Any) -> Counts:
        """From a run's ``RunFacts``, a ``ReportBuilder`` or a finished ``Report`` (each carries the
        three lists)."""
        return cls.from_records(report.actions, report.candidates, report.errors)

    @property
    def clean(self) -> bool:
        return self.failed == 0 and self.unknown == 0 and self.errors == 0

    def line(self) -> str:
        parts = [
            f"done {self.done}",
            f"already done {self.already_done}",
            f"refused {self.refused}",
            f"failed {self.failed}",
            f"unknown {self.unknown}",
        ]
        if self.would:
            parts.insert(0, f"would act {self.would}")
        if self.errors:
            parts.append(f"errors {self.errors}")
        return " · ".join(parts)


def escalate(severity: Severity, status: str, counts: Counts) -> Severity:
    """A failed run is critical; a partial one, or one with unknown outcomes, at least a warning."""
    floor = Severity.INFO
    if status == "failed":
        floor = Severity.CRITICAL
    elif status == "partial" or not counts.clean:
        floor = Severity.WARNING
    return max(severity, floor, key=_RANK.__getitem__)


def mode_headline(mode: Mode | None, *, acted: str, would: str, off: str | None = None) -> str:
    """The first line, marked with the mode: ``acted`` as is in enforce, "DRY RUN — would have
    {would}" in dry-run, "remediation is off — {off}" when the switch is off."""
    if mode is Mode.DRY_RUN:
        return DRY_RUN_PREFIX + would
    if mode is Mode.OFF:
        return OFF_PREFIX + (off or f"nothing done; would have {would}")
    return acted


class Notification(BaseModel):
    environment: str
    function: FunctionName | DrillFunctionName
    agent_service: str | None = Field(
        default=None, description="The agent service a service's responder or drainer speaks for."
    )
    incident_id: str = Field(min_length=1, max_length=256)
    severity: Severity
    mode: Mode | None
    status: str = Field(pattern="^(ok|partial|failed)$")
    headline: str = Field(min_length=1)
    why: list[str] = Field(default_factory=list)
    details: list[str] = Field(default_factory=list)
    counts: Counts = Counts()
    errors: list[str] = Field(default_factory=list)
    undo: list[Undo] = Field(default_factory=list)
    links: list[Link] = Field(default_factory=list)
    resources: list[str] = Field(default_factory=list, description="Room names, task ARNs, ... it is about.")
    invocation_id: str | None = None

    @model_validator(mode="after")
    def _loud_and_honest(self) -> Notification:
        # A dry run or an off switch must be impossible to mistake for the real thing.
        if self.mode is Mode.DRY_RUN and not self.headline.startswith(DRY_RUN_PREFIX):
            raise ValueError(f"a dry-run headline starts with {DRY_RUN_PREFIX!r}")
        if self.mode is Mode.OFF and not self.headline.startswith(OFF_PREFIX):
            raise ValueError(f"an off-mode headline starts with {OFF_PREFIX!r}")
        self.severity = escalate(self.severity, self.status, self.counts)
        return self

    @property
    def status_tag(self) -> str:
        """Said before the headline whenever the run did not fully succeed."""
        if self.status == "failed":
            return "FAILED: "
        if self.status == "partial" or not self.counts.clean:
            return "PARTIAL: "
        return ""

    @property
    def mode_name(self) -> str:
        return self.mode.value if self.mode else "unknown"

    @property
    def scope(self) -> str:
        """Whose message it is: the environment, and the agent service when it is one service's."""
        return f"{self.environment}/{self.agent_service}" if self.agent_service else self.environment

    def summary_line(self) -> str:
        """How urgent the situation is and how the run went, in words that cannot contradict:
        the severity is the situation's, the run's status is said as what happened to the run."""
        service = f" · agent service {self.agent_service}" if self.agent_service else ""
        return (
            f"{self.severity.value.upper()} · {RUN_STATUS_WORDS[self.status]} · mode {self.mode_name} · "
            f"{self.environment} · {self.function.value}{service}"
        )

    def subject(self) -> str:
        return ascii_subject(f"[{self.scope}] {self.status_tag}{self.headline}")


# The typography messages use, spelled out for the ASCII-only subject (en dash, multiplication sign).
_ASCII = {"—": "-", "\u2013": "-", "·": "|", "≥": ">=", "≤": "<=", "→": "->", "…": "...", "\u00d7": "x"}


def ascii_subject(text: str) -> str:
    """SNS subjects must be ASCII without line breaks and under 100 characters."""
    flat = " ".join(text.split())
    plain = "".join(_ASCII.get(char, char) for char in flat).encode("ascii", "ignore").decode()
    return plain if len(plain) <= SUBJECT_LIMIT else plain[: SUBJECT_LIMIT - 3] + "..."
