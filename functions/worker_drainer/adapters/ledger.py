"""A DynamoDB ledger: per-task leases (so two invocations never act on one task at once), debts
of replacement capacity to give back, and an audit trail of every action with its reason.

Items (partition key ``pk``, sort key ``sk``; ``expires_at`` is the table's TTL attribute):

- ``lease#<key>`` / ``lease``: one invocation's until ``expires_at`` (TTL deletes lazily: compare it).
- ``capacity#<service>`` / ``<task id>``: the service's desired count was (being) raised for this
  task: ``phase`` raising → raised → lowering, with the desired count seen before the change and the
  one asked for, so a lost reply or a killed invocation is settled from the service's real count.
- ``task#<id>`` / ``audit#<time>#<invocation>#<step>``: a step's intent (written before it runs) and,
  on the same item, its outcome (written after); an item without an outcome was interrupted.
- ``intent#<service>`` / the audit item's sort key: a step begun and not yet recorded
  (``adapters.intents``): how the next run finds a step a killed run left without its outcome.
- ``tags#<service>`` / the audit item's sort key and the task: the tags a step wrote
  (``adapters.tag_writes``), so the next runs see them while ECS's reads still lag.
- ``group-event#<service>`` / ``group-event``: a failure shared by a group holds the service's
  drains until ``expires_at``; ``failing``: the previous tick's failing tasks (``group_event_records``).
- ``notice#<key>`` / ``notice``: a notification already sent, so a condition that persists across
  ticks is told once per ``expires_at`` rather than every minute.
- ``outbox#<request id>`` / ``notification`` and ``once#worker_drainer`` / ``<hashed key>``: a message
  held for Lambda's retry, and the delivery once-keys (``adapters.outbox``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import ClientError

from fleet_remediation.adapters.aws_clients import aws_client, guard_side_effects
from fleet_remediation.contract import budgets
from fleet_remediation.core.errors import ConcurrentActionError, aws_api_errors
from worker_drainer.adapters.capacity_debts import CapacityDebt, Phase, debt_attributes, debt_from
from worker_drainer.adapters.group_event_records import DynamoGroupEvents, DynamoTickMemory, TickMemory
from worker_drainer.adapters.intents import DynamoIntents, LedgerCondition
from worker_drainer.adapters.journal_model import AUDIT_RETENTION_SECONDS, AuditKey, OpenIntent, TagWrite
from worker_drainer.adapters.tag_writes import DynamoTagWrites

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

CONDITION_FAILED = "ConditionalCheckFailedException"
LEDGER_ACTIONS = ("dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:Query")
__all__ = [
    "LEDGER_ACTIONS",
    "AuditKey",
    "CapacityDebt",
    "DynamoLedger",
    "Lease",
    "Ledger",
    "OpenIntent",
    "Phase",
    "TagWrite",
]


@dataclass(frozen=True)
class Lease:
    key: str
    holder: str
    expires_at: int


class Ledger(Protocol):
    calls: int
    tick_memory: TickMemory

    def acquire(self, key: str, holder: str, now: datetime, ttl_seconds: int) -> Lease: ...

    def release(self, lease: Lease) -> None: ...

    def capacity_debts(self) -> list[CapacityDebt]: ...

    def capacity_debt(self, task_id: str) -> CapacityDebt | None: ...

    def put_capacity_debt(self, debt: CapacityDebt, expected: Phase | None) -> None:
        """Write ``debt`` if the stored one is in phase ``expected`` (None: if there is none);
        ``ConcurrentActionError`` otherwise."""
        ...

    def forget_capacity_debt(self, task_id: str, expected: Phase) -> None: ...

    def audit(self, task_id: str, key: AuditKey, entry: Mapping[str, str]) -> None: ...

    def first_notice(self, key: str, now: datetime, ttl_seconds: int) -> bool:
        """True for the first caller per ``key`` within ``ttl_seconds``."""
        ...

    def open_intent(self, task_id: str, key: AuditKey, entry: Mapping[str, str]) -> None: ...

    def open_intents(self) -> list[OpenIntent]: ...

    def recorded_outcome(self, intent: OpenIntent) -> str | None:
        """The outcome on the step's audit item (``intended`` while none; None: no item)."""
        ...

    def close_intent(self, task_id: str, key: AuditKey) -> bool:
        """Delete the open intent; False when another run closed it first."""
        ...

    def hold_group_event(self, description: str, now: datetime, ttl_seconds: int) -> None: ...

    def group_event(self, now: datetime) -> str | None: ...

    def record_tag_write(self, key: AuditKey, write: TagWrite) -> None: ...

    def tag_writes_since(self, moment: datetime) -> list[TagWrite]: ...


