"""How the production EventBridge adapter of the action events (``adapters.action_events``) reads
each answer, per batch, against moto's bus with an explicit fake in front of it at botocore's
``before-send`` (``devkit.fakes.aws_faults.answered``: the status and error code a real endpoint
gives): a refusal (4xx, throttling even with a 5xx status, no connection) is ``failed``; a 5xx or a
lost reply is ``unknown`` (never re-sent); failed entries of an answered batch are ``failed``; and
the counts add up over the batches of one put."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError
from moto import mock_aws

from devkit.fakes.aws_faults import answered
from fleet_remediation.adapters.action_events import EventBridgeActionEvents
from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.contract.action_events import ENTRIES_PER_PUT, ActionEvent, ActionKind, event_id
from fleet_remediation.contract.budgets import ACTION_EVENTS_PUT

REGION = "eu-west-1"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _events(count: int) -> list[ActionEvent]:
    return [
        ActionEvent(
            id=event_id("worker_drainer", "r", str(i)),
            environment="it",
            function="worker_drainer",
            version="0.2.0",
            invocation_id="r",
            mode="enforce",
            kind=ActionKind.ACTION,
            resource=f"task-{i}",
            action="cordon",
            outcome="done",
            reason="slow inference",
            at=NOW,
        )
        for i in range(count)
    ]


Answer = Callable[[Any], Any]


@pytest.fixture
def bus() -> Iterator[tuple[Any, list[Answer]]]:
    """The client, and the answers of its next PutEvents attempts (then moto answers)."""
    with mock_aws():
        # The client the adapter builds in production (its budget, no retry after a 5xx).
        client = aws_client(ACTION_EVENTS_PUT, region_name=REGION)
        answers: list[Answer] = []

        def send(request: Any, **_: Any) -> Any:
            return answers.pop(0)(request) if answers else None

        client.meta.events.register_first("before-send.events.PutEvents", send)
        yield client, answers


def _status(status: int, code: str) -> Answer:
    return lambda request: answered(request, status, {"__type": code, "message": code})


def _raise(error: Exception) -> Answer:
    def answer(request: Any) -> Any:
        raise error

    return answer


@pytest.mark.parametrize(
    ("answer", "failed", "unknown", "problem"),
    [
        (_status(400, "ValidationException"), 1, 0, "refused: ValidationException"),
        (_status(400, "ThrottlingException"), 1, 0, "refused: ThrottlingException"),
        (_status(503, "ThrottlingException"), 1, 0, "refused: ThrottlingException"),
        (_status(500, "InternalFailure"), 0, 1, "may have landed: InternalFailure"),
        (_raise(EndpointConnectionError(endpoint_url="https://events")), 1, 0, "not sent (no connection)"),
        (_raise(ReadTimeoutError(endpoint_url="https://events")), 0, 1, "may have landed (no reply)"),
    ],
    ids=["4xx", "throttled-4xx", "throttled-5xx", "5xx", "no-connection", "no-reply"],
)
def test_each_answer_of_a_batch_is_counted_as_the_service_gave_it(
    bus: tuple[Any, list[Answer]], answer: Answer, failed: int, unknown: int, problem: str
) -> None:
    client, answers = bus
    # Every attempt is answered alike: botocore's retries of a throttled call see the same answer.
    answers.extend([answer] * 10)
    announced = EventBridgeActionEvents("default", client).put(_events(1))
    assert (announced.sent, announced.failed, announced.unknown) == (0, failed, unknown)
    (told,) = announced.problems
    assert told.startswith(problem)


def test_the_counts_add_up_over_the_batches_of_one_put(bus: tuple[Any, list[Answer]]) -> None:
    client, answers = bus
    # Four batches: refused, lost (5xx: never re-sent), answered by moto, refused again.
    answers.extend([_status(400, "ValidationException"), _status(500, "InternalFailure")])
    events = _events(3 * ENTRIES_PER_PUT + 4)
    sink = EventBridgeActionEvents("default", client)
    first = sink.put(events[: 2 * ENTRIES_PER_PUT])
    assert (first.failed, first.unknown, first.sent) == (ENTRIES_PER_PUT, ENTRIES_PER_PUT, 0)
    answers.extend([_status(400, "ValidationException")] * 10)
    second = sink.put(events[2 * ENTRIES_PER_PUT :])
    assert (second.failed, second.unknown, second.sent) == (ENTRIES_PER_PUT + 4, 0, 0)
    assert len(second.problems) == 2


def test_failed_entries_of_an_answered_batch_are_failed_and_the_rest_sent(
    bus: tuple[Any, list[Answer]],
) -> None:
    client, answers = bus

    def partly(request: Any) -> Any:
        entries = [
            {"EventId": "e1"},
            {"ErrorCode": "InternalFailure", "ErrorMessage": "x"},
            {"EventId": "e3"},
        ]
        return answered(request, 200, {"FailedEntryCount": 1, "Entries": entries})

    answers.append(partly)
    announced = EventBridgeActionEvents("default", client).put(_events(3))
    assert (announced.sent, announced.failed, announced.unknown) == (2, 1, 0)
    # And with nothing failed (moto answers, no FailedEntryCount above 0): all sent.
    clean = EventBridgeActionEvents("default", client).put(_events(3))
    assert (clean.sent, clean.failed, clean.unknown) == (3, 0, 0)


def test_an_injected_client_is_not_retried_after_a_5xx_either() -> None:
    """The adapter guards the client it is given as the one it builds: a 5xx (the put may have
    landed) is unknown and never sent again, even where botocore's own retries would resend it."""
    with mock_aws():
        client = boto3.client("events", region_name=REGION)
        attempts: list[int] = []

        def first_5xx(request: Any, **_: Any) -> Any:
            attempts.append(1)
            return _status(500, "InternalFailure")(request) if len(attempts) == 1 else None

        client.meta.events.register_first("before-send.events.PutEvents", first_5xx)
        announced = EventBridgeActionEvents("default", client).put(_events(1))
    assert attempts == [1]
    assert (announced.sent, announced.failed, announced.unknown) == (0, 0, 1)


