"""Where the scheduled drill reads the answer: the product's own record, as ``lkfr audit`` shows it
(``core.audit_timeline``), narrowed to what can answer this drill — the answering function's
reports since the drill began and, for the drainer, the drilled task's items in its ledger.

One poll makes a bounded number of calls (``DRILL_RECORD_READ``, ``LEDGER_CALL``): a failed poll
is a poll missed, said in the report, and the next one reads again."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fleet_remediation.contract.budgets import DRILL_RECORD_PAGES_PER_POLL
from fleet_remediation.contract.drill_schedule import ANSWERS
from fleet_remediation.contract.drills import DrillFault
from fleet_remediation.contract.naming import FunctionName, function_log_group_name
from fleet_remediation.core.audit_timeline import REPORT_MESSAGE, Entry, report_of, timeline
from fleet_remediation.core.errors import aws_api_errors


@dataclass(frozen=True)
class DrillRecord:
    """The record of one environment's drilled service, read with the drill's clients."""

    logs: Any
    ledger: Any
    environment: str
    service: str
    ledger_table: str

    def read(self, fault: DrillFault, task_id: str, since: datetime) -> list[Entry]:
        """The steps the function that answers ``fault`` took since ``since``; raises ``AwsApiError``."""
        function, _ = ANSWERS[fault]
        service = self.service if function is FunctionName.WORKER_DRAINER else None
        group = function_log_group_name(self.environment, function, service)
        reports = self._reports(group, since)
        ledger = self._ledger(task_id, since) if function is FunctionName.WORKER_DRAINER else []
        return timeline(reports, ledger, self.environment, None)

    def _reports(self, group: str, since: datetime) -> list[dict[str, Any]]:
        request: dict[str, Any] = {
            "logGroupName": group,
            "startTime": int(since.timestamp() * 1000),
            "filterPattern": f'"{REPORT_MESSAGE}"',
        }
        found: list[dict[str, Any]] = []
        for _ in range(DRILL_RECORD_PAGES_PER_POLL):
            with aws_api_errors("CloudWatch Logs FilterLogEvents", group):
                answer = self.logs.filter_log_events(**request)
            found += [r for e in answer.get("events", []) if (r := report_of(e.get("message", "")))]
            if not answer.get("nextToken"):
                break
            request["nextToken"] = answer["nextToken"]
        return found

    def _ledger(self, task_id: str, since: datetime) -> list[dict[str, str]]:
        with aws_api_errors("DynamoDB Query", self.ledger_table):
            answer = self.ledger.query(
                TableName=self.ledger_table,
                KeyConditionExpression="pk = :task AND sk >= :since",
                ExpressionAttributeValues={
                    ":task": {"S": f"task#{task_id}"},
                    ":since": {"S": f"audit#{since.isoformat()}"},
                },
            )
        return [
            {name: str(next(iter(value.values()))) for name, value in item.items()}
            for item in answer.get("Items", [])
        ]
