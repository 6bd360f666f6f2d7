"""The LiveKit secret is read as the cost model counts it: not at all until a LiveKit client is
made, and once per five minutes per container however many clients its invocations make (one
secrets provider per container, so its cache serves them). Secrets Manager is moto; the calls are
counted on the provider's own boto3 client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import boto3
import pytest
from aws_lambda_powertools.utilities.parameters import SecretsProvider
from moto import mock_aws

from fleet_remediation.adapters import livekit_rooms
from fleet_remediation.adapters.livekit_rooms import room_service_factory

SECRET_ID = "it/livekit"


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The GetSecretValue calls every provider the adapter builds sends."""
    sent: list[str] = []
    built = livekit_rooms.secrets_provider

    def counted() -> SecretsProvider:
        provider = built()
        provider.client.meta.events.register(
            "before-call.secrets-manager.GetSecretValue", lambda **_: sent.append("GetSecretValue")
        )
        return provider

    with mock_aws():
        boto3.client("secretsmanager").create_secret(
            Name=SECRET_ID, SecretString=json.dumps({"api_key": "key", "api_secret": "secret"})
        )
        monkeypatch.setattr(livekit_rooms, "secrets_provider", counted)
        yield sent


def _connect_and_close(create: object) -> None:
    async def run() -> None:
        rooms = create()  # type: ignore[operator]
        await rooms.aclose()

    asyncio.run(run())


def test_no_livekit_client_no_secret_read(reads: list[str]) -> None:
    room_service_factory("ws://127.0.0.1:7880", SECRET_ID, 1.0)
    assert reads == []


def test_every_client_of_a_container_shares_one_cached_read(reads: list[str]) -> None:
    """A reaper run that deletes makes two clients, and the next invocations of the same container
    make more: one read serves them all while it is fresh."""
    create = room_service_factory("ws://127.0.0.1:7880", SECRET_ID, 1.0)
    for _ in range(4):
        _connect_and_close(create)
    assert reads == ["GetSecretValue"]


def test_each_client_talks_to_the_configured_server_within_the_configured_deadline(reads: list[str]) -> None:
    create = room_service_factory("ws://127.0.0.1:7880", SECRET_ID, 1.5)

    async def made() -> tuple[str, float]:
        rooms = create()
        try:
            return rooms.url, rooms.request_timeout_seconds  # type: ignore[attr-defined]
        finally:
            await rooms.aclose()

    assert asyncio.run(made()) == ("ws://127.0.0.1:7880", 1.5)
