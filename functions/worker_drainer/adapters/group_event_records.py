"""The service's group event in the drainer's ledger: a failure shared by tasks with something in
common holds every drain of the service until ``expires_at`` (the group-aware detection writes it;
the tick, the suspect-worker event and a chat drain read it), and the tasks failing at the previous
tick, which a suspect needs for its second sighting."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from worker_drainer.adapters.intents import LedgerCall


class _ServiceRecord:
    """One item of ``service`` under ``group-event#<service>`` / ``sort_key``, live until ``expires_at``."""

    def __init__(self, table_name: str, service: str, client: Any, call: LedgerCall, sort_key: str) -> None:
        self.table_name, self.service, self.client, self.call = table_name, service, client, call
        self._key = {"pk": {"S": f"group-event#{service}"}, "sk": {"S": sort_key}}

    def _put(self, attributes: dict[str, Any], now: datetime, ttl_seconds: int) -> None:
        item = self._key | attributes | {"expires_at": {"N": str(int(now.timestamp()) + ttl_seconds)}}
        self.call(lambda: self.client.put_item(TableName=self.table_name, Item=item), self.service)

    def _live(self, now: datetime) -> dict[str, Any] | None:
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
        return dict(live[0]) if live else None


class DynamoGroupEvents(_ServiceRecord):
    """The group event of ``service``, on the ledger's table, client and counted ``call``."""

    def __init__(self, table_name: str, service: str, client: Any, call: LedgerCall) -> None:
        super().__init__(table_name, service, client, call, "group-event")

    def hold(self, description: str, now: datetime, ttl_seconds: int) -> None:
        self._put({"description": {"S": description}}, now, ttl_seconds)

    def current(self, now: datetime) -> str | None:
        item = self._live(now)
        return None if item is None else str(item["description"]["S"])


class TickMemory(Protocol):
    """The tasks failing at the drainer's previous tick (``task_reach``'s sighting rule)."""

    def remember(self, streams: Sequence[str], now: datetime, ttl_seconds: int) -> None: ...

    def earlier(self, now: datetime) -> list[str]:
        """The streams remembered and unexpired (empty: nothing remembered)."""
        ...


# Streams kept in the memory item, far under DynamoDB's 400 KB item limit (a stream name is ~60 bytes).
# A longer list is a fleet-wide failure, which cordons nobody; a stream left out is only seen for the
# first time again, which holds its cordon back, never brings one forward.
MAX_REMEMBERED_STREAMS = 2_000


class DynamoTickMemory(_ServiceRecord):
    """``group-event#<service>`` / ``failing``: the streams failing at the previous tick, until
    ``expires_at`` (a memory older than a tick or two is no sighting)."""

    def __init__(self, table_name: str, service: str, client: Any, call: LedgerCall) -> None:
        super().__init__(table_name, service, client, call, "failing")

    def remember(self, streams: Sequence[str], now: datetime, ttl_seconds: int) -> None:
        kept = sorted(streams)[:MAX_REMEMBERED_STREAMS]
        self._put({"streams": {"S": json.dumps(kept)}}, now, ttl_seconds)

    def earlier(self, now: datetime) -> list[str]:
        item = self._live(now)
        return [] if item is None else [str(stream) for stream in json.loads(item["streams"]["S"])]
