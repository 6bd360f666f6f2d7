"""What a person reads, from a phone: one message model for every function, two renderings.

A ``Notification`` says what happened (or would have: the headline carries the mode), why (the
evidence), what was done, refused or failed (``Counts``, taken from the report's actions and
errors, so a ``partial`` or ``failed`` report never reads as success), how to undo it, where to look
(links), which incident it belongs to and how urgent it is. Renderings:

* ``render_email`` — (subject, text) for the SNS topic e-mail subscribers read;
* ``render_chat`` — the Amazon Q Developer in chat applications *custom notification* JSON
  (``version`` "1.0", ``source`` "custom", ``content`` and ``metadata``) with the incident id as
  ``metadata.threadId``, so every message of one incident lands in one chat thread;
* ``message_attributes`` — the SNS message attributes (``severity``, ``incident_id``, ...) that
  subscription filter policies match on.

Adopting it in a function::

    from fleet_remediation.core import incidents, messages
    note = messages.Notification(
        environment=env, function=FunctionName.WORKER_DRAINER,
        incident_id=incidents.alarm_incident_id(env, alarm_name, alarm_timestamp),  # or suspect.incident_id
        severity=messages.Severity.WARNING, mode=report.mode, status=report.status(),
        headline=messages.mode_headline(report.mode, acted="cordoned task 2789d238",
                                        would="cordoned task 2789d238", off="nothing cordoned"),
        why=["slow VAD 41.0/min vs fleet median 0.4/min over 30 min"],
        counts=messages.Counts.from_report(report),
        undo=[messages.Undo("Undrain it", "aws lambda invoke ...")],
        links=[messages.Link("ECS task", console_links.ecs_task_link(region, cluster, task_id))],
        invocation_id=report.invocation_id,
    )
    delivery.send(note, report, once_key={...})        # adapters.notifier.NotificationDelivery

Incident ids (``core.incidents``) are deterministic, so every message of one incident — the alarm
transition, the responder, the drainer, the resolution — carries the same one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field, model_validator

from fleet_remediation.contract.naming import (
    INCIDENT_ATTRIBUTE,
    NOTIFICATION_KIND_ATTRIBUTE,
    SEVERITY_ATTRIBUTE,
    FunctionName,
    dashboard_name,
    function_log_group_name,
    function_mode_parameter_name,
    lambda_function_name,
)
from fleet_remediation.core.console_links import dashboard_link, logs_insights_link
from fleet_remediation.core.report_model import ActionRecord, Candidate, Decision, ErrorRecord, Mode, Outcome

DRY_RUN_PREFIX = "DRY RUN — would have "
OFF_PREFIX = "remediation is off — "
# SNS: a subject is ASCII, one line, at most 100 characters.
SUBJECT_LIMIT = 100
# A chat message is read on a phone: long lists end with "... and N more".
MAX_LISTED = 12
CHAT_DESCRIPTION_LIMIT = 3000
CHAT_EVENT_TYPE = "LiveKitFleetRemediation"


class Severity(StrEnum):
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"


_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.CRITICAL: 2}
_CHAT_ICON = {
    Severity.CRITICAL: ":rotating_light:",
    Severity.WARNING: ":warning:",
    Severity.INFO: ":information_source:",
}


class Link(BaseModel):
    label: str
    url: str


class Undo(BaseModel):
    """How to reverse (or stop) what the message reports: a label and a command that pastes."""

    label: str
    command: str


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
        """From a ``ReportBuilder`` or a finished ``Report`` (both carry the three lists)."""
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
    function: FunctionName
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

    def subject(self) -> str:
        return ascii_subject(f"[{self.environment}] {self.status_tag}{self.headline}")


# The typography messages use, spelled out for the ASCII-only subject (en dash, multiplication sign).
_ASCII = {"—": "-", "\u2013": "-", "·": "|", "≥": ">=", "≤": "<=", "→": "->", "…": "...", "\u00d7": "x"}


def ascii_subject(text: str) -> str:
    """SNS subjects must be ASCII without line breaks and under 100 characters."""
    flat = " ".join(text.split())
    plain = "".join(_ASCII.get(char, char) for char in flat).encode("ascii", "ignore").decode()
    return plain if len(plain) <= SUBJECT_LIMIT else plain[: SUBJECT_LIMIT - 3] + "..."


def _listed(items: Sequence[str]) -> list[str]:
    shown = list(items[:MAX_LISTED])
    if len(items) > MAX_LISTED:
        shown.append(f"... and {len(items) - MAX_LISTED} more")
    return shown


def render_email(note: Notification) -> tuple[str, str]:
    """Plain text that reads top to bottom on a phone: what, why, outcome, undo, links."""
    mode = note.mode.value if note.mode else "unknown"
    lines = [
        f"{note.status_tag}{note.headline}",
        f"{note.environment} · {note.function.value} · severity {note.severity.value} · "
        f"status {note.status} · mode {mode}",
        f"Incident {note.incident_id}",
    ]

    def section(title: str, items: Sequence[str]) -> None:
        if items:
            lines.extend(["", title, *(f"- {item}" for item in _listed(items))])

    section("WHY", note.why)
    lines.extend(["", "OUTCOME", note.counts.line()])
    section("DETAILS", note.details)
    section("ERRORS", note.errors)
    section("UNDO", [f"{undo.label}:\n  {undo.command}" for undo in note.undo])
    section("LINKS", [f"{link.label}: {link.url}" for link in note.links])
    if note.invocation_id:
        lines.extend(["", f"Invocation {note.invocation_id} ({note.function.value})"])
    return note.subject(), "\n".join(lines)


def render_chat(note: Notification) -> dict[str, Any]:
    """The Amazon Q Developer in chat applications custom notification (schema version 1.0)."""
    blocks: list[str] = []

    def block(title: str, items: Sequence[str]) -> None:
        if items:
            blocks.append("\n".join([f"*{title}*", *(f"• {item}" for item in _listed(items))]))

    mode = note.mode.value if note.mode else "unknown"
    blocks.append(
        f"*{note.severity.value.upper()}* · status `{note.status}` · mode `{mode}` · "
        f"incident `{note.incident_id}`"
    )
    block("Why", note.why)
    blocks.append(f"*Outcome*\n`{note.counts.line()}`")
    block("Details", note.details)
    block("Errors", note.errors)
    block("Links", [f"{link.label}: {link.url}" for link in note.links])
    description = "\n\n".join(blocks)
    if len(description) > CHAT_DESCRIPTION_LIMIT:
        description = description[: CHAT_DESCRIPTION_LIMIT - 20] + "\n… (see the e-mail)"
    next_steps = [f"{undo.label}: `{undo.command}`" for undo in note.undo]
    next_steps += [f"{link.label}: {link.url}" for link in note.links if link.label.startswith("Runbook")]
    return {
        "version": "1.0",
        "source": "custom",
        "id": f"{note.incident_id}/{note.function.value}/{note.invocation_id or 'local'}",
        "content": {
            "textType": "client-markdown",
            "title": f"{_CHAT_ICON[note.severity]} [{note.environment}] {note.status_tag}{note.headline}",
            "description": description,
            "nextSteps": next_steps,
            "keywords": [note.environment, note.function.value, note.severity.value, mode, note.status],
        },
        "metadata": {
            "threadId": note.incident_id,
            "summary": note.subject(),
            "eventType": f"{CHAT_EVENT_TYPE}.{note.function.value}",
            "relatedResources": note.resources[:MAX_LISTED],
            "additionalContext": {
                "environment": note.environment,
                "function": note.function.value,
                "incident_id": note.incident_id,
                "severity": note.severity.value,
                "mode": mode,
                "status": note.status,
                "invocation_id": note.invocation_id or "",
            },
            "enableCustomActions": True,
        },
    }


def message_attributes(note: Notification) -> dict[str, str]:
    """SNS message attributes: subscription filter policies route on these (CloudWatch's own alarm
    notifications carry none, see ``NOTIFICATION_KIND_ATTRIBUTE``)."""
    return {
        "environment": note.environment,
        SEVERITY_ATTRIBUTE: note.severity.value,
        INCIDENT_ATTRIBUTE: note.incident_id,
        NOTIFICATION_KIND_ATTRIBUTE: note.function.value,
        "mode": note.mode.value if note.mode else "unknown",
        "status": note.status,
    }


def report_query(invocation_id: str) -> str:
    """The Logs Insights query that shows one invocation's report."""
    return (
        f'filter message = "remediation report" and report.invocation_id = "{invocation_id}"\n'
        "| fields @timestamp, report.status, report.mode, report.summary"
    )


