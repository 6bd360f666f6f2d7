"""A deployed function as ``lkfr redrive`` reads it, on moto: its timeout, its dead-letter queue and
its log group.

moto accepts ``DeadLetterConfig`` on CreateFunction and drops it, so ``with_dead_letter_config`` (a
stand-in, on the session the tool is given) adds it to GetFunctionConfiguration's answer, as Lambda
does for the function the stack deploys."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime
from typing import Any

import boto3


def with_dead_letter_config(function_name: str, dlq_arn: str) -> boto3.session.Session:
    """A session whose GetFunctionConfiguration answers for ``function_name`` carry its DLQ."""
    session = boto3.session.Session()

    def add(parsed: dict[str, Any], **_: Any) -> None:
        if parsed.get("FunctionName") == function_name:
            parsed["DeadLetterConfig"] = {"TargetArn": dlq_arn}

    session.events.register("after-call.lambda.GetFunctionConfiguration", add)
    return session


def _function_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "")
    return buffer.getvalue()


def deployed_function(function_name: str, dlq_arn: str, timeout_seconds: int = 90) -> None:
    """The function (with its DLQ and timeout) and its log group holding one failed invocation."""
    role = boto3.client("iam").create_role(
        RoleName=f"{function_name}-role",
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
    )["Role"]["Arn"]
    boto3.client("lambda").create_function(
        FunctionName=function_name,
        Runtime="python3.12",
        Role=role,
        Handler="handler.lambda_handler",
        Code={"ZipFile": _function_zip()},
        Timeout=timeout_seconds,
        DeadLetterConfig={"TargetArn": dlq_arn},
    )
    group, stream = f"/aws/lambda/{function_name}", "2026/09/15/[$LATEST]0"
    logs = boto3.client("logs")
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName=stream)
    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    failed = {"timestamp": now_ms, "message": "InternalError: boom"}
    logs.put_log_events(logGroupName=group, logStreamName=stream, logEvents=[failed])
