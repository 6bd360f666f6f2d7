"""Give a task the drainer took out of rotation back to the fleet: the short form of the undo its
messages print.

    lkfr undo --env NAME --task ID [--drain] [--dry-run] [--config environments.json] [--region R]

It invokes the environment's deployed drainer with its manual event, ``{"action": "undrain",
"task": ID, "dry_run": false}`` (``--drain``: ``drain``, to take a task out again after an undo), as
the e-mail's ``aws lambda invoke`` line does, and prints the drainer's report. That takes an operator
with IAM permissions on the drainer; the chat channel cannot invoke it (its buttons go through the
chat entry point, which sends the same event for the task a recorded token names). The drainer
itself re-reads the task and decides: the kill switch stays the ceiling, an undone task keeps the
operator's cooldown, and a task it cannot act on is refused with the reason
(docs/on-call-from-a-phone.md). ``--dry-run`` asks only what it would do.

One attempt, never retried: when the reply is lost the outcome is unknown (the drainer may have
acted); ``lkfr audit`` shows what it did. Exit status: 0 when the drainer's report says ok, 1 on a
typed failure or a report that did not (the error on one line on stderr), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.contract.agent_services import DEFAULT_AGENT_SERVICE
from fleet_remediation.contract.budgets import LAMBDA_CONFIGURATION_READ
from fleet_remediation.contract.naming import FunctionName, lambda_function_name
from fleet_remediation.core.error_hints import credentials_hint
from livekit_fleet_remediation.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CommandFailed,
    InvalidConfig,
    UsageError,
    add_common,
    target,
)
from livekit_fleet_remediation.cli.invoke import Invoker, invoke_budget, lambda_invoker
from livekit_fleet_remediation.cli.render import render_report


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="lkfr undo", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common(found)
    found.add_argument("--task", required=True, help="the ECS task's id or ARN")
    found.add_argument(
        "--service",
        help="the agent service whose drainer to ask (default: the configuration's only one; "
        f"with --env and --region and no configuration read, {DEFAULT_AGENT_SERVICE})",
    )
    found.add_argument("--drain", action="store_true", help="drain the task again (undo an undrain)")
    found.add_argument("--dry-run", action="store_true", help="only ask the drainer what it would do")
    found.add_argument("--json", action="store_true", help="print the drainer's report as JSON")
    return found


def manual_event(task: str, drain: bool, dry_run: bool) -> dict[str, Any]:
    """The drainer's manual event, as its messages' undo line sends it."""
    return {"action": "drain" if drain else "undrain", "task": task, "dry_run": dry_run}


def drainer_timeout(lambda_client: Any, name: str) -> int:
    """The deployed drainer's timeout (the invoke waits it out); a clear error when it is not there."""
    try:
        found = lambda_client.get_function_configuration(FunctionName=name)
    except (ClientError, BotoCoreError) as exc:
        hint = credentials_hint(exc, action="GetFunctionConfiguration", resource=name)
        raise CommandFailed(
            "ConfigurationError", f"cannot read {name}'s configuration: {hint or exc}"
        ) from exc
    return int(found.get("Timeout", 900))


def undo(event: dict[str, Any], invoke: Invoker, name: str) -> dict[str, Any]:
    """The drainer's report on ``event``, or the failure that left it without one."""
    result = invoke(event)
    if result.unknown:
        raise CommandFailed(
            "OutcomeUnknown",
            f"{name}'s reply was lost ({result.error}): it may have acted; see lkfr audit before "
            "trying again",
        )
    if result.error is not None or result.report is None:
        raise CommandFailed("InvokeError", f"{name}: {result.error or 'no report came back'}")
    return result.report


def main(argv: Sequence[str] | None = None, invoker: Invoker | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        found = target(args)
        name = lambda_function_name(found.env, FunctionName.WORKER_DRAINER, found.service(args.service))
        region = found.region
        if invoker is None:
            timeout = drainer_timeout(aws_client(LAMBDA_CONFIGURATION_READ, region_name=region), name)
            invoker = lambda_invoker(aws_client(invoke_budget(timeout), region_name=region), name)
        report = undo(manual_event(args.task, args.drain, args.dry_run), invoker, name)
    except (UsageError, InvalidConfig) as exc:
        print(f"lkfr undo: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except CommandFailed as exc:
        print(f"undo failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    readable = "candidates" in report and not args.json
    print(render_report(report) if readable else json.dumps(report, indent=2))
    if report.get("status") != "ok":
        errors = report.get("errors") or [{"code": report.get("status"), "message": "see the report"}]
        print(
            f"undo failed: {errors[0]['code']}: {' '.join(str(errors[0]['message']).split())}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_OK
