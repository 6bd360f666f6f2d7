"""lkfr redrive: which manual invoke re-runs each parked event, and how an invoke's outcome is read.

The derived events are parsed by each function's own manual-event model, so a derivation the
function would refuse fails here."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from fleet_remediation.contract.budgets import AwsCallBudget
from fleet_remediation.contract.naming import FunctionName
from livekit_fleet_remediation.cli import redrive as redrive_command
from livekit_fleet_remediation.cli.invoke import (
    INVOKE_MARGIN_SECONDS,
    InvokeResult,
    invoke_budget,
    lambda_invoker,
)
from livekit_fleet_remediation.cli.redrive import (
    dead_letter_queue,
    derive,
    function_kind,
    parse_args,
    parser,
    redrive,
    redrive_one,
)
from tts_reach_alarm.transition import TtsReachManualEvent
from worker_drainer.events import DrainerManualEvent
from zombie_reaper.events import ReaperManualEvent

# An ECS task id as ECS writes them (32 hex digits).
TASK = "b9238a5f30f04c3a9207df1601ba88bf"
SCHEDULE = {
    "version": "0",
    "id": "5f0c8c4a-1a1b-4c1d-9e1f-000000000001",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "111111111111",
    "time": "2026-09-15T17:40:00Z",
    "region": "eu-west-1",
    "resources": ["arn:aws:events:eu-west-1:111111111111:rule/lkfr-it-zombie-reaper-schedule"],
    "detail": {},
}


def alarm(name: str, state: str) -> dict[str, Any]:
    return {
        **SCHEDULE,
        "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch",
        "time": "2026-09-15T17:38:05Z",
        "detail": {"alarmName": name, "state": {"value": state, "timestamp": "2026-09-15T17:37:59.000+0000"}},
    }


MANUAL_MODELS = {
    FunctionName.ZOMBIE_REAPER: ReaperManualEvent,
    FunctionName.TTS_REACH_ALARM: TtsReachManualEvent,
    FunctionName.WORKER_DRAINER: DrainerManualEvent,
}


@pytest.mark.parametrize("kind", list(FunctionName))
@pytest.mark.parametrize("enforce", [False, True])
def test_a_parked_schedule_tick_becomes_a_manual_event_the_function_accepts(
    kind: FunctionName, enforce: bool
) -> None:
    event, what = derive(kind, SCHEDULE, enforce)
    assert event is not None
    parsed = MANUAL_MODELS[kind].model_validate(event)
    assert what == "schedule tick at 2026-09-15T17:40:00Z"
    if kind is FunctionName.WORKER_DRAINER:
        assert event == {"action": "plan"}
    else:
        assert parsed.dry_run is (not enforce)
    if kind is FunctionName.TTS_REACH_ALARM:
        # The re-check's window ends when the parked tick fired.
        assert event == {"dry_run": not enforce, "window_end": "2026-09-15T17:40:00Z"}


def test_the_reaper_re_runs_a_parked_alarm_as_a_manual_run() -> None:
    event, what = derive(
        FunctionName.ZOMBIE_REAPER, alarm("livekit-it-agents-vad-slow-inference", "ALARM"), True
    )
    assert event == {"dry_run": False}
    assert what == "alarm livekit-it-agents-vad-slow-inference ALARM at 2026-09-15T17:37:59.000+0000"


def test_the_responder_analyses_the_window_ending_when_the_parked_alarm_fired() -> None:
    event, _ = derive(FunctionName.TTS_REACH_ALARM, alarm("livekit-it-agents-tts-reach", "ALARM"), False)
    assert event == {"dry_run": True, "window_end": "2026-09-15T17:37:59.000+0000"}
    parsed = TtsReachManualEvent.model_validate(event)
    assert parsed.window_end is not None
    assert parsed.window_end.isoformat() == "2026-09-15T17:37:59+00:00"


def test_a_parked_alarm_without_its_state_timestamp_ends_the_window_at_the_event_time() -> None:
    parked = alarm("livekit-it-agents-tts-reach", "ALARM")
    del parked["detail"]["state"]["timestamp"]
    event, what = derive(FunctionName.TTS_REACH_ALARM, parked, False)
    assert event == {"dry_run": True, "window_end": "2026-09-15T17:38:05Z"}
    assert what == "alarm livekit-it-agents-tts-reach ALARM at 2026-09-15T17:38:05Z"


def test_an_ok_transition_has_no_manual_re_run() -> None:
    event, what = derive(FunctionName.TTS_REACH_ALARM, alarm("livekit-it-agents-tts-reach", "OK"), True)
    assert event is None
    assert "OK transition" in what


def test_the_drainer_plans_for_a_parked_suspect_worker_event() -> None:
    suspect = {**SCHEDULE, "detail-type": "LiveKit Suspect Worker", "detail": {"task_id": "b9238a5f"}}
    assert derive(FunctionName.WORKER_DRAINER, suspect, True) == (
        {"action": "plan"},
        "suspect worker b9238a5f",
    )


@pytest.mark.parametrize(
    ("parked", "enforce", "dry_run"),
    [
        ({"action": "drain", "task": TASK, "dry_run": False}, True, False),
        ({"action": "drain", "task": TASK, "dry_run": False}, False, True),
        ({"action": "drain", "task": TASK}, True, True),
        ({"action": "drain", "task": TASK, "dry_run": True}, True, True),
    ],
)
def test_a_parked_manual_payload_replays_as_it_was_never_less_strict(
    parked: dict[str, Any], enforce: bool, dry_run: bool
) -> None:
    event, what = derive(FunctionName.WORKER_DRAINER, parked, enforce)
    assert event == {**parked, "dry_run": dry_run}
    assert what == "manual"
    DrainerManualEvent.model_validate(event)


@pytest.mark.parametrize(
    "parked", [None, [1, 2], "text", {**SCHEDULE, "detail-type": "EC2 Instance State-change Notification"}]
)
def test_what_is_not_an_event_of_ours_is_not_re_run(parked: Any) -> None:
    event, _ = derive(FunctionName.ZOMBIE_REAPER, parked, True)
    assert event is None


def test_the_function_kind_comes_from_the_stack_s_function_name() -> None:
    assert function_kind("lkfr-prod-agents-worker-drainer") is FunctionName.WORKER_DRAINER
    with pytest.raises(ValueError, match="not one of this stack's functions"):
        function_kind("billing-worker")


class FakeLambda:
    """Stands in for a boto3 Lambda client: answers or raises what it is given."""

    def __init__(self, reply: dict[str, Any] | None = None, error: Exception | None = None) -> None:
        self.reply, self.error, self.calls = reply, error, 0
        self.sent: list[dict[str, Any]] = []

    def invoke(self, **call: Any) -> dict[str, Any]:
        self.calls += 1
        self.sent.append(call)
        if self.error is not None:
            raise self.error
        assert self.reply is not None
        return self.reply


def test_an_invoke_returns_the_function_s_report() -> None:
    report = {"status": "ok", "mode": "dry-run"}
    client = FakeLambda({"StatusCode": 200, "Payload": io.BytesIO(json.dumps(report).encode())})
    result = lambda_invoker(client, "lkfr-it-zombie-reaper")({"dry_run": True})
    assert result.report == report
    assert result.error is None
    assert not result.unknown
    # A synchronous invoke of the named function with the event as its payload.
    assert client.sent == [
        {
            "FunctionName": "lkfr-it-zombie-reaper",
            "InvocationType": "RequestResponse",
            "Payload": '{"dry_run": true}',
        }
    ]


@pytest.mark.parametrize("body", [b"", b"null", b'"done"', b"[1]"], ids=["empty", "null", "text", "list"])
def test_a_reply_that_is_not_a_report_is_no_report_and_no_error(body: bytes) -> None:
    """The function answered (it ran); what it returned is not a report: the commands say so."""
    client = FakeLambda({"StatusCode": 200, "Payload": io.BytesIO(body)})
    result = lambda_invoker(client, "lkfr-it-zombie-reaper")({"dry_run": True})
    assert (result.report, result.error, result.unknown) == (None, None, False)


def test_the_invoke_waits_out_the_function_in_one_attempt() -> None:
    assert invoke_budget(900) == AwsCallBudget(
        "lambda", connect_timeout_seconds=2, read_timeout_seconds=900 + INVOKE_MARGIN_SECONDS, attempts=1
    )
    assert INVOKE_MARGIN_SECONDS == 30


@pytest.mark.parametrize(
    ("error", "unknown"),
    [
        (ReadTimeoutError(endpoint_url="https://lambda"), True),
        (
            ClientError(
                {"Error": {"Code": "ServiceException"}, "ResponseMetadata": {"HTTPStatusCode": 500}}, "Invoke"
            ),
            True,
        ),
        (
            ClientError(
                {"Error": {"Code": "ResourceNotFoundException"}, "ResponseMetadata": {"HTTPStatusCode": 404}},
                "Invoke",
            ),
            False,
        ),
        (EndpointConnectionError(endpoint_url="https://lambda"), False),
    ],
)
def test_a_lost_reply_is_unknown_and_a_refused_call_is_an_error(error: Exception, unknown: bool) -> None:
    client = FakeLambda(error=error)
    result = lambda_invoker(client, "lkfr-it-zombie-reaper")({"dry_run": True})
    assert result.report is None
    assert result.error
    assert result.unknown is unknown
    assert client.calls == 1


@pytest.mark.parametrize(
    ("status", "unknown"),
    [(499, False), (500, True), (501, True)],
    ids=["499-refused", "500-unknown", "501-unknown"],
)
def test_a_service_error_is_unknown_from_500_on(status: int, unknown: bool) -> None:
    error = ClientError(
        {
            "Error": {"Code": "ServiceException", "Message": "boom"},
            "ResponseMetadata": {"HTTPStatusCode": status},
        },
        "Invoke",
    )
    result = lambda_invoker(FakeLambda(error=error), "lkfr-it-zombie-reaper")({"dry_run": True})
    assert result.unknown is unknown
    assert result.error is not None
    assert "ServiceException" in result.error


@pytest.mark.parametrize(
    "response",
    [
        {"Error": {"Code": "ServiceException"}},
        {"Error": {"Code": "ServiceException"}, "ResponseMetadata": {}},
    ],
    ids=["no-metadata", "no-status"],
)
def test_a_service_error_without_a_status_is_unknown_not_refused(response: dict[str, Any]) -> None:
    """No status read: whether the function ran cannot be told, as after a 5xx."""
    error = ClientError(response, "Invoke")
    result = lambda_invoker(FakeLambda(error=error), "lkfr-it-zombie-reaper")({"dry_run": True})
    assert result.unknown is True
    assert result.error is not None
    assert "ServiceException" in result.error


def test_a_function_error_is_an_error_not_a_report() -> None:
    payload = io.BytesIO(b'{"errorMessage": "boom"}')
    client = FakeLambda({"StatusCode": 200, "FunctionError": "Unhandled", "Payload": payload})
    result = lambda_invoker(client, "lkfr-it-zombie-reaper")({"dry_run": True})
    assert result.report is None
    assert result.error is not None
    assert result.error.startswith("Unhandled")


def _never_invoked(event: dict[str, Any]) -> Any:
    raise AssertionError(f"invoked with {event}")


@pytest.mark.parametrize(
    "message",
    [{"ReceiptHandle": "r"}, {"Body": "", "ReceiptHandle": "r"}, {"Body": "not json", "ReceiptHandle": "r"}],
    ids=["no-body", "empty-body", "not-json"],
)
def test_a_parked_message_that_is_no_event_is_kept_and_never_invoked(message: dict[str, Any]) -> None:
    args = parser().parse_args(["--function", "lkfr-it-zombie-reaper", "--apply", "--enforce"])
    invoker: Callable[[dict[str, Any]], Any] = _never_invoked
    assert redrive_one(None, "queue", message, FunctionName.ZOMBIE_REAPER, args, invoker) == (
        False,
        "kept: not a JSON object: no event of ours",
    )


def test_a_parked_alarm_without_any_time_analyses_the_window_ending_now() -> None:
    parked = alarm("livekit-it-agents-tts-reach", "ALARM")
    del parked["detail"]["state"]["timestamp"], parked["time"]
    event, _ = derive(FunctionName.TTS_REACH_ALARM, parked, True)
    assert event == {"dry_run": False}


class ParkedQueue:
    """An SQS client over parked messages: each receive hands out at most what it is asked for,
    records its parameters; visibility changes are recorded."""

    def __init__(self, count: int) -> None:
        self.parked = [
            {"MessageId": f"m{i}", "ReceiptHandle": f"r{i}", "Body": json.dumps(SCHEDULE)}
            for i in range(count)
        ]
        self.receives: list[dict[str, Any]] = []
        self.made_visible: list[str] = []

    def receive_message(self, **asked: Any) -> dict[str, Any]:
        self.receives.append(asked)
        handed, self.parked = (
            self.parked[: asked["MaxNumberOfMessages"]],
            self.parked[asked["MaxNumberOfMessages"] :],
        )
        return {"Messages": handed} if handed else {}

    def change_message_visibility(self, ReceiptHandle: str, VisibilityTimeout: int, **_: Any) -> None:
        assert VisibilityTimeout == 0
        self.made_visible.append(ReceiptHandle)


@pytest.mark.parametrize(("maximum", "listed"), [(2, 2), (3, 3), (4, 3)], ids=["under", "at", "over"])
def test_a_listing_takes_at_most_max_messages_one_at_a_time(maximum: int, listed: int) -> None:
    queue = ParkedQueue(3)
    args = parser().parse_args(["--function", "lkfr-it-zombie-reaper", "--max", str(maximum)])
    lines: list[str] = []
    tally = redrive(queue, "queue", FunctionName.ZOMBIE_REAPER, args, _never_invoked, 960, lines.append)
    assert (tally.listed, tally.processed, tally.kept) == (listed, 0, 0)
    assert len(lines) == listed
    # One message a receive, hidden for the run, without waiting on an empty queue.
    assert queue.receives[0] == {
        "QueueUrl": "queue",
        "MaxNumberOfMessages": 1,
        "VisibilityTimeout": 960,
        "MessageAttributeNames": ["All"],
        "WaitTimeSeconds": 0,
    }
    assert len(queue.receives) == min(maximum, 4)
    # A listing hands every message it saw back to the queue.
    assert queue.made_visible == [f"r{i}" for i in range(listed)]


class DeadLetterConfig:
    """A Lambda client and an SQS client for ``dead_letter_queue``: the configuration, the URL."""

    def __init__(self, configuration: dict[str, Any]) -> None:
        self.configuration = configuration
        self.asked: list[dict[str, Any]] = []

    def get_function_configuration(self, FunctionName: str) -> dict[str, Any]:
        return self.configuration

    def get_queue_url(self, **asked: Any) -> dict[str, Any]:
        self.asked.append(asked)
        return {"QueueUrl": f"https://sqs/{asked['QueueOwnerAWSAccountId']}/{asked['QueueName']}"}


DLQ_ARN = "arn:aws:sqs:eu-west-1:222222222222:lkfr-it-zombie-reaper-dlq"


def test_the_dead_letter_queue_is_the_functions_own_in_its_account() -> None:
    found = DeadLetterConfig({"DeadLetterConfig": {"TargetArn": DLQ_ARN}, "Timeout": 120})
    assert dead_letter_queue(found, found, "lkfr-it-zombie-reaper") == (
        "https://sqs/222222222222/lkfr-it-zombie-reaper-dlq",
        120,
    )
    assert found.asked == [
        {"QueueName": "lkfr-it-zombie-reaper-dlq", "QueueOwnerAWSAccountId": "222222222222"}
    ]
    # No timeout read: Lambda's longest.
    untimed = DeadLetterConfig({"DeadLetterConfig": {"TargetArn": DLQ_ARN}})
    assert dead_letter_queue(untimed, untimed, "lkfr-it-zombie-reaper")[1] == 900


@pytest.mark.parametrize(
    "configuration",
    [{}, {"DeadLetterConfig": {}}, {"DeadLetterConfig": {"TargetArn": "arn:aws:sns:eu-west-1:2:topic"}}],
    ids=["none", "no-target", "a-topic"],
)
def test_a_function_without_an_sqs_dead_letter_queue_is_named(configuration: dict[str, Any]) -> None:
    found = DeadLetterConfig(configuration)
    with pytest.raises(ValueError, match=r"^lkfr-it-zombie-reaper has no SQS dead-letter queue$"):
        dead_letter_queue(found, found, "lkfr-it-zombie-reaper")


def test_redrive_needs_the_function_and_lists_ten_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parser().parse_args(["--apply"])
    assert exited.value.code == 2
    assert "the following arguments are required: --function" in capsys.readouterr().err
    args = parser().parse_args(["--function", "lkfr-it-zombie-reaper"])
    assert (args.max, args.apply, args.enforce, args.json) == (10, False, False, False)
    assert parser().parse_args(["--function", "f", "--json", "--apply", "--enforce"]).json is True


def test_a_function_errors_reply_is_kept_to_its_first_200_bytes() -> None:
    body = b'{"errorMessage": "' + b"x" * 300 + b'"}'
    client = FakeLambda({"StatusCode": 200, "FunctionError": "Unhandled", "Payload": io.BytesIO(body)})
    result = lambda_invoker(client, "lkfr-it-zombie-reaper")({"dry_run": True})
    assert result.error == f"Unhandled: {body[:200]!r}"


def test_an_event_this_stack_does_not_route_is_named_by_its_type_cut_to_60_characters() -> None:
    foreign = {**SCHEDULE, "detail-type": "EC2 Instance State-change Notification " + "x" * 40}
    assert derive(FunctionName.ZOMBIE_REAPER, foreign, True) == (
        None,
        f"a {foreign['detail-type'][:60]!r} event: not one this stack routes",
    )


def test_a_suspect_worker_is_named_by_its_task_id_cut_to_64_characters() -> None:
    task = TASK * 3
    suspect = {**SCHEDULE, "detail-type": "LiveKit Suspect Worker", "detail": {"task_id": task}}
    assert derive(FunctionName.WORKER_DRAINER, suspect, True)[1] == f"suspect worker {task[:64]}"


def test_a_message_without_dead_letter_attributes_is_listed_as_of_unknown_origin() -> None:
    queue = ParkedQueue(1)
    args = parser().parse_args(["--function", "lkfr-it-zombie-reaper"])
    lines: list[str] = []
    redrive(queue, "queue", FunctionName.ZOMBIE_REAPER, args, _never_invoked, 960, lines.append)
    assert lines == [
        'm0  unknown origin  schedule tick at 2026-09-15T17:40:00Z -> would invoke {"dry_run": true}'
    ]


def test_max_below_one_is_bad_arguments_that_say_so(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(["--function", "lkfr-it-zombie-reaper", "--max", "0"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == "lkfr redrive: error: --max must be at least 1"


class OneParked:
    """An SQS client holding one parked schedule tick: records what was deleted."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    def delete_message(self, ReceiptHandle: str, **_: Any) -> None:
        self.deleted.append(ReceiptHandle)


