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
from typing import Any

from pydantic import BaseModel

from fleet_remediation.contract.budgets import DRAINER_NOTICE_MARKERS
from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.core import messages
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.pipeline import Run
from fleet_remediation.core.report_model import Mode
from fleet_remediation.core.told import Told
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


def notify(run: Run[DrainerDependencies, Any], lines: list[Line], context: MessageContext) -> Told:
    """Deliver what an earlier attempt of this invocation could not, then this run's message if
    any line is new. What the deliveries did comes back for the pipeline to record: a problem is a
    report error, a lost message also fails the invocation after its report."""
    deps, invocation_id, told = run.deps, run.invocation_id, Told()
    held = _held(invocation_id, deps, told)
    still_lost = [item for item in held if _lost(item, deps, told)]
    if held:
        told.summary["held_notifications"] = f"{len(held) - len(still_lost)} of {len(held)} delivered"
    fresh = new_lines(lines, deps, run.mode)
    if any(fresh):
        composed = compose(lines, run.facts(told.errors), context)
        note, buttons_left_off = with_chat_buttons(composed, deps)
        if buttons_left_off is not None:
            told.summary["chat_buttons"] = buttons_left_off
        once_key = {
            "function": FunctionName.WORKER_DRAINER.value,
            "incident": note.incident_id,
            "invocation": invocation_id or "local",
        }
        item = HeldNotification(note=note, once_key=once_key)
        if _lost(item, deps, told):
            still_lost.append(item)
    _keep(still_lost, bool(held), invocation_id, deps, told)
    return told


def _lost(item: HeldNotification, deps: DrainerDependencies, told: Told) -> bool:
    """Deliver ``item``; whether SNS did not take it (then it is held for Lambda's retry)."""
    delivery = deps.delivery.deliver(item.note, item.once_key)
    told.delivered(delivery)
    return bool(delivery.lost)


def _held(invocation_id: str | None, deps: DrainerDependencies, told: Told) -> list[HeldNotification]:
    if deps.outbox is None or invocation_id is None:
        return []
    try:
        payload = deps.outbox.held(invocation_id)
    except RemediationError as exc:
        told.errors.append(exc)
        return []
    return Outbox.model_validate_json(payload).held if payload else []


def _keep(
    lost: list[HeldNotification], had: bool, invocation_id: str | None, deps: DrainerDependencies, told: Told
) -> None:
    """Hold what is still undelivered for the next retry; clear the outbox once all went out."""
    if deps.outbox is None or invocation_id is None or not (lost or had):
        return
    try:
        if lost:
            deps.outbox.hold(invocation_id, Outbox(held=lost).model_dump_json(), deps.clock())
        else:
            deps.outbox.release(invocation_id)
    except RemediationError as exc:
        told.errors.append(exc)


def new_lines(lines: list[Line], deps: DrainerDependencies, mode: Mode | None) -> list[bool]:
    """Which lines are new. Markers are written for the first ``DRAINER_NOTICE_MARKERS`` keyed lines,
    the number the run's budget counts; a line beyond them is told without one."""
    keyed = [index for index, line in enumerate(lines) if line.key is not None]
    marked = set(keyed[:DRAINER_NOTICE_MARKERS])
    return [index not in marked or _new(line, deps, mode) for index, line in enumerate(lines)]


def _new(line: Line, deps: DrainerDependencies, mode: Mode | None) -> bool:
    if line.key is None:
        return True
    mode_name = mode.value if mode else "unknown"
    try:
        ttl = int(NOTICE_REPEAT.total_seconds())
        return deps.ledger.first_notice(f"{mode_name}#{line.key}", deps.clock(), ttl)
    except RemediationError:
        return True  # better told twice than not at all
