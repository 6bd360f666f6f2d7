"""One synchronous invoke of a deployed function, read as the commands must read it: a report came
back, the invoke failed before the function ran, or the reply was lost and whether it ran is unknown
(never retried: a retried invoke could act twice)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, EndpointConnectionError

from fleet_remediation.contract.budgets import AwsCallBudget

# The invoke waits for the function's own timeout plus this margin.
INVOKE_MARGIN_SECONDS = 30


@dataclass(frozen=True)
class InvokeResult:
    """A report came back (``report``), or the invoke failed before running (``error``), or its
    reply was lost and whether the function ran is unknown (``unknown``)."""

    report: dict[str, Any] | None = None
    error: str | None = None
    unknown: bool = False


Invoker = Callable[[dict[str, Any]], InvokeResult]


def invoke_budget(timeout_seconds: int) -> AwsCallBudget:
    """One attempt that waits out the function: a lost reply is never invoked again."""
    return AwsCallBudget(
        "lambda",
        connect_timeout_seconds=2,
        read_timeout_seconds=timeout_seconds + INVOKE_MARGIN_SECONDS,
        attempts=1,
    )


def lambda_invoker(client: Any, function_name: str) -> Invoker:
    """A synchronous invoke, one attempt: a retried invoke could run the function twice."""

    def invoke(event: dict[str, Any]) -> InvokeResult:
        try:
            reply = client.invoke(
                FunctionName=function_name, InvocationType="RequestResponse", Payload=json.dumps(event)
            )
        except (EndpointConnectionError, ConnectTimeoutError) as exc:
            return InvokeResult(error=f"not sent: {exc}")
        except ClientError as exc:
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            # No status read: whether it ran is unknown, as after a 5xx.
            return InvokeResult(error=str(exc), unknown=status is None or int(status) >= 500)
        except BotoCoreError as exc:
            return InvokeResult(error=f"reply lost: {exc}", unknown=True)
        body = reply["Payload"].read()
        if reply.get("FunctionError"):
            return InvokeResult(error=f"{reply['FunctionError']}: {body[:200]!r}")
        report = json.loads(body) if body else None
        return InvokeResult(report=report if isinstance(report, dict) else None, error=None)

    return invoke