PARKED_TICK = {"MessageId": "m0", "ReceiptHandle": "r0", "Body": json.dumps(SCHEDULE)}


def test_a_re_run_that_reports_ok_is_deleted_and_named_by_its_invocation() -> None:
    queue = OneParked()
    args = parser().parse_args(["--function", "lkfr-it-zombie-reaper", "--apply"])
    ran = InvokeResult(report={"status": "ok", "mode": "dry-run", "invocation_id": "9f1480eb"})
    assert redrive_one(queue, "queue", PARKED_TICK, FunctionName.ZOMBIE_REAPER, args, lambda _: ran) == (
        True,
        "schedule tick at 2026-09-15T17:40:00Z -> dry-run run 9f1480eb: ok; deleted",
    )
    assert queue.deleted == ["r0"]


def test_a_re_run_whose_report_is_not_ok_is_kept_with_its_status_and_errors_cut_to_300() -> None:
    queue = OneParked()
    args = parser().parse_args(["--function", "lkfr-it-zombie-reaper", "--apply"])
    errors = [{"code": "LiveKitApiError", "message": "ListRooms failed: " + "x" * 400}]
    failed = InvokeResult(report={"status": "failed", "errors": errors})
    assert redrive_one(queue, "queue", PARKED_TICK, FunctionName.ZOMBIE_REAPER, args, lambda _: failed) == (
        False,
        f"kept: schedule tick at 2026-09-15T17:40:00Z: report status failed: {json.dumps(errors)[:300]}",
    )
    assert queue.deleted == []


