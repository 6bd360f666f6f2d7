"""Dead letters re-run end to end: an event parked in the reaper's DLQ (SQS on moto, attributes as
Lambda and EventBridge write them) is re-run by ``lkfr redrive`` through the reaper's own handler
against a real livekit-server, and the message is gone only after that run returned an ok report.

The function's configuration is a moto Lambda function with a stand-in for its ``DeadLetterConfig``
(``tests/dead_letters.py``). moto cannot run the function without Docker, so the tool's invoker calls
the handler in this process and hands its report back as JSON, as Lambda's Invoke would. The last
test runs the steps of
``docs/runbooks/dead-letters.md`` as written: ``aws`` lines through ``AwsCli`` (botocore with the
CLI's option names, ``--query`` and ``--output text``) on moto, ``lkfr redrive`` lines
through the tool's ``main``."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from devkit.livekit_clients import create_rooms, room_names
from devkit.livekit_local import LocalLiveKit
from livekit_fleet_remediation.cli import redrive
from livekit_fleet_remediation.cli.invoke import InvokeResult
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from tests.aws_cli import AwsCli
from tests.dead_letters import deployed_function, with_dead_letter_config
from zombie_reaper import handler
from zombie_reaper.dependencies import ReaperDependencies

ENV = "it"
FUNCTION = f"lkfr-{ENV}-zombie-reaper"
MODE_PARAMETER = f"/livekit-fleet-remediation/{ENV}/mode"
SECRET_NAME = f"{ENV}/livekit/api-credentials"
RUNBOOK = Path(__file__).resolve().parents[2] / "docs" / "runbooks" / "dead-letters.md"
# A schedule tick as EventBridge sends it; Lambda parks the event itself as the message body.
SCHEDULE_EVENT = {
    "version": "0",
    "id": "0d3c1f4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "123456789012",
    "time": "2026-09-15T17:40:00Z",
    "region": "eu-west-1",
    "resources": [f"arn:aws:events:eu-west-1:123456789012:rule/{FUNCTION}-schedule"],
    "detail": {},
}
LAMBDA_ASYNC_FAILURE = {
    "RequestID": {"DataType": "String", "StringValue": "7c1d2e3f-0000-4000-8000-000000000001"},
    "ErrorCode": {"DataType": "Number", "StringValue": "200"},
    "ErrorMessage": {"DataType": "String", "StringValue": "InternalError: RuntimeError: boom"},
}


@dataclass
class World:
    dlq_url: str
    sqs: Any
    ssm: Any
    inbox_url: str
    session: boto3.session.Session
    printed: list[str] = field(default_factory=list)

    def redrive(self, argv: list[str], invoker: redrive.Invoker) -> int:
        return redrive.main(argv, invoker, self.printed.append, self.session)

    def park(self, event: Any, attributes: dict[str, Any] = LAMBDA_ASYNC_FAILURE) -> None:
        self.sqs.send_message(
            QueueUrl=self.dlq_url, MessageBody=json.dumps(event), MessageAttributes=attributes
        )

    def parked(self) -> tuple[int, int]:
        """(visible, in flight) messages in the DLQ."""
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.dlq_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]), int(
            attributes["ApproximateNumberOfMessagesNotVisible"]
        )

    def notifications(self) -> list[dict[str, Any]]:
        messages = self.sqs.receive_message(QueueUrl=self.inbox_url, MaxNumberOfMessages=10).get(
            "Messages", []
        )
        return [json.loads(m["Body"]) for m in messages]


@pytest.fixture
def world(livekit_server: LocalLiveKit, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    with mock_aws():
        ssm = boto3.client("ssm")
        ssm.put_parameter(Name=MODE_PARAMETER, Value="enforce", Type="String")
        boto3.client("secretsmanager").create_secret(
            Name=SECRET_NAME,
            SecretString=json.dumps(
                {"api_key": livekit_server.api_key, "api_secret": livekit_server.api_secret}
            ),
        )
        sqs = boto3.client("sqs")
        topic_arn = boto3.client("sns").create_topic(Name=f"{ENV}-notifications")["TopicArn"]
        inbox_url = sqs.create_queue(QueueName=f"{ENV}-inbox")["QueueUrl"]
        inbox_arn = sqs.get_queue_attributes(QueueUrl=inbox_url, AttributeNames=["QueueArn"])["Attributes"]
        boto3.client("sns").subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=inbox_arn["QueueArn"])
        dlq_url = sqs.create_queue(QueueName=f"{FUNCTION}-dead-letters")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        deployed_function(FUNCTION, dlq_arn)
        for name, value in {
            "ENVIRONMENT_NAME": ENV,
            "MODE_PARAMETER_NAME": MODE_PARAMETER,
            "NOTIFICATION_TOPIC_ARN": topic_arn,
            "RUNBOOK_BASE_URL": "https://runbooks.example.com/repo",
            "LIVEKIT_URL": livekit_server.http_url,
            "LIVEKIT_SECRET_ID": SECRET_NAME,
            "REAPER": json.dumps(
                {
                    "livekit_request_timeout_seconds": 2,
                    # Only this module's rooms: the livekit-server is shared by the whole session.
                    "policy": {"managed_room_pattern": "^redrive-.+$", "max_age_minutes": 60},
                }
            ),
        }.items():
            monkeypatch.setenv(name, value)
        yield World(dlq_url, sqs, ssm, inbox_url, with_dead_letter_config(FUNCTION, dlq_arn))


def reaper_in_process(later: timedelta) -> redrive.Invoker:
    """The reaper's own handler (a cold start per invoke), on a clock ``later`` than now so rooms
    age without the test waiting; its report comes back through JSON, as Invoke's payload does."""

    def invoke(event: dict[str, Any]) -> InvokeResult:
        deps = ReaperDependencies.from_environment()
        deps.clock = lambda: datetime.now(UTC) + later
        report = handler.lambda_handler(
            json.loads(json.dumps(event)), LocalLambdaContext(), dependencies=deps
        )
        return InvokeResult(report=json.loads(json.dumps(report)))

    return invoke


