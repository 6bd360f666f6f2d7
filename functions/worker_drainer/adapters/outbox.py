"""Where the drainer keeps what Lambda's retry of an invocation must still do about its message.

A drainer run re-reads the service and re-checks every step, so Lambda's retry of an invocation
whose notification was lost does not act twice — and, finding the work done, has nothing new to
say. So a message SNS did not take is held in the ledger table under the invocation's request id
(``outbox#<request id>`` / ``notification``, expiring with the table's TTL after a day, as long as
Lambda keeps retrying an event), and the retry delivers it. The per-channel once-keys of the
shared delivery live in the same table (``ledger_once_guard``): the retry re-sends only the
channel that was lost.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from fleet_remediation.adapters.aws_clients import aws_client, guard_side_effects
from fleet_remediation.adapters.idempotency import RECORD_TTL_SECONDS, DynamoDBOnceGuard
from fleet_remediation.contract.budgets import LEDGER_CALL
from fleet_remediation.core.errors import aws_api_errors

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# What the outbox and the once-keys need beyond the ledger's own calls (Powertools reads, then
# updates, its records).
OUTBOX_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
ONCE_PARTITION = "once#worker_drainer"


class NotificationOutbox(Protocol):
    def hold(self, invocation: str, payload: str, now: datetime) -> None: ...

    def held(self, invocation: str) -> str | None: ...

    def release(self, invocation: str) -> None: ...


def ledger_client(client: DynamoDBClient | None = None) -> DynamoDBClient:
    """The ledger table's client: the one given (guarded like the factory's), else one on the
    ledger's call budget."""
    if client is not None:
        return guard_side_effects(client)
    built: DynamoDBClient = aws_client(LEDGER_CALL)
    return built


class DynamoOutbox:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self.table_name = table_name
        self._client = ledger_client(client)

    @staticmethod
    def _key(invocation: str) -> dict[str, dict[str, str]]:
        return {"pk": {"S": f"outbox#{invocation}"}, "sk": {"S": "notification"}}

    def hold(self, invocation: str, payload: str, now: datetime) -> None:
        expires = str(int(now.timestamp()) + RECORD_TTL_SECONDS)
        item = self._key(invocation) | {"payload": {"S": payload}, "expires_at": {"N": expires}}
        with aws_api_errors("DynamoDB outbox hold", invocation):
            self._client.put_item(TableName=self.table_name, Item=item)

    def held(self, invocation: str) -> str | None:
        with aws_api_errors("DynamoDB outbox read", invocation):
            found = self._client.get_item(
                TableName=self.table_name, Key=self._key(invocation), ConsistentRead=True
            ).get("Item")
        return found["payload"]["S"] if found else None

    def release(self, invocation: str) -> None:
        with aws_api_errors("DynamoDB outbox release", invocation):
            self._client.delete_item(TableName=self.table_name, Key=self._key(invocation))


def ledger_once_guard(table_name: str, client: DynamoDBClient | None = None) -> DynamoDBOnceGuard:
    """The shared once-guard (Powertools Idempotency) on the ledger table: records under
    ``pk = once#worker_drainer``, ``sk`` = the hashed key, expiring through the table's TTL."""
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    persistence = DynamoDBPersistenceLayer(
        table_name=table_name,
        key_attr="pk",
        sort_key_attr="sk",
        static_pk_value=ONCE_PARTITION,
        expiry_attr="expires_at",
        boto3_client=ledger_client(client),
    )
    return DynamoDBOnceGuard(table_name, persistence=persistence)