class SessionClients:
    """Stands in for the budgeted client factory: records each client's budget, session and region,
    and answers as the function's Lambda client and its dead-letter queue with nothing parked."""

    def __init__(self) -> None:
        self.made: list[tuple[AwsCallBudget, Any, str | None]] = []

    def __call__(self, budget: AwsCallBudget, *, session: Any = None, region_name: str | None = None) -> Any:
        self.made.append((budget, session, region_name))
        return self

    def get_function_configuration(self, FunctionName: str) -> dict[str, Any]:
        return {"DeadLetterConfig": {"TargetArn": DLQ_ARN}, "Timeout": 120}

    def get_queue_url(self, **_: Any) -> dict[str, Any]:
        return {"QueueUrl": "https://sqs/dlq"}

    def receive_message(self, **_: Any) -> dict[str, Any]:
        return {}


def test_every_client_of_a_redrive_comes_from_the_session_it_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An operator tool's session (a profile, an assumed role) is the one the invoke uses too."""
    clients = SessionClients()
    monkeypatch.setattr(redrive_command, "aws_client", clients)
    session = boto3.session.Session()
    argv = ["--function", "lkfr-it-zombie-reaper", "--region", "eu-west-1"]
    assert redrive_command.main(argv, out=[].append, session=session) == 0
    assert clients.made == [
        (redrive_command.QUEUE_CALL, session, "eu-west-1"),
        (redrive_command.FUNCTION_READ, session, "eu-west-1"),
        (invoke_budget(120), session, "eu-west-1"),
    ]
