"""A DynamoDB ledger: per-task leases (so two invocations never act on one task at once), debts
of replacement capacity to give back, and an audit trail of every action with its reason.

Items (partition key ``pk``, sort key ``sk``; ``expires_at`` is the table's TTL attribute):

- ``lease#<key>`` / ``lease``: held by one invocation until ``expires_at``. DynamoDB deletes expired
  items lazily, so every condition compares ``expires_at`` with the clock instead of trusting TTL.
- ``capacity#<service>`` / ``<task id>``: the service's desired count was (being) raised for this
  task: ``phase`` raising → raised → lowering, with the desired count seen before the change and the
  one asked for, so a lost reply or a killed invocation is settled from the service's real count.
- ``task#<id>`` / ``audit#<time>#<invocation>#<step>``: a step's intent (written before it runs) and,
  on the same item, its outcome (written after); an item without an outcome was interrupted.
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
from fleet_remediation.contract.budgets import LEDGER_CALL, NOTICE_MARKER_WRITE
from fleet_remediation.core.errors import ConcurrentActionError, aws_api_errors
from worker_drainer.adapters.capacity_debts import CapacityDebt, Phase, debt_attributes, debt_from

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

CONDITION_FAILED = "ConditionalCheckFailedException"
AUDIT_RETENTION_SECONDS = 90 * 24 * 3600
LEDGER_ACTIONS = ("dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:Query")
__all__ = ["LEDGER_ACTIONS", "AuditKey", "CapacityDebt", "DynamoLedger", "Lease", "Ledger", "Phase"]


@dataclass(frozen=True)
class Lease:
    key: str
    holder: str
    expires_at: int


@dataclass(frozen=True)
class AuditKey:
    """One step of one invocation: its intent and its outcome are written to the same item."""

    invocation: str
    at: datetime
    step: int

    @property
    def sort_key(self) -> str:
        return f"audit#{self.at.isoformat()}#{self.invocation}#{self.step:03d}"


class Ledger(Protocol):
    calls: int

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

    def hold_group_event(self, description: str, now: datetime, ttl_seconds: int) -> None:
        """Record that a group event holds the service's TTS drains for ``ttl_seconds`` from ``now``."""
        ...

    def group_event(self, now: datetime) -> str | None:
        """The group event holding the service's TTS drains at ``now``, if one does."""
        ...


class DynamoLedger:
    def __init__(self, table_name: str, service: str, client: DynamoDBClient | None = None) -> None:
        self.table_name = table_name
        self.service = service
        self.calls = 0
        self._client = guard_side_effects(client) if client else aws_client(LEDGER_CALL)
        # A notice marker is one attempt (a lost one only means a line told twice): it is written for
        # every line of a message, so the budget counts it per line (contract/budgets.py).
        self._notice_client = self._client if client else aws_client(NOTICE_MARKER_WRITE)

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
        except _ConditionFailed:
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
        except _ConditionFailed:
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
        except _ConditionFailed:
            return False
        return True

    def hold_group_event(self, description: str, now: datetime, ttl_seconds: int) -> None:
        item = {
            "pk": {"S": f"group-event#{self.service}"},
            "sk": {"S": "group-event"},
            "description": {"S": description},
            "expires_at": {"N": str(int(now.timestamp()) + ttl_seconds)},
        }
        self._call(lambda: self._client.put_item(TableName=self.table_name, Item=item), self.service)

    def group_event(self, now: datetime) -> str | None:
        key = {"pk": {"S": f"group-event#{self.service}"}, "sk": {"S": "group-event"}}
        found = self._call(
            lambda: self._client.get_item(TableName=self.table_name, Key=key, ConsistentRead=True),
            self.service,
        )
        item = found.get("Item") or {}
        # DynamoDB deletes expired items lazily: an item past its expiry no longer holds.
        if not item or int(item["expires_at"]["N"]) <= int(now.timestamp()):
            return None
        return str(item["description"]["S"])

    def _conditional(self, request: Any, resource: str, lost: str) -> None:
        try:
            self._call(request, resource, conditional=True)
        except _ConditionFailed:
            raise ConcurrentActionError(lost, resource=resource) from None

    def _call(self, request: Any, resource: str, conditional: bool = False) -> Any:
        self.calls += 1
        with aws_api_errors("DynamoDB ledger call", resource):
            try:
                return request()
            except ClientError as exc:
                if conditional and exc.response.get("Error", {}).get("Code") == CONDITION_FAILED:
                    raise _ConditionFailed from exc
                raise


class _ConditionFailed(Exception):
    """A conditional write lost: the caller decides what that means."""
