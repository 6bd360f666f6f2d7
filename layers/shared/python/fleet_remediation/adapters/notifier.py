"""SNS notifications for the on-call person, delivered or loudly not.

``SnsNotifier.publish`` retries a publish SNS refused (throttled, or no connection made) with
exponential backoff (with jitter) inside ``PUBLISH_BUDGET_SECONDS``; every attempt is one botocore
attempt with its own connect and read timeout (``SNS_PUBLISH_ATTEMPT``). If SNS still has not taken
the message, it raises ``NotificationLostError``. A publish that may have landed (a 5xx, a reset, a
timeout) is never sent again: ``NotificationUnknownError``.

``NotificationDelivery.send`` renders one ``core.messages.Notification`` for each configured topic
(readable text; the chat custom-notification JSON), publishes each under its own once-key (separate
from the keys of the actions it reports), records each message id in the report, and on a lost one
marks the invocation to fail after its report: Lambda retries the asynchronous event (then keeps it
in the DLQ), and on the retry the actions' once-keys replay while the undelivered message is sent.
A message whose publish may have landed is recorded as such under its once-key, so no retry sends
it again; every message carries a ``notification_id`` attribute, the same on every retry, by which
a receiver drops a duplicate.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from fleet_remediation.adapters.aws_clients import aws_client, guard_side_effects
from fleet_remediation.adapters.idempotency import OnceGuard, RunEveryTime
from fleet_remediation.contract import metrics as metric_definitions
from fleet_remediation.contract.budgets import PUBLISH_BUDGET_SECONDS, SNS_PUBLISH_ATTEMPT
from fleet_remediation.core.errors import (
    NO_REPLY,
    AwsApiError,
    ConcurrentActionError,
    NotificationLostError,
    NotificationUnknownError,
    OnceRecordUnknownError,
    RemediationError,
    aws_api_errors,
)
from fleet_remediation.core.messages import Notification, message_attributes, render_chat, render_email
from fleet_remediation.core.observability import emit, logger
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Mode
from fleet_remediation.core.told import Told

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient

# SNS rejects subjects longer than 100 characters.
SUBJECT_LIMIT = 100
FIRST_BACKOFF_SECONDS = 0.1
# Refusals worth another attempt: throttling (SNS's or its KMS key's) and a connection never made.
# A 5xx is not one: the message may have landed.
RETRYABLE_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "KMSThrottling",
        "KMSThrottlingException",
        NO_REPLY,
    }
)
# The message attribute that names one notification on one channel, the same on every retry.
NOTIFICATION_ID_ATTRIBUTE = "notification_id"


class Notifier(Protocol):
    def publish(self, subject: str, message: str, attributes: dict[str, str] | None = None) -> str: ...


class SnsNotifier:
    def __init__(
        self,
        topic_arn: str,
        client: SNSClient | None = None,
        *,
        budget_seconds: float = PUBLISH_BUDGET_SECONDS,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.topic_arn = topic_arn
        self.budget_seconds = budget_seconds
        # One botocore attempt per call: the retries (and their budget) are ours.
        self._client = guard_side_effects(client) if client else aws_client(SNS_PUBLISH_ATTEMPT)
        self._sleep = sleep
        self._clock = clock

    def publish(self, subject: str, message: str, attributes: dict[str, str] | None = None) -> str:
        message_attributes: dict[str, Any] = {
            key: {"DataType": "String", "StringValue": value} for key, value in (attributes or {}).items()
        }
        deadline = self._clock() + self.budget_seconds
        backoff = FIRST_BACKOFF_SECONDS
        attempt = 0
        while True:
            attempt += 1
            try:
                with aws_api_errors("SNS Publish", self.topic_arn):
                    response = self._client.publish(
                        TopicArn=self.topic_arn,
                        Subject=subject[:SUBJECT_LIMIT],
                        Message=message,
                        MessageAttributes=message_attributes,
                    )
                return str(response["MessageId"])
            except AwsApiError as exc:
                if exc.unknown:
                    raise NotificationUnknownError(
                        f"SNS may have taken the notification (attempt {attempt}): {exc.message}; "
                        "not sent again",
                        resource=self.topic_arn,
                    ) from exc
                if exc.aws_code not in RETRYABLE_CODES:
                    raise self._lost(exc.message, attempt) from exc
                problem = exc.message
            wait = backoff * random.uniform(0.5, 1.0)
            # Start another attempt only if it can finish inside the budget.
            if self._clock() + wait + SNS_PUBLISH_ATTEMPT.worst_case_seconds > deadline:
                raise self._lost(problem, attempt)
            logger.warning(
                "SNS publish refused, retrying",
                extra={"topic": self.topic_arn, "attempt": attempt, "problem": problem},
            )
            self._sleep(wait)
            backoff *= 2

    def _lost(self, problem: str, attempts: int) -> NotificationLostError:
        return NotificationLostError(
            f"SNS did not take the notification after {attempts} attempt(s) within "
            f"{self.budget_seconds:g}s: {problem}",
            resource=self.topic_arn,
        )


def notification_id(once_key: dict[str, str] | None, channel: str) -> str:
    """One message's id: derived from its once-key, so Lambda's retry of the invocation sends (if it
    must) the same id; without a once-key, a fresh one."""
    if once_key is None:
        return str(uuid.uuid4())
    canonical = json.dumps({**once_key, "delivery": channel}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def publish_at_most_once(notifier: Notifier, item: Rendered, attributes: dict[str, str]) -> dict[str, Any]:
    """The once-guarded publish: a message that may have landed is a result (``unknown``), not an
    error, so its once-record is kept and no retry of the invocation sends it again."""
    try:
        return {"message_id": notifier.publish(item.subject, item.body, attributes)}
    except NotificationUnknownError as exc:
        return {"message_id": None, "unknown": exc.message}


@dataclass(frozen=True)
class Rendered:
    channel: str
    subject: str
    body: str


@dataclass
class NotificationDelivery:
    """Where a function's notifications go: the readable-text topic (e-mail and other
    subscribers) and, when configured, the chat topic carrying the custom-notification JSON."""

    text: Notifier
    chat: Notifier | None = None
    once: OnceGuard = field(default_factory=RunEveryTime)

    def render(self, note: Notification) -> list[Rendered]:
        subject, body = render_email(note)
        rendered = [Rendered("email", subject, body)]
        if self.chat is not None:
            rendered.append(Rendered("chat", subject, json.dumps(render_chat(note), ensure_ascii=False)))
        return rendered

    def deliver(self, note: Notification, once_key: dict[str, str] | None = None) -> Delivery:
        """Deliver to every topic, each once per ``once_key`` when given; what happened comes back
        (message ids, a replayed delivery's too: it carries this invocation's news)."""
        delivery = Delivery()
        for item in self.render(note):
            notifier = self.text if item.channel == "email" else self.chat
            assert notifier is not None  # render() only yields configured channels
            attributes = {
                **message_attributes(note),
                NOTIFICATION_ID_ATTRIBUTE: notification_id(once_key, item.channel),
            }

            def publish(
                notifier: Notifier = notifier, item: Rendered = item, attributes: dict[str, str] = attributes
            ) -> dict[str, Any]:
                return publish_at_most_once(notifier, item, attributes)

            self._deliver_one(note, item.channel, once_key, publish, delivery)
        return delivery

    def send(
        self, note: Notification, report: ReportBuilder, once_key: dict[str, str] | None = None
    ) -> Delivery:
        """``deliver``, recorded into the report."""
        delivery = self.deliver(note, once_key)
        delivery.record(report)
        return delivery

    def _deliver_one(
        self,
        note: Notification,
        channel: str,
        once_key: dict[str, str] | None,
        publish: Callable[[], dict[str, Any]],
        delivery: Delivery,
    ) -> None:
        try:
            result, replayed = self._once(once_key, channel, publish, delivery)
        except NotificationLostError as exc:
            emit(metric_definitions.NOTIFICATIONS_LOST, 1)
            delivery.lost.append(exc)
            return
        except ConcurrentActionError as exc:
            # Another delivery of the same incident is sending it right now: not sent from here.
            delivery.problems.append(exc)
            return
        if result.get("unknown"):
            # It may have gone out: told in the report, never sent again (nor on Lambda's retry).
            delivery.problems.append(NotificationUnknownError(str(result["unknown"]), resource=channel))
            return
        message_id = str(result["message_id"])
        delivery.message_ids.append(message_id)
        if replayed:
            logger.info(
                "notification already sent",
                extra={"channel": channel, "incident_id": note.incident_id, "message_id": message_id},
            )
        else:
            emit(metric_definitions.NOTIFICATIONS_SENT, 1)

    def _once(
        self,
        once_key: dict[str, str] | None,
        channel: str,
        publish: Callable[[], dict[str, Any]],
        delivery: Delivery,
    ) -> tuple[dict[str, Any], bool]:
        if once_key is None:
            return publish(), False
        try:
            return self.once.run_once({**once_key, "delivery": channel}, publish)
        except OnceRecordUnknownError as exc:
            # Without the once-store a retry may repeat this message; losing it would be worse. The
            # message is sent: the invocation need not fail for it.
            delivery.problems.append(
                AwsApiError(exc.message, aws_code="IdempotencyStore", resource=exc.resource)
            )
            return publish(), False


@dataclass
class Delivery:
    """What one notification's delivery did: the message ids SNS gave, the problems a report
    must show, and the channels SNS did not take (the invocation fails after its report, so
    Lambda retries the event)."""

    message_ids: list[str] = field(default_factory=list)
    problems: list[RemediationError] = field(default_factory=list)
    lost: list[NotificationLostError] = field(default_factory=list)

    def record(self, report: ReportBuilder) -> None:
        Told().delivered(self).record(report)


def preview_or_deliver(note: Notification, delivery: NotificationDelivery, mode: Mode, preview: bool) -> Told:
    """A person's preview (a manual dry run): the message goes into the report and nobody else is
    told; otherwise it is delivered once per incident and mode."""
    if preview:
        subject, text = render_email(note)
        return Told(summary={"would_notify": {"subject": subject, "text": text}})
    return Told().delivered(
        delivery.deliver(note, once_key={"incident": note.incident_id, "mode": mode.value})
    )


class NotifyingDependencies:
    """A function's dependencies that notify (each declares these as its own dataclass fields):
    ``delivery`` over their channels and once-keys."""

    notifier: Notifier
    chat_notifier: Notifier | None
    once: OnceGuard

    @property
    def delivery(self) -> NotificationDelivery:
        return NotificationDelivery(self.notifier, self.chat_notifier, self.once)
