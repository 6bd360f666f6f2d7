"""Re-run the events parked in a function's dead-letter queue, then delete each one it re-ran.

    lkfr redrive --function lkfr-<env>-zombie-reaper [--apply] [--enforce] [--max N]

A function's DLQ holds two kinds of parked events: Lambda's failed asynchronous deliveries (attribute
``ErrorCode``) and events an EventBridge rule could not deliver (attribute ``ERROR_CODE``). SQS's
message-move task cannot move either back (it moves only from the DLQ of another SQS queue), and the
original event is often no longer valid (an alarm event goes stale), so each parked event becomes a
**manual invoke** of the function, which re-reads the world before it acts:

- the reaper: a manual run (``{"dry_run": ...}``), whatever was parked;
- the TTS responder: a manual analysis of the window ending when the parked ALARM or re-check fired;
  an OK transition has no manual equivalent (its page came from CloudWatch itself) and is kept;
- the drainer: ``{"action": "plan"}`` (its own tick re-does what a parked tick or alarm would have);
- a parked manual payload is replayed as it was.

Dry run unless ``--enforce``; the tool can only make a payload stricter (a parked manual
``"dry_run": false`` replays as a dry run without ``--enforce``), and the kill switch stays the ceiling.
Without ``--apply`` it only lists what it would invoke. With it, a message is deleted only after its
invoke returned a report whose status is ``ok``; otherwise it stays parked, and the reason is printed.
An invoke whose reply was lost (a timeout, a 5xx) is never retried here: its outcome is unknown.

Exit status: 0 when every message listed was re-run and deleted (or, without ``--apply``, listed);
1 when a message was kept; 2 on bad arguments, when the queue cannot be found or SQS refuses a read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.contract.budgets import AwsCallBudget
from fleet_remediation.contract.naming import (
    ALARM_DETAIL_TYPE,
    SCHEDULE_DETAIL_TYPE,
    SUSPECT_WORKER_DETAIL_TYPE,
    FunctionName,
)
from livekit_fleet_remediation.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    PlainHelpFormatter,
    sdk_failure,
)
from livekit_fleet_remediation.cli.invoke import INVOKE_MARGIN_SECONDS, Invoker, invoke_budget, lambda_invoker

# The queue's calls and the function's configuration read, from the budgeted factory.
QUEUE_CALL = AwsCallBudget("sqs", connect_timeout_seconds=2, read_timeout_seconds=10, attempts=3)
FUNCTION_READ = AwsCallBudget("lambda", connect_timeout_seconds=2, read_timeout_seconds=10, attempts=3)
MAX_VISIBILITY_SECONDS = 12 * 3600


def function_kind(function_name: str) -> FunctionName:
    for kind in FunctionName:
        if function_name.endswith(f"-{kind.slug}"):
            return kind
    raise ValueError(
        f"{function_name!r} is not one of this stack's functions (…-{FunctionName.ZOMBIE_REAPER.slug}, …)"
    )


def _alarm_time(event: dict[str, Any]) -> str | None:
    state = (event.get("detail") or {}).get("state") or {}
    return state.get("timestamp") or event.get("time")


def derive(kind: FunctionName, parked: Any, enforce: bool) -> tuple[dict[str, Any] | None, str]:
    """The manual event that re-runs ``parked`` (None when there is none), and what it was."""
    if not isinstance(parked, dict):
        return None, "not a JSON object: no event of ours"
    dry_run = not enforce
    detail_type = parked.get("detail-type")
    if detail_type is None:
        replay = dict(parked)
        replay["dry_run"] = replay.get("dry_run", True) is not False or dry_run
        return replay, "manual"
    if detail_type not in (SCHEDULE_DETAIL_TYPE, ALARM_DETAIL_TYPE, SUSPECT_WORKER_DETAIL_TYPE):
        return None, f"a {str(detail_type)[:60]!r} event: not one this stack routes"
    what = _describe(parked)
    if kind is FunctionName.WORKER_DRAINER:
        return {"action": "plan"}, what
    if kind is FunctionName.ZOMBIE_REAPER:
        return {"dry_run": dry_run}, what
    state = ((parked.get("detail") or {}).get("state") or {}).get("value")
    if detail_type == ALARM_DETAIL_TYPE and state != "ALARM":
        return None, f"{what}: an OK transition has no manual re-run (CloudWatch paged it itself)"
    window_end = parked.get("time") if detail_type == SCHEDULE_DETAIL_TYPE else _alarm_time(parked)
    return {"dry_run": dry_run, **({"window_end": window_end} if window_end else {})}, what


def _describe(event: dict[str, Any]) -> str:
    detail = event.get("detail") or {}
    if event.get("detail-type") == ALARM_DETAIL_TYPE:
        state = (detail.get("state") or {}).get("value")
        return f"alarm {detail.get('alarmName')} {state} at {_alarm_time(event)}"
    if event.get("detail-type") == SUSPECT_WORKER_DETAIL_TYPE:
        return f"suspect worker {str(detail.get('task_id'))[:64]}"
    return f"schedule tick at {event.get('time')}"


@dataclass
class Tally:
    listed: int = 0
    processed: int = 0
    kept: int = 0

    def line(self) -> str:
        return f"redrive: {self.listed} parked, {self.processed} re-run and deleted, {self.kept} kept"


def redrive_one(
    sqs: Any,
    queue_url: str,
    message: dict[str, Any],
    kind: FunctionName,
    args: argparse.Namespace,
    invoker: Invoker,
) -> tuple[bool, str]:
    """Whether the message was re-run and deleted, and what happened to it."""
    try:
        parked = json.loads(message.get("Body", ""))
    except ValueError:
        parked = None
    event, what = derive(kind, parked, args.enforce)
    if event is None:
        return False, f"kept: {what}"
    if not args.apply:
        return False, f"{what} -> would invoke {json.dumps(event)}"
    result = invoker(event)
    report = result.report or {}
    if result.unknown:
        return (
            False,
            f"kept: {what}: outcome unknown ({result.error}); read the function's logs before re-running",
        )
    if result.error or report.get("status") != "ok":
        reason = (
            result.error or f"report status {report.get('status')}: {json.dumps(report.get('errors'))[:300]}"
        )
        return False, f"kept: {what}: {reason}"
    ran = f"{what} -> {report.get('mode')} run {report.get('invocation_id')}: ok"
    try:
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    except (ClientError, BotoCoreError) as exc:
        # The re-run is done; the message comes back after its visibility timeout and a second
        # re-run re-reads the world like the first.
        return False, f"kept: {ran}, but not deleted ({exc})"
    return True, f"{ran}; deleted"


def redrive(
    sqs: Any,
    queue_url: str,
    kind: FunctionName,
    args: argparse.Namespace,
    invoker: Invoker,
    visibility_seconds: int,
    out: Callable[[str], None],
) -> Tally:
    """Every parked message once (at most ``args.max``): each stays hidden while the run goes on, so
    it is never seen twice; a kept one stays hidden until its visibility timeout, a listed one is
    visible again once the listing is over."""
    tally, listed = Tally(), []
    while tally.listed < args.max:
        received = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=1,
            VisibilityTimeout=visibility_seconds,
            MessageAttributeNames=["All"],
            WaitTimeSeconds=0,
        ).get("Messages", [])
        if not received:
            break
        (message,) = received
        tally.listed += 1
        done, what = redrive_one(sqs, queue_url, message, kind, args, invoker)
        tally.processed += done
        tally.kept += not done and args.apply
        if not args.apply:
            listed.append(message["ReceiptHandle"])
        out(f"{message['MessageId']}  {_origin(message)}  {what}")
    for receipt in listed:
        sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=receipt, VisibilityTimeout=0)
    return tally


def _origin(message: dict[str, Any]) -> str:
    attributes = message.get("MessageAttributes") or {}
    if "ERROR_CODE" in attributes:
        return f"eventbridge rule ({attributes['ERROR_CODE'].get('StringValue')})"
    if "ErrorCode" in attributes:
        return f"lambda async ({attributes['ErrorCode'].get('StringValue')})"
    return "unknown origin"


def dead_letter_queue(lambda_client: Any, sqs: Any, function_name: str) -> tuple[str, int]:
    """The function's DLQ URL (from its DeadLetterConfig) and its timeout in seconds."""
    configuration = lambda_client.get_function_configuration(FunctionName=function_name)
    arn = (configuration.get("DeadLetterConfig") or {}).get("TargetArn")
    if not arn or ":sqs:" not in arn:
        raise ValueError(f"{function_name} has no SQS dead-letter queue")
    _, _, _, _, account, name = arn.split(":", 5)
    url = sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]
    return str(url), int(configuration.get("Timeout", 900))


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="lkfr redrive", description=__doc__.split("\n\n")[0], formatter_class=PlainHelpFormatter
    )
    found.add_argument("--function", required=True, help="the function's name, e.g. lkfr-prod-zombie-reaper")
    found.add_argument("--apply", action="store_true", help="invoke, and delete each message that ran ok")
    found.add_argument(
        "--enforce", action="store_true", help='re-run with "dry_run": false (switch permitting)'
    )
    found.add_argument("--max", type=int, default=10, help="at most this many messages (default 10)")
    found.add_argument("--queue-url", help="the DLQ (default: the function's DeadLetterConfig)")
    found.add_argument("--region", help="AWS region (default: the credential chain's)")
    found.add_argument("--json", action="store_true", help="one JSON document: the lines and the tally")
    return found


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    command = parser()
    args = command.parse_args(argv)
    if args.max < 1:
        command.error("--max must be at least 1")
    return args


