"""SNS notifications for the on-call person, delivered or loudly not.

``SnsNotifier.publish`` retries a throttled or failed publish with exponential backoff (with
jitter) inside ``PUBLISH_BUDGET_SECONDS``; every attempt has its own connect and read timeout. If
SNS still has not taken the message, it raises ``NotificationLostError``.

``NotificationDelivery.send`` renders one ``core.messages.Notification`` for each configured topic
(readable text; the chat custom-notification JSON), publishes each under its own once-key (separate
from the keys of the actions it reports), records each message id in the report, and on a lost one
marks the invocation to fail after its report: Lambda retries the asynchronous event (then keeps it
in the DLQ), and on the retry the actions' once-keys replay while the undelivered message is sent.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from fleet_remediation.adapters.idempotency import OnceGuard, RunEveryTime
from fleet_remediation.contract import metrics as metric_definitions
from fleet_remediation.contract.budgets import PUBLISH_BUDGET_SECONDS
from fleet_remediation.core.errors import (
    AwsApiError,
    ConcurrentActionError,
    NotificationLostError,
)
from fleet_remediation.core.messages import Notification, message_attributes, render_chat, render_email
from fleet_remediation.core.observability import emit, logger
from fleet_remediation.core.report import ReportBuilder

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient

# SNS rejects subjects longer than 100 characters.
SUBJECT_LIMIT = 100
# Each attempt: a connect and a read timeout, so a hung endpoint costs at most their sum.
CONNECT_TIMEOUT_SECONDS = 1.0
READ_TIMEOUT_SECONDS = 1.5
FIRST_BACKOFF_SECONDS = 0.1
# Error codes worth another attempt: throttling and SNS's (or its KMS key's) transient failures.
RETRYABLE_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "InternalError",
        "InternalFailure",
        "ServiceUnavailable",
        "KMSThrottling",
        "KMSThrottlingException",
    }
)


class Notifier(Protocol):
    def publish(self, subject: str, message: str, attributes: dict[str, str] | None = None) -> str: ...


def sns_client_config() -> Config:
    # One attempt per call: the retries (and their budget) are ours, not botocore's.
    return Config(
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=READ_TIMEOUT_SECONDS,
        retries={"total_max_attempts": 1},
    )


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
        self._client = client or boto3.client("sns", config=sns_client_config())
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
                response = self._client.publish(
                    TopicArn=self.topic_arn,
                    Subject=subject[:SUBJECT_LIMIT],
                    Message=message,
                    MessageAttributes=message_attributes,
                )
                return response["MessageId"]
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "Unknown")
                problem = f"{code}: {exc.response.get('Error', {}).get('Message', '')}".rstrip(": ")
                if code not in RETRYABLE_CODES:
                    raise self._lost(problem, attempt) from exc
            except BotoCoreError as exc:
                problem = f"Transport: {exc}"
            wait = backoff * random.uniform(0.5, 1.0)
            # Start another attempt only if it can finish inside the budget.
            if self._clock() + wait + CONNECT_TIMEOUT_SECONDS + READ_TIMEOUT_SECONDS > deadline:
                raise self._lost(problem, attempt)
            logger.warning(
                "SNS publish failed, retrying",
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

    def send(self, note: Notification, report: ReportBuilder, once_key: dict[str, str] | None = None) -> None:
        """Deliver to every topic, each once per ``once_key`` when given. Message ids go to
        ``report.notifications`` (a replayed delivery's too: it carries this invocation's news); a
        lost delivery is a report error and fails the invocation after its report."""
        attributes = message_attributes(note)
        for item in self.render(note):
            notifier = self.text if item.channel == "email" else self.chat
            assert notifier is not None  # render() only yields configured channels

            def publish(notifier: Notifier = notifier, item: Rendered = item) -> dict[str, Any]:
                return {"message_id": notifier.publish(item.subject, item.body, attributes)}

            try:
                result, replayed = self._once(once_key, item.channel, publish, report)
            except NotificationLostError as exc:
                emit(metric_definitions.NOTIFICATIONS_LOST, 1)
                report.error(exc)
                report.fail_after_report(exc)
                continue
            except ConcurrentActionError as exc:
                # Another delivery of the same incident is sending it right now: not sent from here.
                report.error(exc)
                continue
            message_id = str(result["message_id"])
            report.notifications.append(message_id)
            if replayed:
                logger.info(
                    "notification already sent",
                    extra={
                        "channel": item.channel,
                        "incident_id": note.incident_id,
                        "message_id": message_id,
                    },
                )
            else:
                emit(metric_definitions.NOTIFICATIONS_SENT, 1)

    def _once(
        self,
        once_key: dict[str, str] | None,
        channel: str,
        publish: Callable[[], dict[str, Any]],
        report: ReportBuilder,
    ) -> tuple[dict[str, Any], bool]:
        if once_key is None:
            return publish(), False
        try:
            return self.once.run_once({**once_key, "delivery": channel}, publish)
        except AwsApiError as exc:
            if exc.aws_code != "IdempotencyStore":
                raise
            # Without the once-store a retry may repeat this message; losing it would be worse.
            report.error(exc)
            return publish(), False


class NotifyingDependencies:
    """A function's dependencies that notify (each declares these as its own dataclass fields):
    ``delivery`` over their channels and once-keys."""

    notifier: Notifier
    chat_notifier: Notifier | None
    once: OnceGuard

    @property
    def delivery(self) -> NotificationDelivery:
        return NotificationDelivery(self.notifier, self.chat_notifier, self.once)
