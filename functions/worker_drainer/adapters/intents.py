"""Open intents: the drainer's steps that were begun and have no outcome yet, findable per service.

A step's intent goes to its audit item (``task#<id>`` / ``audit#...``) and, alongside, to an open
intent (``intent#<service>`` / the audit item's sort key) that names the task and the step. The
step's own run writes the outcome to the audit item, then deletes the open intent. A run killed in
between (a Lambda timeout, out of memory) leaves the open intent behind: the next run finds it in
one query (a stopped task is no longer listed by ECS, so the task's own items could not be found),
re-reads the task, records the outcome and tells it. Deleting the open intent is conditional, so of
two runs that settle it, one tells it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from worker_drainer.adapters.journal_model import AUDIT_RETENTION_SECONDS, INTENDED, AuditKey, OpenIntent

# One counted ledger call: (request, resource, conditional) -> the reply.
LedgerCall = Callable[..., Any]


class LedgerCondition(Exception):
    """A conditional write lost: the caller decides what that means."""


class DynamoIntents:
    """The open intents of ``service``, on the ledger's table, client and counted ``call``."""

    def __init__(self, table_name: str, service: str, client: Any, call: LedgerCall) -> None:
        self.table_name, self.service, self.client, self.call = table_name, service, client, call

    @property
    def _pk(self) -> dict[str, str]:
        return {"S": f"intent#{self.service}"}

    def open(self, task_id: str, key: AuditKey, entry: Mapping[str, str]) -> None:
        item = {name: {"S": value} for name, value in entry.items()}
        item |= {
            "pk": self._pk,
            "sk": {"S": key.sort_key},
            "task_id": {"S": task_id},
            "invocation": {"S": key.invocation},
            "at": {"S": key.at.isoformat()},
            "step": {"N": str(key.step)},
            "expires_at": {"N": str(int(key.at.timestamp()) + AUDIT_RETENTION_SECONDS)},
        }
        self.call(lambda: self.client.put_item(TableName=self.table_name, Item=item), task_id)

    def all(self) -> list[OpenIntent]:
        response = self.call(
            lambda: self.client.query(
                TableName=self.table_name,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": self._pk},
                ConsistentRead=True,
            ),
            self.service,
        )
        return [_intent(item) for item in response.get("Items", [])]

    def recorded_outcome(self, intent: OpenIntent) -> str | None:
        """The outcome on the step's audit item (``intended`` while none was recorded)."""
        response = self.call(
            lambda: self.client.query(
                TableName=self.table_name,
                KeyConditionExpression="pk = :pk AND sk = :sk",
                ExpressionAttributeValues={
                    ":pk": {"S": f"task#{intent.task_id}"},
                    ":sk": {"S": intent.key.sort_key},
                },
                ConsistentRead=True,
            ),
            intent.task_id,
        )
        items = response.get("Items", [])
        return str(items[0].get("outcome", {}).get("S", INTENDED)) if items else None

    def close(self, task_id: str, key: AuditKey) -> bool:
        """Delete the open intent; False when another run closed it first."""
        try:
            self.call(
                lambda: self.client.delete_item(
                    TableName=self.table_name,
                    Key={"pk": self._pk, "sk": {"S": key.sort_key}},
                    ConditionExpression="attribute_exists(pk)",
                ),
                task_id,
                conditional=True,
            )
        except LedgerCondition:
            return False
        return True


_KEY_FIELDS = frozenset({"pk", "sk", "task_id", "invocation", "at", "step", "expires_at"})


def _intent(item: dict[str, Any]) -> OpenIntent:
    key = AuditKey(item["invocation"]["S"], datetime.fromisoformat(item["at"]["S"]), int(item["step"]["N"]))
    entry = {name: value["S"] for name, value in item.items() if name not in _KEY_FIELDS and "S" in value}
    return OpenIntent(item["task_id"]["S"], key, entry)
