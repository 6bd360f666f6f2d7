"""An alarm's look slot for the scan budget (``adapters/scan_budget.py``): at most one look per alarm
per interval, kept as one item per alarm in the scan tally's table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.contract.budgets import SCAN_TALLY_CALL
from fleet_remediation.core.errors import AwsApiError, aws_api_errors

# The tally table's items that hold an alarm's last look (the hours' items are "2026-12-02T07").
LOOK_GATE_PREFIX = "look#"
CONDITION_FAILED = "ConditionalCheckFailedException"


class DynamoDBLookGate:
    """One item per alarm in the tally's table, taken by a conditional write: concurrent
    invocations of both functions agree on which of them looks."""

    def __init__(self, table_name: str, client: Any = None) -> None:
        self.table_name = table_name
        self._client = client or aws_client(SCAN_TALLY_CALL)

    def claim(self, key: str, now: datetime, interval: timedelta) -> datetime | None:
        moment = int(now.timestamp())
        try:
            with aws_api_errors("DynamoDB UpdateItem (alarm look gate)", self.table_name):
                self._client.update_item(
                    TableName=self.table_name,
                    Key={"hour": {"S": LOOK_GATE_PREFIX + key}},
                    UpdateExpression="SET expires_at = :until, ran_at = :now",
                    ConditionExpression="attribute_not_exists(expires_at) OR expires_at <= :now",
                    ExpressionAttributeValues={
                        ":until": {"N": str(moment + int(interval.total_seconds()))},
                        ":now": {"N": str(moment)},
                    },
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except AwsApiError as exc:
            if exc.aws_code != CONDITION_FAILED:
                raise
            cause = exc.__cause__
            held: Any = cause.response.get("Item", {}) if isinstance(cause, ClientError) else {}
            ran = float(held.get("ran_at", {}).get("N", moment))
            return datetime.fromtimestamp(ran, UTC)
        return None
