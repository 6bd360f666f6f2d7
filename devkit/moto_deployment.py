"""One environment's three functions standing deployed on moto, in-process (for `make demo`'s audit
and its tests): each invocation's log lines go into its function's log group as Lambda would put
them, and the drainer's ledger is the moto table its steps write. ``lkfr audit`` then reads them back
exactly as it reads a real account: the functions' configuration, then their reports and the ledger.

moto keeps no LoggingConfig, so the functions log into Lambda's default group, which is also what
``lkfr audit`` falls back to.
"""

from __future__ import annotations

import io
import logging
import uuid
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import boto3

from fleet_remediation.contract.agent_services import DEFAULT_AGENT_SERVICE
from fleet_remediation.contract.naming import PER_SERVICE_FUNCTIONS, FunctionName, lambda_function_name
from fleet_remediation.core.observability import logger

ROLE_POLICY = '{"Version": "2012-10-17", "Statement": []}'


def _package() -> bytes:
    """A placeholder deployment package: the demo runs the handlers in-process, not in moto."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("placeholder.py", "")
    return buffer.getvalue()


def _service(function: FunctionName) -> str | None:
    """The demo's one agent service, for the functions it has its own copy of."""
    return DEFAULT_AGENT_SERVICE if function in PER_SERVICE_FUNCTIONS else None


def deploy(env: str, ledger_table: str) -> None:
    """Create the environment's three functions (the drainer naming its ledger) and their log groups."""
    role = boto3.client("iam").create_role(RoleName=f"lkfr-{env}-demo", AssumeRolePolicyDocument=ROLE_POLICY)
    lambda_client, logs = boto3.client("lambda"), boto3.client("logs")
    for function in FunctionName:
        name = lambda_function_name(env, function, _service(function))
        variables = {"ENVIRONMENT_NAME": env}
        if function is FunctionName.WORKER_DRAINER:
            variables["LEDGER_TABLE_NAME"] = ledger_table
        lambda_client.create_function(
            FunctionName=name,
            Runtime="python3.12",
            Role=role["Role"]["Arn"],
            Handler="placeholder.handler",
            Code={"ZipFile": _package()},
            Environment={"Variables": variables},
        )
        logs.create_log_group(logGroupName=f"/aws/lambda/{name}")


class LogGroupSink(logging.Handler):
    """One invocation's log stream: every record, formatted as the functions format it in Lambda."""

    def __init__(self, client: Any, group: str) -> None:
        super().__init__()
        self.client, self.group = client, group
        self.stream = f"{datetime.now(UTC):%Y/%m/%d}/[$LATEST]{uuid.uuid4().hex}"
        client.create_log_stream(logGroupName=group, logStreamName=self.stream)
        self.setFormatter(logger.registered_formatter)

    def emit(self, record: logging.LogRecord) -> None:
        event = {"timestamp": int(record.created * 1000), "message": self.format(record)}
        self.client.put_log_events(logGroupName=self.group, logStreamName=self.stream, logEvents=[event])


@contextmanager
def logged(env: str, function: FunctionName) -> Iterator[None]:
    """Run one invocation with its log lines going into ``function``'s log group."""
    name = lambda_function_name(env, function, _service(function))
    sink = LogGroupSink(boto3.client("logs"), f"/aws/lambda/{name}")
    functions_logger = logging.getLogger(logger.name)
    # The functions log their reports at INFO; the terminal keeps showing what it showed before.
    level, terminal = functions_logger.level, logger.registered_handler.level
    logger.registered_handler.setLevel(max(level, terminal))
    functions_logger.setLevel(logging.INFO)
    functions_logger.addHandler(sink)
    try:
        yield
    finally:
        functions_logger.removeHandler(sink)
        functions_logger.setLevel(level)
        logger.registered_handler.setLevel(terminal)
