"""When the drainer tells, and how: one message per run that has something new to say, delivered
through the shared delivery (``adapters.notifier.NotificationDelivery``: the e-mail and chat
topics, retries with backoff within the budget, a once-key per channel, ``NotificationsSent`` /
``NotificationsLost`` metrics).

Conditions that persist across ticks (a refusal, a dry-run step, an error, fleet-wide slowness) are
told once per ``NOTICE_REPEAT`` (notice markers in the ledger); what was done, failed or is unknown
is always told. When anything is new, the message tells the whole picture.

A message SNS does not take fails the invocation after its report (``NotificationLost``), so
Lambda retries the event. The retry runs again — every step re-reads its task first, so nothing is
done twice — and finds the work done, so the lost message is held in the outbox under the
invocation's request id and the retry delivers it (to the channel that lost it only: the other
one's once-key replays), before telling its own news, if any.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel

from fleet_remediation.contract.budgets import DRAINER_NOTICE_MARKERS
from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.core import messages
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.report import ReportBuilder
from worker_drainer.dependencies import DrainerDependencies
from worker_drainer.tell.chat_buttons import with_chat_buttons
from worker_drainer.tell.message import MessageContext, compose
from worker_drainer.tell.message_lines import Line

NOTICE_REPEAT = timedelta(hours=1)


class HeldNotification(BaseModel):
    note: messages.Notification
    once_key: dict[str, str]


class Outbox(BaseModel):
    """What the outbox holds for one invocation: the messages its attempts could not deliver."""

    held: list[HeldNotification]


def notify(
    report: ReportBuilder, lines: list[Line], context: MessageContext, deps: DrainerDependencies
) -> None:
    """Deliver what an earlier attempt of this invocation could not, then this run's message if
    any line is new. A delivery failure is a report error (and fails the invocation after it)."""
    held = _held(report, deps)
    still_lost = [item for item in held if _lost(item, report, deps)]
    if held:
        report.summary["held_notifications"] = f"{len(held) - len(still_lost)} of {len(held)} delivered"
    fresh = new_lines(lines, deps, report)
    if any(fresh):
        note = with_chat_buttons(compose(lines, report.facts(), context), report, deps)
        once_key = {
            "function": FunctionName.WORKER_DRAINER.value,
            "incident": note.incident_id,
            "invocation": report.invocation_id or "local",
        }
        item = HeldNotification(note=note, once_key=once_key)
        if _lost(item, report, deps):
            still_lost.append(item)
    _keep(still_lost, bool(held), report, deps)


def _lost(item: HeldNotification, report: ReportBuilder, deps: DrainerDependencies) -> bool:
    """Deliver ``item``; whether SNS did not take it (then it is held for Lambda's retry)."""
    return bool(deps.delivery.send(item.note, report, item.once_key).lost)


def _held(report: ReportBuilder, deps: DrainerDependencies) -> list[HeldNotification]:
    if deps.outbox is None or report.invocation_id is None:
        return []
    try:
        payload = deps.outbox.held(report.invocation_id)
    except RemediationError as exc:
        report.error(exc)
        return []
    return Outbox.model_validate_json(payload).held if payload else []


def _keep(lost: list[HeldNotification], had: bool, report: ReportBuilder, deps: DrainerDependencies) -> None:
    """Hold what is still undelivered for the next retry; clear the outbox once all went out."""
    if deps.outbox is None or report.invocation_id is None or not (lost or had):
        return
    try:
        if lost:
            deps.outbox.hold(report.invocation_id, Outbox(held=lost).model_dump_json(), deps.clock())
        else:
            deps.outbox.release(report.invocation_id)
    except RemediationError as exc:
        report.error(exc)


def new_lines(lines: list[Line], deps: DrainerDependencies, report: ReportBuilder) -> list[bool]:
    """Which lines are new. Markers are written for the first ``DRAINER_NOTICE_MARKERS`` keyed lines,
    the number the run's budget counts; a line beyond them is told without one."""
    keyed = [index for index, line in enumerate(lines) if line.key is not None]
    marked = set(keyed[:DRAINER_NOTICE_MARKERS])
    return [index not in marked or _new(line, deps, report) for index, line in enumerate(lines)]


def _new(line: Line, deps: DrainerDependencies, report: ReportBuilder) -> bool:
    if line.key is None:
        return True
    mode = report.mode.value if report.mode else "unknown"
    try:
        ttl = int(NOTICE_REPEAT.total_seconds())
        return deps.ledger.first_notice(f"{mode}#{line.key}", deps.clock(), ttl)
    except RemediationError:
        return True  # better told twice than not at all
