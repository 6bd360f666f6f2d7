"""SNS notifications for the on-call person."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import boto3

from fleet_remediation.core.errors import aws_api_errors

if TYPE_CHECKING:
    from mypy_boto3_sns import SNSClient

# SNS rejects subjects longer than 100 characters.
SUBJECT_LIMIT = 100


class Notifier(Protocol):
    def publish(self, subject: str, message: str, attributes: dict[str, str] | None = None) -> str: ...


class SnsNotifier:
    def __init__(self, topic_arn: str, client: SNSClient | None = None) -> None:
        self.topic_arn = topic_arn
        self._client = client or boto3.client("sns")

    def publish(self, subject: str, message: str, attributes: dict[str, str] | None = None) -> str:
        message_attributes: dict[str, Any] = {
            key: {"DataType": "String", "StringValue": value} for key, value in (attributes or {}).items()
        }
        with aws_api_errors("SNS Publish", self.topic_arn):
            response = self._client.publish(
                TopicArn=self.topic_arn,
                Subject=subject[:SUBJECT_LIMIT],
                Message=message,
                MessageAttributes=message_attributes,
            )
        return response["MessageId"]
