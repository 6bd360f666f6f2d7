"""The service's group event in the drainer's ledger: a failure shared by tasks with something in
common holds every drain of the service until ``expires_at`` (the group-aware detection writes it;
the tick, the suspect-worker event and a chat drain read it)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from worker_drainer.adapters.intents import LedgerCall


class DynamoGroupEvents:
    """The group event of ``service``, on the ledger's table, client and counted ``call``."""

    def __init__(self, table_name: str, service: str, client: Any, call: LedgerCall) -> None:
        self.table_name, self.service, self.client, self.call = table_name, service, client, call
        self._key = {"pk": {"S": f"group-event#{service}"}, "sk": {"S": "group-event"}}

    def hold(self, description: str, now: datetime, ttl_seconds: int) -> None:
        item = self._key | {
            "description": {"S": description},
            "expires_at": {"N": str(int(now.timestamp()) + ttl_seconds)},
        }
        self.call(lambda: self.client.put_item(TableName=self.table_name, Item=item), self.service)

    def current(self, now: datetime) -> str | None:
        # A Query, as the ledger's other reads: the drainer's role is granted Query, not GetItem.
        found = self.call(
            lambda: self.client.query(
                TableName=self.table_name,
                KeyConditionExpression="pk = :pk AND sk = :sk",
                ExpressionAttributeValues={":pk": self._key["pk"], ":sk": self._key["sk"]},
                ConsistentRead=True,
            ),
            self.service,
        )
        # DynamoDB deletes expired items lazily: an item past its expiry no longer holds.
        epoch = int(now.timestamp())
        live = [item for item in found.get("Items", []) if int(item["expires_at"]["N"]) > epoch]
        return str(live[0]["description"]["S"]) if live else None
