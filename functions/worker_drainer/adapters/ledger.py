"""A DynamoDB ledger: per-task leases (so two invocations never act on one task at once), debts
of replacement capacity to give back, and an audit trail of every action with its reason.

Items (partition key ``pk``, sort key ``sk``; ``expires_at`` is the table's TTL attribute):

- ``lease#<key>`` / ``lease``: held by one invocation until ``expires_at``. DynamoDB deletes expired
  items lazily, so every condition compares ``expires_at`` with the clock instead of trusting TTL.
- ``capacity#<service>`` / ``<task id>``: the service's desired count was raised for this task.
- ``task#<id>`` / ``audit#<time>#<invocation>``: what was done, why, with which outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import ClientError

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.contract.budgets import LEDGER_CALL
from fleet_remediation.core.errors import ConcurrentActionError, aws_api_errors

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

CONDITION_FAILED = "ConditionalCheckFailedException"
AUDIT_RETENTION_SECONDS = 90 * 24 * 3600
LEDGER_ACTIONS = ("dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:Query")


@dataclass(frozen=True)
class Lease:
    key: str
    holder: str
    expires_at: int


@dataclass(frozen=True)
class CapacityDebt:
    task_id: str
    task_arn: str
    raised_at: int


class Ledger(Protocol):
    calls: int

    def acquire(self, key: str, holder: str, now: datetime, ttl_seconds: int) -> Lease: ...

    def release(self, lease: Lease) -> None: ...

    def add_capacity_debt(self, task_arn: str, task_id: str, now: datetime) -> None: ...

    def capacity_debts(self) -> list[CapacityDebt]: ...

    def claim_capacity_debt(self, task_id: str) -> bool: ...

    def audit(self, task_id: str, invocation: str, now: datetime, entry: Mapping[str, str]) -> None: ...


class DynamoLedger:
    def __init__(self, table_name: str, service: str, client: DynamoDBClient | None = None) -> None:
        self.table_name = table_name
        self.service = service
        self.calls = 0
        self._client = client or aws_client(LEDGER_CALL)

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

    def add_capacity_debt(self, task_arn: str, task_id: str, now: datetime) -> None:
        self._call(
            lambda: self._client.put_item(
                TableName=self.table_name,
                Item={
                    "pk": {"S": f"capacity#{self.service}"},
                    "sk": {"S": task_id},
                    "task_arn": {"S": task_arn},
                    "raised_at": {"N": str(int(now.timestamp()))},
                },
            ),
            task_id,
        )

    def capacity_debts(self) -> list[CapacityDebt]:
        debts: list[CapacityDebt] = []
        start: dict[str, Any] | None = None
        while True:
            kwargs: dict[str, Any] = {
                "TableName": self.table_name,
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": {":pk": {"S": f"capacity#{self.service}"}},
                "ConsistentRead": True,
            }
            if start:
                kwargs["ExclusiveStartKey"] = start
            response = self._call(lambda kwargs=kwargs: self._client.query(**kwargs), self.service)
            debts += [
                CapacityDebt(item["sk"]["S"], item["task_arn"]["S"], int(item["raised_at"]["N"]))
                for item in response.get("Items", [])
            ]
            start = response.get("LastEvaluatedKey")
            if not start:
                return debts

    def claim_capacity_debt(self, task_id: str) -> bool:
        """Delete the debt; True for exactly one caller, the one who must give the capacity back."""
        try:
            self._call(
                lambda: self._client.delete_item(
                    TableName=self.table_name,
                    Key={"pk": {"S": f"capacity#{self.service}"}, "sk": {"S": task_id}},
                    ConditionExpression="attribute_exists(pk)",
                ),
                task_id,
                conditional=True,
            )
        except _ConditionFailed:
            return False
        return True

    def audit(self, task_id: str, invocation: str, now: datetime, entry: Mapping[str, str]) -> None:
        item = {key: {"S": value} for key, value in entry.items()}
        item |= {
            "pk": {"S": f"task#{task_id}"},
            "sk": {"S": f"audit#{now.isoformat()}#{invocation}"},
            "expires_at": {"N": str(int(now.timestamp()) + AUDIT_RETENTION_SECONDS)},
        }
        self._call(lambda: self._client.put_item(TableName=self.table_name, Item=item), task_id)

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