def function_links(
    *,
    region: str | None,
    environment: str,
    function: FunctionName,
    runbook: str,
    invocation_id: str | None,
    around: datetime,
) -> list[Link]:
    """Runbook, dashboard and this run's report in Logs Insights (console links need the region)."""
    links = [Link(label="Runbook", url=runbook)]
    if region:
        links.append(Link(label="Dashboard", url=dashboard_link(region, dashboard_name(environment))))
        if invocation_id:
            window = timedelta(minutes=15)
            log_group = function_log_group_name(environment, function)
            query = report_query(invocation_id)
            url = logs_insights_link(region, [log_group], query, around - window, around + window)
            links.append(Link(label="This run's report (Logs Insights)", url=url))
    return links


def stop_function_undo(environment: str, function: FunctionName) -> Undo:
    """Turn this one function off (the environment's switch stays as it is)."""
    name = function_mode_parameter_name(environment, function)
    return Undo(
        label=f"Stop {function.value} now (its own kill switch)",
        command=f"aws ssm put-parameter --overwrite --name {name} --value off",
    )


def drainer_invoke_command(environment: str, action: str, task_id: str) -> str:
    """The CLI line that asks the environment's drainer to ``drain`` or ``undrain`` one task."""
    payload = json.dumps({"action": action, "task": task_id, "dry_run": False})
    return (
        f"aws lambda invoke --function-name {lambda_function_name(environment, FunctionName.WORKER_DRAINER)} "
        f"--cli-binary-format raw-in-base64-out --payload '{payload}' {action}.json"
    )