TWO_HOURS = timedelta(hours=2)


def test_a_parked_tick_is_listed_then_re_run_and_then_gone(
    livekit_server: LocalLiveKit, world: World
) -> None:
    asyncio.run(create_rooms(livekit_server, ["redrive-zombie-1"]))
    world.park(SCHEDULE_EVENT)

    listing = world.redrive(["--function", FUNCTION], reaper_in_process(TWO_HOURS))
    assert listing == 0
    assert 'would invoke {"dry_run": true}' in world.printed[1]
    assert "lambda async (200)" in world.printed[1]
    assert world.printed[-1] == "redrive: 1 parked, 0 re-run and deleted, 0 kept"
    assert world.parked() == (1, 0)
    assert "redrive-zombie-1" in asyncio.run(room_names(livekit_server))

    applied = world.redrive(["--function", FUNCTION, "--apply", "--enforce"], reaper_in_process(TWO_HOURS))
    assert applied == 0
    assert "schedule tick at 2026-09-15T17:40:00Z -> enforce run" in world.printed[-2]
    assert world.printed[-2].endswith("ok; deleted")
    assert world.printed[-1] == "redrive: 1 parked, 1 re-run and deleted, 0 kept"
    assert "redrive-zombie-1" not in asyncio.run(room_names(livekit_server))
    assert world.parked() == (0, 0)
    (notification,) = world.notifications()
    assert notification["Subject"].startswith(f"[{ENV}] zombie reaper deleted 1 of 1 over-age room(s)")


