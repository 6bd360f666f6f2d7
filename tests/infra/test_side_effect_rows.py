"""Every write the stack's IAM policies grant the functions is either a side effect the fault suite
holds under the three ambiguous faults (``tests/faults/test_side_effect_outcomes.py``) or one of the
grants below, each with why it needs no rows."""

from __future__ import annotations

from tests.faults.test_side_effect_outcomes import EVENT_ROWS, SIDE_EFFECT_ROWS
from tests.infra.conftest import Synthesized

READS = ("Describe", "Get", "List", "Query", "Scan", "BatchGet")
NO_ROWS = {
    # Used by the services on the functions' behalf (encrypted topics, queues and tables).
    "kms:Decrypt": "service-side encryption",
    "kms:GenerateDataKey": "service-side encryption",
    "kms:GenerateDataKey*": "service-side encryption",
    # The Lambda runtime's own logging, tracing and dead-letter delivery, not the functions' calls.
    "logs:CreateLogStream": "Lambda's logging",
    "logs:PutLogEvents": "Lambda's logging",
    "xray:PutTelemetryRecords": "Lambda's tracing",
    "xray:PutTraceSegments": "Lambda's tracing",
    "sqs:SendMessage": "Lambda's dead-letter queue",
    # A Logs Insights query changes nothing: one started twice costs a query, one stopped twice nothing.
    "logs:StartQuery": "read-only query",
    "logs:StopQuery": "read-only query",
    # Come with grant_read_write_data; no code calls them.
    "dynamodb:BatchWriteItem": "granted, never called",
    "dynamodb:ConditionCheckItem": "granted, never called",
}


def granted_writes(staging: Synthesized) -> set[str]:
    actions: set[str] = set()
    for policy in staging.template.find_resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            found = statement["Action"]
            actions |= {found} if isinstance(found, str) else set(found)
    return {action for action in actions if not action.split(":")[1].startswith(READS)}


def test_every_granted_write_has_its_fault_rows(staging: Synthesized) -> None:
    rows = {action for action, _, _ in SIDE_EFFECT_ROWS} | set(EVENT_ROWS)
    writes = granted_writes(staging)
    assert writes - rows - set(NO_ROWS) == set(), "granted writes with no fault rows"
    assert {"ecs:UpdateService", "sns:Publish", "events:PutEvents", "dynamodb:PutItem"} <= writes
