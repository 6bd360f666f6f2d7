"""The drainer's recent tag writes on the ledger, findable per service in one query
(``tags_as_written`` lays them over ECS's eventually consistent reads).

Item: ``tags#<service>`` / ``<the step's audit sort key>#<task id>``, with the task, when the
write was made, the tags set and the tag keys removed (JSON), and a short TTL: only the last
moments' writes are ever read.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from worker_drainer.adapters.intents import LedgerCall
from worker_drainer.adapters.journal_model import AuditKey, TagWrite

# DynamoDB deletes expired items lazily; the query bounds what it reads by the sort key instead.
TAG_WRITE_RETENTION_SECONDS = 3600
# A step's key is when it began; its writes come within the run (Lambda's longest timeout).
LONGEST_RUN = timedelta(minutes=15)


class DynamoTagWrites:
    """The tag writes of ``service``, on the ledger's table, client and counted ``call``."""

    def __init__(self, table_name: str, service: str, client: Any, call: LedgerCall, reader: Any) -> None:
        self.table_name, self.service, self.client, self.call = table_name, service, client, call
        self.reader = reader  # one attempt (contract/budgets.py TAG_WRITES_READ)

    @property
    def _pk(self) -> dict[str, str]:
        return {"S": f"tags#{self.service}"}

    def record(self, key: AuditKey, write: TagWrite) -> None:
        item = {
            "pk": self._pk,
            "sk": {"S": f"{key.sort_key}#{write.task_id}"},
            "task_id": {"S": write.task_id},
            "at": {"S": write.at.isoformat()},
            "set": {"S": json.dumps(dict(write.set), sort_keys=True)},
            "removed": {"S": json.dumps(list(write.removed))},
            "expires_at": {"N": str(int(write.at.timestamp()) + TAG_WRITE_RETENTION_SECONDS)},
        }
        self.call(lambda: self.client.put_item(TableName=self.table_name, Item=item), write.task_id)

    def since(self, moment: datetime) -> list[TagWrite]:
        """Writes made at or after ``moment``: a page in practice (a few items per step of the last
        minutes), paginated all the same."""
        first = f"audit#{(moment - LONGEST_RUN).isoformat()}"
        writes: list[TagWrite] = []
        start: dict[str, Any] | None = None
        while True:
            kwargs: dict[str, Any] = {
                "TableName": self.table_name,
                "KeyConditionExpression": "pk = :pk AND sk >= :first",
                "ExpressionAttributeValues": {":pk": self._pk, ":first": {"S": first}},
                "ConsistentRead": True,
            }
            if start:
                kwargs["ExclusiveStartKey"] = start
            response = self.call(lambda kwargs=kwargs: self.reader.query(**kwargs), self.service)
            writes += [w for w in map(_write, response.get("Items", [])) if w.at >= moment]
            start = response.get("LastEvaluatedKey")
            if not start:
                return writes


def _write(item: dict[str, Any]) -> TagWrite:
    return TagWrite(
        item["task_id"]["S"],
        datetime.fromisoformat(item["at"]["S"]),
        {str(k): str(v) for k, v in json.loads(item["set"]["S"]).items()},
        tuple(str(k) for k in json.loads(item["removed"]["S"])),
    )