def test_a_re_run_that_fails_keeps_the_message(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    alarm = {
        **SCHEDULE_EVENT,
        "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch",
        "detail": {"alarmName": f"livekit-{ENV}-agents-vad-slow-inference", "state": {"value": "ALARM"}},
    }
    rule_failure = {
        "ERROR_CODE": {"DataType": "String", "StringValue": "SDK_CLIENT_ERROR"},
        "ERROR_MESSAGE": {"DataType": "String", "StringValue": "Rate exceeded"},
    }
    world.park(alarm, rule_failure)
    # The cause is not fixed yet: the LiveKit secret the reaper reads is missing.
    monkeypatch.setenv("LIVEKIT_SECRET_ID", f"{ENV}/livekit/missing")

    status = world.redrive(["--function", FUNCTION, "--apply"], reaper_in_process(TWO_HOURS))

    assert status == 1
    assert "eventbridge rule (SDK_CLIENT_ERROR)" in world.printed[1]
    assert "kept: alarm livekit-it-agents-vad-slow-inference ALARM" in world.printed[1]
    assert "report status failed" in world.printed[1]
    assert world.printed[-1] == "redrive: 1 parked, 0 re-run and deleted, 1 kept"
    assert world.parked() == (0, 1)


def test_an_invoke_whose_reply_was_lost_is_not_retried_and_keeps_the_message(world: World) -> None:
    world.park(SCHEDULE_EVENT)
    calls: list[dict[str, Any]] = []

    def reply_lost(event: dict[str, Any]) -> InvokeResult:
        """Stands in for an Invoke whose read timed out: the function may or may not have run."""
        calls.append(event)
        return InvokeResult(error="reply lost: read timeout", unknown=True)

    status = world.redrive(["--function", FUNCTION, "--apply", "--max", "5"], reply_lost)

    assert status == 1
    assert calls == [{"dry_run": True}]
    assert "outcome unknown (reply lost: read timeout)" in world.printed[1]
    assert world.parked() == (0, 1)


def runbook_steps(sections: tuple[str, ...]) -> list[str]:
    """The command lines of the runbook's numbered sections ``sections``, in order."""
    text = RUNBOOK.read_text()
    steps = []
    for section in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        if section.split(".", 1)[0] in sections:
            for block in re.findall(r"^```\n(.*?)^```", section, re.MULTILINE | re.DOTALL):
                steps += [line for line in block.splitlines() if line.strip()]
    return steps


def test_the_dead_letters_runbook_runs_as_written(livekit_server: LocalLiveKit, world: World) -> None:
    asyncio.run(create_rooms(livekit_server, ["redrive-runbook-1"]))
    world.park(SCHEDULE_EVENT)
    steps = runbook_steps(("1", "2", "3", "4"))
    assert len(steps) >= 6
    cli, known = AwsCli(world.session), {"<env>": ENV}
    for step in steps:
        line = step
        for placeholder, value in known.items():
            line = line.replace(placeholder, value)
        assert not re.search(r"<[a-z ]+>", line), f"{step}: no value for a placeholder yet"
        words = shlex.split(line)
        if words[:2] == ["lkfr", "redrive"]:
            status = world.redrive(words[2:], reaper_in_process(TWO_HOURS))
            assert status == 0, world.printed
            continue
        assert words[0] == "aws", step
        output = cli.run(words)
        if words[1:3] == ["lambda", "get-function-configuration"]:
            known["<queue name>"] = output.rsplit(":", 1)[1]
        if words[1:3] == ["sqs", "get-queue-url"]:
            known["<queue url>"] = json.loads(output)["QueueUrl"]
    assert known["<queue url>"] == world.dlq_url
    assert world.parked() == (0, 0)
    assert "redrive-runbook-1" not in asyncio.run(room_names(livekit_server))
    assert json.loads(output) == {
        "Attributes": {"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0"}
    }


def test_a_re_run_whose_message_cannot_be_deleted_says_so(world: World) -> None:
    world.park(SCHEDULE_EVENT)

    def receipt_expired(**_: Any) -> None:
        """Stands in for SQS refusing a receipt handle whose visibility timeout ran out."""
        error = {"Code": "ReceiptHandleIsInvalid", "Message": "expired"}
        raise ClientError({"Error": error}, "DeleteMessage")

    world.session.events.register("before-call.sqs.DeleteMessage", receipt_expired)
    status = world.redrive(["--function", FUNCTION, "--apply"], reaper_in_process(timedelta(0)))

    assert status == 1
    assert "-> dry-run run" in world.printed[1]
    assert "ok, but not deleted" in world.printed[1]
    assert "ReceiptHandleIsInvalid" in world.printed[1]
    assert world.parked() == (0, 1)


def test_a_queue_sqs_will_not_read_is_one_typed_line_and_exit_1(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """The documented contract (docs/operations/commands.md): an SDK error is a typed failure."""
    world.park(SCHEDULE_EVENT)

    def access_denied(**_: Any) -> None:
        """Stands in for SQS refusing the read (the caller may not use the queue's key)."""
        raise ClientError({"Error": {"Code": "KMS.AccessDeniedException", "Message": "no"}}, "ReceiveMessage")

    world.session.events.register("before-call.sqs.ReceiveMessage", access_denied)
    status = world.redrive(["--function", FUNCTION, "--apply"], reaper_in_process(timedelta(0)))

    assert status == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("redrive failed: KMS.AccessDeniedException: reading ")
    assert line.endswith(": no")
    assert world.parked() == (1, 0)


def test_a_function_lambda_does_not_know_is_one_typed_line_and_exit_1(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    status = world.redrive(["--function", "lkfr-elsewhere-zombie-reaper"], reaper_in_process(timedelta(0)))

    assert status == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        "redrive failed: ResourceNotFoundException: reading lkfr-elsewhere-zombie-reaper and its queue: "
    )


@dataclass
class LoopbackAws:
    """Lambda and SQS as ``lkfr redrive`` calls them, on loopback: the function's configuration
    (its DLQ and timeout), one parked tick, and an invoke answered ``invoke_status``. Counts the
    invokes and records the SQS calls and the region each request was signed for."""

    invoke_status: int = 500
    invokes: list[dict[str, Any]] = field(default_factory=list)
    sqs_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    regions: set[str] = field(default_factory=set)
    handed_out: bool = False


def _loopback_handler(aws: LoopbackAws) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _answer(self, status: int, body: dict[str, Any], **headers: str) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/x-amz-json-1.0")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _signed(self) -> None:
            scope = self.headers.get("Authorization", "").split("Credential=")[-1].split("/")
            aws.regions.add(scope[2] if len(scope) > 2 else "")

        def do_GET(self) -> None:
            self._signed()
            self._answer(
                200,
                {
                    "FunctionName": FUNCTION,
                    "Timeout": 3,
                    "DeadLetterConfig": {"TargetArn": f"arn:aws:sqs:eu-west-1:123456789012:{FUNCTION}-dlq"},
                },
            )

        def do_POST(self) -> None:
            self._signed()
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            target = self.headers.get("X-Amz-Target", "")
            if target.startswith("AmazonSQS."):
                self._sqs(target.removeprefix("AmazonSQS."), body)
                return
            aws.invokes.append(body)
            if aws.invoke_status >= 500:
                self._answer(
                    aws.invoke_status,
                    {"message": "internal failure"},
                    **{"x-amzn-ErrorType": "ServiceException"},
                )
            else:
                self._answer(200, {"status": "ok", "mode": "dry-run", "invocation_id": "inv-1"})

        def _sqs(self, operation: str, body: dict[str, Any]) -> None:
            aws.sqs_calls.append((operation, body))
            if operation == "GetQueueUrl":
                self._answer(200, {"QueueUrl": "https://sqs.loopback/dlq"})
            elif operation == "ReceiveMessage" and not aws.handed_out:
                aws.handed_out = True
                message = {"MessageId": "m1", "ReceiptHandle": "r1", "Body": json.dumps(SCHEDULE_EVENT)}
                self._answer(200, {"Messages": [{**message, "MD5OfBody": _md5(message["Body"])}]})
            else:
                self._answer(200, {})

    return Handler


def _md5(text: str) -> str:
    import hashlib

    return hashlib.md5(text.encode()).hexdigest()


@pytest.fixture
def loopback_aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackAws]:
    found = LoopbackAws()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _loopback_handler(found))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    try:
        yield found
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("status", [500, 503])
def test_a_re_run_answered_5xx_by_the_production_client_is_invoked_once_and_kept(
    loopback_aws: LoopbackAws, status: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """``lkfr redrive --apply`` with its own clients (no injected invoker): an invoke that may have
    run the function is never sent again, the message stays parked, the outcome is unknown."""
    loopback_aws.invoke_status = status
    argv = ["--function", FUNCTION, "--apply", "--enforce", "--region", "eu-west-1", "--json"]
    assert redrive.main(argv) == 1
    assert loopback_aws.invokes == [{"dry_run": False}], "one attempt: a retried invoke could act twice"
    assert "DeleteMessage" not in [operation for operation, _ in loopback_aws.sqs_calls]
    # Hidden for the function's timeout and two margins while the run goes on.
    receive = next(body for operation, body in loopback_aws.sqs_calls if operation == "ReceiveMessage")
    assert (receive["MaxNumberOfMessages"], receive["VisibilityTimeout"], receive["WaitTimeSeconds"]) == (
        1,
        63,
        0,
    )
    assert loopback_aws.regions == {"eu-west-1"}
    printed = json.loads(capsys.readouterr().out)
    assert printed["function"] == FUNCTION
    assert printed["queue_url"] == "https://sqs.loopback/dlq"
    assert (printed["listed"], printed["processed"], printed["kept"]) == (1, 0, 1)
    assert printed["lines"][0] == f"{FUNCTION}: dead-letter queue https://sqs.loopback/dlq"
    assert "outcome unknown" in printed["lines"][1]


def test_a_listing_says_it_only_lists_and_invokes_nothing(
    loopback_aws: LoopbackAws, capsys: pytest.CaptureFixture[str]
) -> None:
    assert redrive.main(["--function", FUNCTION, "--region", "eu-west-1"]) == 0
    assert loopback_aws.invokes == []
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{FUNCTION}: dead-letter queue https://sqs.loopback/dlq (listing only: add --apply)"
    assert lines[-1] == "redrive: 1 parked, 0 re-run and deleted, 0 kept"


@pytest.mark.parametrize(("maximum", "refused"), [("0", True), ("1", False)], ids=["0", "1"])
def test_max_is_at_least_one(maximum: str, refused: bool, capsys: pytest.CaptureFixture[str]) -> None:
    if refused:
        with pytest.raises(SystemExit) as exited:
            redrive.parse_args(["--function", FUNCTION, "--max", maximum])
        assert exited.value.code == 2
        assert "--max must be at least 1" in capsys.readouterr().err
    else:
        assert redrive.parse_args(["--function", FUNCTION, "--max", maximum]).max == 1


def test_a_name_that_is_not_one_of_ours_is_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert redrive.main(["--function", "billing-worker", "--region", "eu-west-1"]) == 2
    assert capsys.readouterr().err.startswith(
        "lkfr redrive: error: 'billing-worker' is not one of this stack's"
    )
