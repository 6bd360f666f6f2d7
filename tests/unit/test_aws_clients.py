"""The budgeted client factory's guard (``adapters.aws_clients``): a call that changes something is
never sent again after an attempt that may have acted (a 5xx, a lost reply), while a read is
retried as its budget allows. Against a local peer on loopback that answers every request 500 and
counts them, with the production factory's own clients: every side effect of ``SIDE_EFFECTS``,
and one read of each of its services."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

from fleet_remediation.adapters.aws_clients import (
    SIDE_EFFECTS,
    _no_retry_after_ambiguous_attempt,
    aws_client,
    guard_side_effects,
)
from fleet_remediation.contract.budgets import KILL_SWITCH_READ, AwsCallBudget

# Two attempts: a read is sent twice, a side effect once.
ATTEMPTS = 2
TABLE, KEY = "once", {"pk": {"S": "a"}}
ARN = "arn:aws:ecs:eu-west-1:111111111111:task/agents/0123456789abcdef"
TOPIC = "arn:aws:sns:eu-west-1:111111111111:lkfr"
# The parameters of each call the factory's clients guard (and of one read per service).
CALLS: dict[str, dict[str, Any]] = {
    "ecs.TagResource": {"resourceArn": ARN, "tags": [{"key": "k", "value": "v"}]},
    "ecs.UntagResource": {"resourceArn": ARN, "tagKeys": ["k"]},
    "ecs.UpdateTaskProtection": {"cluster": "agents", "tasks": [ARN], "protectionEnabled": False},
    "ecs.StopTask": {"task": ARN},
    "ecs.UpdateService": {"service": "agent", "desiredCount": 2},
    "eventbridge.PutEvents": {"Entries": [{"Source": "lkfr", "DetailType": "t", "Detail": "{}"}]},
    "sns.Publish": {"TopicArn": TOPIC, "Message": "m"},
    "dynamodb.PutItem": {"TableName": TABLE, "Item": KEY},
    "dynamodb.UpdateItem": {"TableName": TABLE, "Key": KEY},
    "dynamodb.DeleteItem": {"TableName": TABLE, "Key": KEY},
    "ecs.DescribeTasks": {"tasks": [ARN]},
    "eventbridge.ListRules": {},
    "sns.ListTopics": {},
    "dynamodb.GetItem": {"TableName": TABLE, "Key": KEY},
}
READS = ["ecs.DescribeTasks", "eventbridge.ListRules", "sns.ListTopics", "dynamodb.GetItem"]
JSON_FAILURE = b'{"__type": "InternalFailure", "message": "internal failure"}'
XML_FAILURE = (
    b"<ErrorResponse><Error><Type>Receiver</Type><Code>InternalFailure</Code>"
    b"<Message>internal failure</Message></Error><RequestId>1</RequestId></ErrorResponse>"
)
BOTO_SERVICE = {"ecs": "ecs", "eventbridge": "events", "sns": "sns", "dynamodb": "dynamodb"}


@pytest.fixture
def failing_peer(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Every request answered 500; the requests counted (one key: the peer serves one call a test)."""
    received: Counter[str] = Counter()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            received["requests"] += 1
            # The JSON protocols name their target in a header; the query protocol (SNS) wants XML.
            json_protocol = "X-Amz-Target" in self.headers
            body = JSON_FAILURE if json_protocol else XML_FAILURE
            self.send_response(500)
            self.send_header("Content-Type", "application/x-amz-json-1.1" if json_protocol else "text/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    try:
        yield received
    finally:
        server.shutdown()
        server.server_close()


def _call(operation: str) -> Callable[[], Any]:
    service, name = operation.split(".")
    client = aws_client(AwsCallBudget(BOTO_SERVICE[service], 1.0, 2.0, ATTEMPTS), region_name="eu-west-1")
    method = getattr(client, _snake(name))
    return lambda: method(**CALLS[operation])


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


SIDE_EFFECT_CALLS = [
    f"{service}.{operation}" for service, operations in SIDE_EFFECTS.items() for operation in operations
]


def test_every_side_effect_has_its_parameters_here() -> None:
    assert set(SIDE_EFFECT_CALLS) <= set(CALLS)


@pytest.mark.parametrize("operation", SIDE_EFFECT_CALLS)
def test_a_side_effect_answered_5xx_is_sent_once(operation: str, failing_peer: Counter[str]) -> None:
    with pytest.raises(ClientError) as failed:
        _call(operation)()
    assert failed.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    assert failing_peer["requests"] == 1, f"{operation} was sent again after a 5xx: it may have acted"


@pytest.mark.parametrize("operation", READS)
def test_a_read_answered_5xx_is_retried_within_its_budget(operation: str, failing_peer: Counter[str]) -> None:
    with pytest.raises(ClientError):
        _call(operation)()
    assert failing_peer["requests"] == ATTEMPTS


def _client_error(status: int | None) -> ClientError:
    metadata = {} if status is None else {"ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError({"Error": {"Code": "X"}, **metadata}, "StopTask")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("caught", "verdict"),
    [
        (ReadTimeoutError(endpoint_url="https://ecs"), False),
        (_client_error(500), False),
        (_client_error(None), False),
        (_client_error(499), None),
        (ConnectTimeoutError(endpoint_url="https://ecs"), None),
        (EndpointConnectionError(endpoint_url="https://ecs"), None),
    ],
    ids=["lost-reply", "5xx", "no-status", "4xx", "connect-timeout", "not-connected"],
)
def test_after_an_exception_only_an_attempt_that_never_reached_the_service_may_be_retried(
    caught: Exception, verdict: bool | None
) -> None:
    assert _no_retry_after_ambiguous_attempt(caught_exception=caught) is verdict


@pytest.mark.parametrize(
    ("status", "verdict"),
    [(499, None), (500, False), (501, False), (200, None)],
    ids=["499", "500", "501", "200"],
)
def test_after_a_response_a_5xx_ends_the_call_and_the_rest_is_left_to_the_retry_mode(
    status: int, verdict: bool | None
) -> None:
    response = (None, {"ResponseMetadata": {"HTTPStatusCode": status}})
    assert _no_retry_after_ambiguous_attempt(response=response) is verdict
    assert _no_retry_after_ambiguous_attempt(response=(None, {})) is None
    assert _no_retry_after_ambiguous_attempt() is None


def test_the_guard_is_registered_once_however_often_a_client_is_guarded(failing_peer: Counter[str]) -> None:
    client = aws_client(AwsCallBudget("ecs", 1.0, 2.0, ATTEMPTS), region_name="eu-west-1")
    assert guard_side_effects(guard_side_effects(client)) is client
    with pytest.raises(ClientError):
        client.stop_task(**CALLS["ecs.StopTask"])
    assert failing_peer["requests"] == 1


def test_an_operator_tools_client_comes_from_its_session_in_its_region() -> None:
    session = boto3.session.Session(
        aws_access_key_id="x", aws_secret_access_key="y", region_name="ap-northeast-2", profile_name=None
    )
    client = aws_client(KILL_SWITCH_READ, session=session, region_name="us-east-2")
    assert client.meta.region_name == "us-east-2"
    assert aws_client(KILL_SWITCH_READ, session=session).meta.region_name == "ap-northeast-2"