class DynamoLedger:
    def __init__(self, table_name: str, service: str, client: DynamoDBClient | None = None) -> None:
        self.table_name, self.service, self.calls = table_name, service, 0
        self._client = guard_side_effects(client) if client else aws_client(budgets.LEDGER_CALL)
        # A notice marker is one attempt (a lost one only means a line told twice): it is written for
        # every line of a message, so the budget counts it per line (contract/budgets.py).
        self._notice_client = self._client if client else aws_client(budgets.NOTICE_MARKER_WRITE)
        self._intents = DynamoIntents(table_name, service, self._client, self._call)
        group_client = self._client if client else aws_client(budgets.GROUP_RECORD_CALL)
        self._group_events = DynamoGroupEvents(table_name, service, group_client, self._call)
        self.tick_memory: TickMemory = DynamoTickMemory(table_name, service, group_client, self._call)
        self._tag_writes = DynamoTagWrites(
            table_name,
            service,
            self._client,
            self._call,
            self._client if client else aws_client(budgets.TAG_WRITES_READ),
        )

    def record_tag_write(self, key: AuditKey, write: TagWrite) -> None:
        self._tag_writes.record(key, write)

    def tag_writes_since(self, moment: datetime) -> list[TagWrite]:
        return self._tag_writes.since(moment)

    def open_intent(self, task_id: str, key: AuditKey, entry: Mapping[str, str]) -> None:
        self._intents.open(task_id, key, entry)

    def open_intents(self) -> list[OpenIntent]:
        return self._intents.all()

    def recorded_outcome(self, intent: OpenIntent) -> str | None:
        return self._intents.recorded_outcome(intent)

    def close_intent(self, task_id: str, key: AuditKey) -> bool:
        return self._intents.close(task_id, key)

    def acquire(self, key: str, holder: str, now: datetime, ttl_seconds: int) -> Lease:
        """Take the lease on ``key``; ``ConcurrentActionError`` while another holder's is unexpired."""
        lease = Lease(key, holder, int(now.timestamp()) + ttl_seconds)
        try:
            self._call(
                lambda: self._client.put_item(
                    TableName=self.table_name,
                    Item={
                        "pk": {"S": f"lease#{key}"},
                        "sk": {"S": "lease"},
                        "holder": {"S": holder},
                        "expires_at": {"N": str(lease.expires_at)},
                    },
                    ConditionExpression="attribute_not_exists(pk) OR expires_at < :now OR holder = :holder",
                    ExpressionAttributeValues={
                        ":now": {"N": str(int(now.timestamp()))},
                        ":holder": {"S": holder},
                    },
                ),
                key,
                conditional=True,
            )
        except LedgerCondition:
            raise ConcurrentActionError(
                f"{key} is being handled by another invocation", resource=key
            ) from None
        return lease

    def release(self, lease: Lease) -> None:
        try:
            self._call(
                lambda: self._client.delete_item(
                    TableName=self.table_name,
                    Key={"pk": {"S": f"lease#{lease.key}"}, "sk": {"S": "lease"}},
                    ConditionExpression="holder = :holder",
                    ExpressionAttributeValues={":holder": {"S": lease.holder}},
                ),
                lease.key,
                conditional=True,
            )
        except LedgerCondition:
            return  # it expired and someone else holds it now: theirs to release

    def _capacity_key(self, task_id: str) -> dict[str, Any]:
        return {"pk": {"S": f"capacity#{self.service}"}, "sk": {"S": task_id}}

    def capacity_debts(self) -> list[CapacityDebt]:
        return self._query_debts({})

    def capacity_debt(self, task_id: str) -> CapacityDebt | None:
        found = self._query_debts({"sk": task_id})
        return found[0] if found else None

    def _query_debts(self, equal: dict[str, str]) -> list[CapacityDebt]:
        condition = " AND ".join(["pk = :pk", *(f"{key} = :{key}" for key in equal)])
        values = {":pk": {"S": f"capacity#{self.service}"}} | {f":{k}": {"S": v} for k, v in equal.items()}
        debts: list[CapacityDebt] = []
        start: dict[str, Any] | None = None
        while True:
            kwargs: dict[str, Any] = {
                "TableName": self.table_name,
                "KeyConditionExpression": condition,
                "ExpressionAttributeValues": values,
                "ConsistentRead": True,
            }
            if start:
                kwargs["ExclusiveStartKey"] = start
            response = self._call(lambda kwargs=kwargs: self._client.query(**kwargs), self.service)
            debts += [debt_from(item) for item in response.get("Items", [])]
            start = response.get("LastEvaluatedKey")
            if not start:
                return debts

    def put_capacity_debt(self, debt: CapacityDebt, expected: Phase | None) -> None:
        item = self._capacity_key(debt.task_id) | debt_attributes(debt)
        condition: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(pk)"}
        if expected is not None:
            condition = {
                "ConditionExpression": "phase = :expected",
                "ExpressionAttributeValues": {":expected": {"S": expected.value}},
            }
        self._conditional(
            lambda: self._client.put_item(TableName=self.table_name, Item=item, **condition),
            debt.task_id,
            f"capacity debt of {debt.task_id} is not {expected.value if expected else 'absent'}",
        )

    def forget_capacity_debt(self, task_id: str, expected: Phase) -> None:
        self._conditional(
            lambda: self._client.delete_item(
                TableName=self.table_name,
                Key=self._capacity_key(task_id),
                ConditionExpression="phase = :expected",
                ExpressionAttributeValues={":expected": {"S": expected.value}},
            ),
            task_id,
            f"capacity debt of {task_id} is not {expected.value}",
        )

    def audit(self, task_id: str, key: AuditKey, entry: Mapping[str, str]) -> None:
        item = {name: {"S": value} for name, value in entry.items()}
        item |= {
            "pk": {"S": f"task#{task_id}"},
            "sk": {"S": key.sort_key},
            "expires_at": {"N": str(int(key.at.timestamp()) + AUDIT_RETENTION_SECONDS)},
        }
        self._call(lambda: self._client.put_item(TableName=self.table_name, Item=item), task_id)

    def first_notice(self, key: str, now: datetime, ttl_seconds: int) -> bool:
        epoch = int(now.timestamp())
        try:
            self._call(
                lambda: self._notice_client.put_item(
                    TableName=self.table_name,
                    Item={
                        "pk": {"S": f"notice#{key}"},
                        "sk": {"S": "notice"},
                        "expires_at": {"N": str(epoch + ttl_seconds)},
                    },
                    ConditionExpression="attribute_not_exists(pk) OR expires_at < :now",
                    ExpressionAttributeValues={":now": {"N": str(epoch)}},
                ),
                key,
                conditional=True,
            )
        except LedgerCondition:
            return False
        return True

    def hold_group_event(self, description: str, now: datetime, ttl_seconds: int) -> None:
        self._group_events.hold(description, now, ttl_seconds)

    def group_event(self, now: datetime) -> str | None:
        return self._group_events.current(now)

    def _conditional(self, request: Any, resource: str, lost: str) -> None:
        try:
            self._call(request, resource, conditional=True)
        except LedgerCondition:
            raise ConcurrentActionError(lost, resource=resource) from None

    def _call(self, request: Any, resource: str, conditional: bool = False) -> Any:
        self.calls += 1
        with aws_api_errors("DynamoDB ledger call", resource):
            try:
                return request()
            except ClientError as exc:
                if conditional and exc.response.get("Error", {}).get("Code") == CONDITION_FAILED:
                    raise LedgerCondition from exc
                raise