def test_the_adapter_builds_its_own_client_when_given_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        announced = EventBridgeActionEvents("default").put(_events(2))
    assert (announced.sent, announced.failed, announced.unknown) == (2, 0, 0)


@pytest.mark.parametrize(
    ("answer", "failed", "unknown"),
    [
        (_status(400, "ValidationException"), ENTRIES_PER_PUT + 1, 0),
        (_status(500, "InternalFailure"), 0, ENTRIES_PER_PUT + 1),
        (_raise(EndpointConnectionError(endpoint_url="https://events")), ENTRIES_PER_PUT + 1, 0),
        (_raise(ReadTimeoutError(endpoint_url="https://events")), 0, ENTRIES_PER_PUT + 1),
    ],
    ids=["4xx", "5xx", "no-connection", "no-reply"],
)
def test_each_batch_of_a_put_is_counted_not_only_the_last(
    bus: tuple[Any, list[Answer]], answer: Answer, failed: int, unknown: int
) -> None:
    client, answers = bus
    answers.extend([answer] * 20)
    announced = EventBridgeActionEvents("default", client).put(_events(ENTRIES_PER_PUT + 1))
    assert (announced.sent, announced.failed, announced.unknown) == (0, failed, unknown)
    assert len(announced.problems) == 2


def _answering(reply: Callable[..., Any]) -> Any:
    """A real client whose PutEvents is ``reply``: answers botocore never gives (no status, no code,
    no failed count) read as the unknown they are."""
    client = boto3.client("events", region_name=REGION)
    client.put_events = reply
    return client


def _error(response: dict[str, Any]) -> Callable[..., Any]:
    def reply(**_: Any) -> Any:
        raise ClientError(response, "PutEvents")  # type: ignore[arg-type]

    return reply


@pytest.mark.parametrize(
    ("response", "problem"),
    [
        ({"Error": {"Code": "InternalFailure"}}, "may have landed: InternalFailure"),
        ({"Error": {}, "ResponseMetadata": {}}, "may have landed: Unknown"),
        ({"ResponseMetadata": {"HTTPStatusCode": 500}}, "may have landed: Unknown"),
    ],
    ids=["no-status", "no-status-nor-code", "no-error"],
)
def test_an_error_without_a_status_or_a_code_may_have_landed(response: dict[str, Any], problem: str) -> None:
    announced = EventBridgeActionEvents("default", _answering(_error(response))).put(_events(1))
    assert (announced.sent, announced.failed, announced.unknown, announced.problems) == (0, 0, 1, [problem])


def test_an_answer_without_a_failed_count_is_all_sent() -> None:
    announced = EventBridgeActionEvents("default", _answering(lambda **_: {"Entries": []})).put(_events(3))
    assert (announced.sent, announced.failed, announced.unknown) == (3, 0, 0)


def test_failed_entries_add_up_over_the_answered_batches(bus: tuple[Any, list[Answer]]) -> None:
    client, answers = bus

    def one_failed(request: Any) -> Any:
        entries = [{"ErrorCode": "InternalFailure", "ErrorMessage": "x"}] + [{"EventId": "e"}] * 9
        return answered(request, 200, {"FailedEntryCount": 1, "Entries": entries})

    # The first batch has a failed entry, the second (moto's answer) none: the first's still counts.
    answers.append(one_failed)
    announced = EventBridgeActionEvents("default", client).put(_events(ENTRIES_PER_PUT + 1))
    assert (announced.sent, announced.failed, announced.unknown) == (ENTRIES_PER_PUT, 1, 0)
