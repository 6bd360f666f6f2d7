"""The drainer's record of the chat buttons it offered, in its ledger table: one item per token
(``chat#<token>`` / ``token``), with the task, the agent service, the action, the incident, the
expiry (also the table's TTL) and, once pressed, when it was used.

A token is written once (``attribute_not_exists``) before the message that carries it is sent, and
used once: the chat entry point claims it with a conditional update that fails when it is already
used or expired, so two presses (or a press and a typed copy) act once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import ClientError

from fleet_remediation.adapters.aws_clients import aws_client, guard_side_effects
from fleet_remediation.contract.budgets import LEDGER_CALL
from fleet_remediation.core.chat_actions import ChatDrainerAction
from fleet_remediation.core.errors import ConcurrentActionError, aws_api_errors

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

CONDITION_FAILED = "ConditionalCheckFailedException"
# What the chat entry point may do with a ledger: read and claim tokens (``chat#`` items only).
CHAT_TOKEN_READ_ACTIONS = ("dynamodb:GetItem", "dynamodb:UpdateItem")
TOKEN_PARTITION_PREFIX = "chat#"


@dataclass(frozen=True)
class ChatToken:
    token: str
    action: ChatDrainerAction
    task_id: str
    agent_service: str
    incident_id: str
    expires_at: int
    used_at: int | None = None


class ChatTokenStore(Protocol):
    def issue(self, token: ChatToken) -> None: ...

    def read(self, token: str) -> ChatToken | None: ...

    def claim(self, token: str, now: datetime) -> None:
        """Mark ``token`` used; ``ConcurrentActionError`` when it is used or expired already."""
        ...


def _key(token: str) -> dict[str, Any]:
    return {"pk": {"S": TOKEN_PARTITION_PREFIX + token}, "sk": {"S": "token"}}


class DynamoChatTokens:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self.table_name = table_name
        self._client = guard_side_effects(client) if client else aws_client(LEDGER_CALL)

    def issue(self, token: ChatToken) -> None:
        item = _key(token.token) | {
            "action": {"S": token.action},
            "task_id": {"S": token.task_id},
            "agent_service": {"S": token.agent_service},
            "incident_id": {"S": token.incident_id},
            "expires_at": {"N": str(token.expires_at)},
        }
        with aws_api_errors("DynamoDB chat token write", token.task_id):
            self._client.put_item(
                TableName=self.table_name, Item=item, ConditionExpression="attribute_not_exists(pk)"
            )

    def read(self, token: str) -> ChatToken | None:
        with aws_api_errors("DynamoDB chat token read", token):
            found = self._client.get_item(TableName=self.table_name, Key=_key(token), ConsistentRead=True)
        item = found.get("Item")
        if item is None:
            return None
        action = item["action"]["S"]
        assert action in ("undrain", "drain"), action  # written by ``issue`` only
        return ChatToken(
            token=token,
            action="undrain" if action == "undrain" else "drain",
            task_id=item["task_id"]["S"],
            agent_service=item["agent_service"]["S"],
            incident_id=item["incident_id"]["S"],
            expires_at=int(item["expires_at"]["N"]),
            used_at=int(item["used_at"]["N"]) if "used_at" in item else None,
        )

    def claim(self, token: str, now: datetime) -> None:
        epoch = {":now": {"N": str(int(now.timestamp()))}}
        try:
            with aws_api_errors("DynamoDB chat token claim", token):
                try:
                    self._client.update_item(
                        TableName=self.table_name,
                        Key=_key(token),
                        UpdateExpression="SET used_at = :now",
                        ConditionExpression=(
                            "attribute_exists(pk) AND attribute_not_exists(used_at) AND expires_at > :now"
                        ),
                        ExpressionAttributeValues=epoch,
                    )
                except ClientError as exc:
                    if exc.response.get("Error", {}).get("Code") == CONDITION_FAILED:
                        raise _ConditionFailed from exc
                    raise
        except _ConditionFailed:
            raise ConcurrentActionError(
                f"button token {token} was used or expired while it was being read", resource=token
            ) from None


class _ConditionFailed(Exception):
    """The claim lost: the token is no longer usable."""
