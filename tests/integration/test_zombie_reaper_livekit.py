"""The zombie reaper handler end to end: a real livekit-server with real participants, and moto for
SSM (kill switch), Secrets Manager (LiveKit credentials) and SNS (notifications, read via SQS)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from devkit.livekit_clients import (
    BackgroundLoop,
    Participant,
    create_rooms,
    delete_rooms,
    room_names,
    wait_for_participants,
)
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.contract.policies import ReaperPolicy
from fleet_remediation.domain.room_warnings import WARNING_TOPIC
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from zombie_reaper import handler
from zombie_reaper.dependencies import ReaperDependencies

MODE_PARAMETER = "/livekit-fleet-remediation/it/mode"
SECRET_NAME = "it/livekit/api-credentials"


@dataclass
class AwsWorld:
    queue_url: str
    sqs: Any
    ssm: Any

    def set_mode(self, mode: str) -> None:
        self.ssm.put_parameter(Name=MODE_PARAMETER, Value=mode, Type="String", Overwrite=True)

    def notifications(self) -> list[dict[str, Any]]:
        messages = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get(
            "Messages", []
        )
        return [json.loads(m["Body"]) for m in messages]


@pytest.fixture
def aws(livekit_server: LocalLiveKit, monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsWorld]:
    with mock_aws():
        ssm = boto3.client("ssm")
        ssm.put_parameter(Name=MODE_PARAMETER, Value="dry-run", Type="String")
        boto3.client("secretsmanager").create_secret(
            Name=SECRET_NAME,
            SecretString=json.dumps(
                {"api_key": livekit_server.api_key, "api_secret": livekit_server.api_secret}
            ),
        )
        sns = boto3.client("sns")
        sqs = boto3.client("sqs")
        topic_arn = sns.create_topic(Name="it-notifications")["TopicArn"]
        queue_url = sqs.create_queue(QueueName="it-inbox")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn)
        for name, value in {
            "ENVIRONMENT_NAME": "it",
            "MODE_PARAMETER_NAME": MODE_PARAMETER,
            "NOTIFICATION_TOPIC_ARN": topic_arn,
            "RUNBOOK_BASE_URL": "https://runbooks.example.com/repo",
            "LIVEKIT_URL": livekit_server.http_url,
            "LIVEKIT_SECRET_ID": SECRET_NAME,
            "REAPER": json.dumps(
                {
                    "livekit_request_timeout_seconds": 2,
                    # Only this test's rooms: the livekit-server is shared by the whole session.
                    "policy": {"managed_room_pattern": "^lesson-zombie-.+$", "max_age_minutes": 60},
                }
            ),
        }.items():
            monkeypatch.setenv(name, value)
        yield AwsWorld(queue_url=queue_url, sqs=sqs, ssm=ssm)


@pytest.fixture
def clients() -> Iterator[BackgroundLoop]:
    loop = BackgroundLoop()
    yield loop
    loop.close()


def invoke(event: dict[str, Any], later: timedelta = timedelta(0)) -> dict[str, Any]:
    """A cold start each time (a kill-switch change is read at once, not after its cache), on a
    clock ``later`` than now: rooms age without the test waiting."""
    deps = ReaperDependencies.from_environment()
    deps.clock = lambda: datetime.now(UTC) + later
    return dict(handler.lambda_handler(event, LocalLambdaContext(), dependencies=deps))


def test_reaper_against_a_real_livekit_server(
    livekit_server: LocalLiveKit, aws: AwsWorld, clients: BackgroundLoop
) -> None:
    names = ["lesson-zombie-1", "lesson-zombie-2", "lesson-zombie-empty", "ops-console"]
    asyncio.run(create_rooms(livekit_server, names))
    children = [
        Participant(livekit_server, clients, "lesson-zombie-1", "child-1").connect(),
        Participant(livekit_server, clients, "lesson-zombie-2", "child-2").connect(),
    ]
    for child in children:
        asyncio.run(asyncio.wait_for(wait_for_participants(livekit_server, child.room_name, 1), 10))
    # Two minutes on, every room is past a manual max age of one minute.
    aged = timedelta(minutes=2)

    # A dry run (the default of a manual invoke) reads and decides everything and changes nothing.
    dry = invoke({"max_age_seconds": 60}, aged)
    assert dry["mode"] == "dry-run"
    decisions = {c["resource"]: (c["decision"], c["facts"]["participants"]) for c in dry["candidates"]}
    assert decisions["lesson-zombie-1"] == ("would-act", 1)
    assert decisions["lesson-zombie-2"] == ("would-act", 1)
    assert decisions["lesson-zombie-empty"] == ("would-act", 0)
    assert decisions["ops-console"][0] == "skip"
    assert dry["actions"] == []
    assert set(names) <= asyncio.run(room_names(livekit_server))
    assert not any(child.disconnected.is_set() or child.received for child in children)

    # The switch still says dry-run: asking for enforcement changes nothing either.
    capped = invoke({"dry_run": False, "max_age_seconds": 60}, aged)
    assert capped["mode"] == "dry-run"
    assert capped["actions"] == []

    # Enforcing: the empty room goes at once; the children's rooms are warned, not deleted.
    aws.set_mode("enforce")
    first = invoke({"dry_run": False, "max_age_seconds": 60}, aged)
    assert first["mode"] == "enforce"
    assert sorted((a["resource"], a["action"], a["outcome"]) for a in first["actions"]) == [
        ("lesson-zombie-1", "warn-room", "done"),
        ("lesson-zombie-2", "warn-room", "done"),
        ("lesson-zombie-empty", "delete-room", "done"),
    ]
    for child in children:
        assert _wait_until(lambda child=child: bool(child.received)), f"{child.identity} got no warning"
        ((topic, payload),) = child.received
        assert topic == WARNING_TOPIC
        assert json.loads(payload)["type"] == "room-ending"
        assert not child.disconnected.is_set()
    remaining = asyncio.run(room_names(livekit_server))
    assert {"lesson-zombie-1", "lesson-zombie-2", "ops-console"} <= remaining
    assert "lesson-zombie-empty" not in remaining
    (notification,) = aws.notifications()
    assert notification["Subject"].startswith("[it] zombie reaper deleted 1 of 1 over-age room(s)")
    assert "warned 2 of 2 room(s) with participants" in notification["Message"]

    # Within the grace nothing more happens; after it, the rooms go and LiveKit disconnects the children.
    grace = timedelta(minutes=ReaperPolicy().live_room_grace_minutes)
    waiting = invoke({"dry_run": False, "max_age_seconds": 60}, aged + grace - timedelta(minutes=1))
    assert waiting["actions"] == []
    real = invoke({"dry_run": False, "max_age_seconds": 60}, aged + grace)
    assert sorted((a["resource"], a["action"], a["outcome"]) for a in real["actions"]) == [
        ("lesson-zombie-1", "delete-room", "done"),
        ("lesson-zombie-2", "delete-room", "done"),
    ]
    for child in children:
        assert child.disconnected.wait(10), f"{child.identity} was not disconnected"
    remaining = asyncio.run(room_names(livekit_server))
    assert "ops-console" in remaining
    assert not remaining & {"lesson-zombie-1", "lesson-zombie-2"}
    (notification,) = aws.notifications()
    assert notification["Subject"].startswith("[it] zombie reaper deleted 2 of 2 over-age room(s)")
    assert "/runbooks/zombie-reaper.html" in notification["Message"]

    # A second run finds nothing left to do.
    again = invoke({"dry_run": False, "max_age_seconds": 60}, aged + grace)
    assert again["actions"] == []
    assert again["errors"] == []
    assert all(c["decision"] == "skip" for c in again["candidates"])
    assert aws.notifications() == []


def _wait_until(condition: Any, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_a_stopped_livekit_server_is_a_typed_error_and_nothing_else(
    aws: AwsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    stopped = LocalLiveKit().start()
    stopped.stop()
    monkeypatch.setenv("LIVEKIT_URL", stopped.http_url)
    aws.set_mode("enforce")
    report = invoke({"dry_run": False})
    assert report["status"] == "failed"
    assert [e["code"] for e in report["errors"]] == ["LiveKitUnavailable"]
    assert stopped.http_url in report["errors"][0]["message"]
    assert report["candidates"] == []
    assert report["actions"] == []
    (notification,) = aws.notifications()
    assert notification["Subject"].startswith("[it] FAILED: zombie reaper checked for over-age rooms")
    assert notification["MessageAttributes"]["severity"]["Value"] == "critical"


def test_unreadable_credentials_are_a_typed_error(aws: AwsWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIVEKIT_SECRET_ID", "it/does-not-exist")
    report = invoke({})
    assert [e["code"] for e in report["errors"]] == ["SecretError"]
    assert "it/does-not-exist" in report["errors"][0]["message"]


def test_an_unknown_kill_switch_value_fails_safe_to_dry_run(
    livekit_server: LocalLiveKit, aws: AwsWorld
) -> None:
    asyncio.run(create_rooms(livekit_server, ["lesson-zombie-switch"]))
    try:
        _switch_fails_safe(livekit_server, aws)
    finally:
        # The server is the session's: another test must not find this room.
        asyncio.run(delete_rooms(livekit_server, {"lesson-zombie-switch"}))


def _switch_fails_safe(livekit_server: LocalLiveKit, aws: AwsWorld) -> None:
    time.sleep(1.5)  # older than the manual max age below
    aws.set_mode("enabled")
    report = invoke({"dry_run": False, "max_age_seconds": 60}, timedelta(minutes=2))
    assert report["mode"] == "dry-run"
    assert [e["code"] for e in report["errors"]] == ["KillSwitchError"]
    # The room was a candidate (managed and over the max age), so only the fail-safe kept it.
    assert any(
        c["resource"] == "lesson-zombie-switch" for c in report["candidates"] if c["decision"] == "would-act"
    )
    assert "lesson-zombie-switch" in asyncio.run(room_names(livekit_server))
