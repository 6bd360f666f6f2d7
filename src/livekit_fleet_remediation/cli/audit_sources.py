"""Where ``lkfr audit`` reads what the functions did: each deployed function's configuration (its log
group and, for the drainer, its ledger table), the one report every invocation logs, and the
drainer's ledger. Every call comes from the budgeted client factory (a deadline per call) and every
read is paged with a bound, so a long window says how far it got instead of running on."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.contract.budgets import LAMBDA_CONFIGURATION_READ, AwsCallBudget
from fleet_remediation.contract.naming import FunctionName, lambda_function_name
from fleet_remediation.core.audit_timeline import REPORT_MESSAGE, report_of
from fleet_remediation.core.error_hints import credentials_hint
from livekit_fleet_remediation.cli.common import CommandFailed

LOGS_READ = AwsCallBudget("logs", connect_timeout_seconds=2.0, read_timeout_seconds=10.0, attempts=3)
LEDGER_READ = AwsCallBudget("dynamodb", connect_timeout_seconds=2.0, read_timeout_seconds=10.0, attempts=3)
# FilterLogEvents' own page cap is 10,000 events or 1 MB; this many pages per log group at most.
MAX_PAGES = 200
# A read that takes longer than this says on stderr how far it got, then again at this interval.
PROGRESS_EVERY_SECONDS = 3.0
NOT_FOUND = "ResourceNotFoundException"


@dataclass(frozen=True)
class Deployed:
    """One deployed function as Lambda describes it; ``None`` fields: not deployed, or no ledger."""

    function: FunctionName
    name: str
    log_group: str | None
    ledger_table: str | None


@dataclass
class Progress:
    """Says on ``write`` (stderr) how a long read is going; quiet while reads are quick."""

    write: Callable[[str], None]
    started: float = field(default_factory=time.monotonic)
    last: float = field(default_factory=time.monotonic)

    def tick(self, what: str) -> None:
        now = time.monotonic()
        if now - self.last >= PROGRESS_EVERY_SECONDS:
            self.last = now
            self.write(f"audit: {what} ({now - self.started:.0f} s)")


def failed(exc: ClientError | BotoCoreError, action: str, resource: str) -> CommandFailed:
    """A refused or unreachable call, said with what to do (credentials, a permission) when known."""
    hint = credentials_hint(exc, action=action, resource=resource)
    return CommandFailed("AwsApiError", f"{action} {resource}: {hint or exc}")


def deployed(env: str, function: FunctionName, lambda_client: Any, service: str | None = None) -> Deployed:
    """The function's log group (its LoggingConfig, else Lambda's default group) and ledger table
    (its environment), from its configuration: the construct may give either a generated name.
    ``service``: the agent service of a service's responder or drainer."""
    name = lambda_function_name(env, function, service)
    try:
        found = lambda_client.get_function_configuration(FunctionName=name)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == NOT_FOUND:
            return Deployed(function, name, None, None)
        raise failed(exc, "GetFunctionConfiguration", name) from exc
    except BotoCoreError as exc:
        raise failed(exc, "GetFunctionConfiguration", name) from exc
    group = (found.get("LoggingConfig") or {}).get("LogGroup") or f"/aws/lambda/{name}"
    table = (found.get("Environment") or {}).get("Variables", {}).get("LEDGER_TABLE_NAME")
    return Deployed(function, name, str(group), str(table) if table else None)


def reports(logs_client: Any, group: str, since: datetime, progress: Progress) -> Iterator[dict[str, Any]]:
    """Every report logged into ``group`` since ``since``: the ``remediation report`` lines (the
    term narrows the read; the exact message is checked here, so its ``detail`` lines stay out)."""
    request: dict[str, Any] = {
        "logGroupName": group,
        "startTime": int(since.timestamp() * 1000),
        "filterPattern": f'"{REPORT_MESSAGE}"',
    }
    for page in range(1, MAX_PAGES + 1):
        try:
            answer = logs_client.filter_log_events(**request)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == NOT_FOUND:
                return  # a function that never ran has no log group yet
            raise failed(exc, "FilterLogEvents", group) from exc
        except BotoCoreError as exc:
            raise failed(exc, "FilterLogEvents", group) from exc
        for event in answer.get("events", []):
            report = report_of(event.get("message", ""))
            if report is not None:
                yield report
        progress.tick(f"{group}: {page} page(s) read")
        if not answer.get("nextToken"):
            return
        request["nextToken"] = answer["nextToken"]
    progress.write(f"audit: {group}: stopped after {MAX_PAGES} pages; ask for fewer --hours to see all")


def ledger_entries(
    dynamodb_client: Any, table: str, since: datetime, progress: Progress
) -> Iterator[dict[str, str]]:
    """The drainer's audit trail since ``since``: one item per step (intent, then outcome on the
    same item). The table is small (90-day TTL) and keyed per task, so it is scanned, paged."""
    request: dict[str, Any] = {
        "TableName": table,
        "FilterExpression": "begins_with(pk, :task) AND sk >= :since",
        "ExpressionAttributeValues": {":task": {"S": "task#"}, ":since": {"S": f"audit#{since.isoformat()}"}},
    }
    for page in range(1, MAX_PAGES + 1):
        try:
            answer = dynamodb_client.scan(**request)
        except (ClientError, BotoCoreError) as exc:
            raise failed(exc, "Scan", table) from exc
        for item in answer.get("Items", []):
            yield {name: str(next(iter(value.values()))) for name, value in item.items()}
        progress.tick(f"{table}: {page} page(s) read")
        if "LastEvaluatedKey" not in answer:
            return
        request["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
    progress.write(f"audit: {table}: stopped after {MAX_PAGES} pages; ask for fewer --hours to see all")


@dataclass(frozen=True)
class Clients:
    """The three clients the audit reads with, in ``region``; by default from the budgeted factory."""

    region: str
    lambda_: Any
    logs: Any
    dynamodb: Any

    @classmethod
    def budgeted(cls, region: str) -> Clients:
        return cls(
            region,
            aws_client(LAMBDA_CONFIGURATION_READ, region_name=region),
            aws_client(LOGS_READ, region_name=region),
            aws_client(LEDGER_READ, region_name=region),
        )
