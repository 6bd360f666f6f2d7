"""Whether a group event holds for an agent service: a failure shared by tasks with something in
common (a provider region, a zone, an image), during which nobody is drained by a chat request.

The group-aware detection records a group event in the service's ledger
(``record_group_event``: item ``group#<service>`` / ``event`` until ``expires_at``); the drainer
asks ``group_event_refusal`` before a chat drain. Without a record there is no group event.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from fleet_remediation.adapters.aws_clients import aws_client, guard_side_effects
from fleet_remediation.contract.budgets import LEDGER_CALL
from fleet_remediation.core.errors import RemediationError, aws_api_errors

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class GroupEvents(Protocol):
    def current(self, now: datetime) -> str | None:
        """The group an unexpired group event names (None: no group event)."""
        ...


def _key(service: str) -> dict[str, Any]:
    return {"pk": {"S": f"group#{service}"}, "sk": {"S": "event"}}


class LedgerGroupEvents:
    def __init__(self, table_name: str, service: str, client: DynamoDBClient | None = None) -> None:
        self.table_name = table_name
        self.service = service
        self._client = guard_side_effects(client) if client else aws_client(LEDGER_CALL)

    def current(self, now: datetime) -> str | None:
        # A Query, as the drainer's other ledger reads: its role is granted Query, not GetItem.
        key = _key(self.service)
        with aws_api_errors("DynamoDB group event read", self.service):
            items = self._client.query(
                TableName=self.table_name,
                KeyConditionExpression="pk = :pk AND sk = :sk",
                ExpressionAttributeValues={":pk": key["pk"], ":sk": key["sk"]},
                ConsistentRead=True,
            ).get("Items", [])
        live = [item for item in items if int(item["expires_at"]["N"]) > int(now.timestamp())]
        return live[0]["group"]["S"] if live else None

    def record_group_event(self, group: str, expires_at: datetime) -> None:
        """What the group-aware detection writes while a group event lasts."""
        item = _key(self.service) | {
            "group": {"S": group},
            "expires_at": {"N": str(int(expires_at.timestamp()))},
        }
        with aws_api_errors("DynamoDB group event write", self.service):
            self._client.put_item(TableName=self.table_name, Item=item)


def group_event_refusal(events: GroupEvents | None, service: str, now: datetime) -> str | None:
    """Why a chat drain must not run now (None: it may). An unreadable record refuses it too."""
    if events is None:
        return None
    try:
        group = events.current(now)
    except RemediationError as exc:
        return f"whether a group event holds for {service} is unknown ({exc.code}): no chat drain"
    if group is None:
        return None
    return f"a group event holds for {service} ({group}): nobody is drained from chat until it ends"