def main(
    argv: Sequence[str] | None = None,
    invoker: Invoker | None = None,
    out: Callable[[str], None] = print,
    session: boto3.session.Session | None = None,
) -> int:
    args = parse_args(argv)
    lines: list[str] = []
    if args.json:
        out = lines.append
    try:
        kind = function_kind(args.function)
        sqs = aws_client(QUEUE_CALL, session=session, region_name=args.region)
        lambda_client = aws_client(FUNCTION_READ, session=session, region_name=args.region)
        queue_url, timeout = dead_letter_queue(lambda_client, sqs, args.function)
        queue_url = args.queue_url or queue_url
    except ValueError as exc:
        print(f"lkfr redrive: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (ClientError, BotoCoreError) as exc:
        print(
            f"redrive failed: {sdk_failure(exc, f'reading {args.function} and its queue')}", file=sys.stderr
        )
        return EXIT_FAILED
    invoke = invoker or lambda_invoker(
        aws_client(invoke_budget(timeout), session=session, region_name=args.region), args.function
    )
    visibility = min(timeout + 2 * INVOKE_MARGIN_SECONDS, MAX_VISIBILITY_SECONDS)
    listing = "" if args.apply else " (listing only: add --apply)"
    out(f"{args.function}: dead-letter queue {queue_url}{listing}")
    try:
        tally = redrive(sqs, queue_url, kind, args, invoke, visibility, out)
    except (ClientError, BotoCoreError) as exc:
        # SQS refused a read (a permission, the key): what was printed so far stands.
        print(f"redrive failed: {sdk_failure(exc, f'reading {queue_url}')}", file=sys.stderr)
        return EXIT_FAILED
    out(tally.line())
    if args.json:
        print(json.dumps({"function": args.function, "queue_url": queue_url, "lines": lines, **vars(tally)}))
    return EXIT_FAILED if tally.kept else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
