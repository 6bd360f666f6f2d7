"""The LiveKit adapter's readings, on the unit that owns them (``adapters.livekit_rooms``): a room's
creation time from whichever field the server set, each failure livekit-api, aiohttp or protobuf
raises as its typed error (and a bug of ours as none), and the secret's shape. The requests
themselves run against a real livekit-server in tests/integration/test_livekit_rooms_deadlines.py."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from types import SimpleNamespace

import aiohttp
import boto3
import pytest
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
from botocore.exceptions import ClientError
from google.protobuf.message import DecodeError
from livekit import api
from moto import mock_aws

from fleet_remediation.adapters.livekit_rooms import (
    LiveKitCredentials,
    LiveKitRoomService,
    _created_at,
    _typed_error,
    read_credentials,
)
from fleet_remediation.core.error_hints import LIVEKIT_UNAUTHORIZED, NOT_ALLOWED, SECRET_NOT_FOUND
from fleet_remediation.core.errors import (
    LiveKitApiError,
    LiveKitBadReplyError,
    LiveKitTimeoutError,
    LiveKitUnavailableError,
    SecretError,
)

URL = "http://livekit.internal:7880"
AT = datetime(2026, 9, 15, 17, 40, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("millis", "seconds", "created"),
    [
        (int(AT.timestamp() * 1000) + 250, int(AT.timestamp()), AT.replace(microsecond=250_000)),
        (1, 0, datetime.fromtimestamp(0.001, UTC)),
        (0, int(AT.timestamp()), AT),
        (0, 1, datetime.fromtimestamp(1, UTC)),
        (0, 0, None),
    ],
    ids=["millis", "one-milli", "seconds-only", "one-second", "neither"],
)
def test_a_rooms_creation_time_is_its_milliseconds_else_its_seconds_else_unknown(
    millis: int, seconds: int, created: datetime | None
) -> None:
    assert _created_at(SimpleNamespace(creation_time_ms=millis, creation_time=seconds)) == created


def test_an_http_error_is_an_api_error_with_its_status_and_twirp_code() -> None:
    error = _typed_error("DeleteRoom", URL, 5.0, api.ServerError("not_found", "room x", status=404), "x")
    assert isinstance(error, LiveKitApiError)
    assert (error.message, error.twirp_code, error.http_status, error.resource) == (
        "LiveKit DeleteRoom failed: HTTP 404 not_found: room x",
        "not_found",
        404,
        "x",
    )


def test_a_refused_key_says_so() -> None:
    error = _typed_error("ListRooms", URL, 5.0, api.ServerError("unauthenticated", "no", status=401), None)
    assert isinstance(error, LiveKitApiError)
    assert error.message == f"LiveKit ListRooms failed: HTTP 401: {LIVEKIT_UNAUTHORIZED}"
    assert (error.twirp_code, error.http_status, error.resource) == ("unauthenticated", 401, None)


@pytest.mark.parametrize(
    ("raised", "typed", "message"),
    [
        (TimeoutError(), LiveKitTimeoutError, f"LiveKit ListRooms at {URL} did not answer within 2.5s"),
        (
            DecodeError("truncated"),
            LiveKitBadReplyError,
            f"LiveKit ListRooms at {URL} answered with a body that is not a ListRooms reply: truncated",
        ),
        (
            aiohttp.ClientConnectionError("refused"),
            LiveKitUnavailableError,
            f"LiveKit ListRooms at {URL} did not answer: ClientConnectionError: refused",
        ),
        (
            ConnectionResetError("reset"),
            LiveKitUnavailableError,
            f"LiveKit ListRooms at {URL} did not answer: ConnectionResetError: reset",
        ),
    ],
    ids=["timeout", "bad-body", "client-error", "os-error"],
)
def test_each_transport_failure_is_its_typed_error(
    raised: Exception, typed: type[Exception], message: str
) -> None:
    error = _typed_error("ListRooms", URL, 2.5, raised, "lesson-1")
    assert type(error) is typed
    assert error is not None
    assert (error.message, error.resource) == (message, "lesson-1")


def test_a_bug_of_ours_is_no_livekit_error() -> None:
    assert _typed_error("ListRooms", URL, 2.5, KeyError("name"), None) is None


@pytest.mark.parametrize(
    ("secret", "problem"),
    [
        ({"api_key": "key"}, "api_secret"),
        ({"api_secret": "secret"}, "api_key"),
        ({}, "api_key, api_secret"),
    ],
    ids=["no-secret", "no-key", "neither"],
)
def test_a_secret_without_the_key_or_the_secret_names_what_is_missing(
    secret: dict[str, str], problem: str
) -> None:
    with mock_aws():
        boto3.client("secretsmanager").create_secret(Name="it/livekit", SecretString=json.dumps(secret))
        with pytest.raises(SecretError) as refused:
            read_credentials("it/livekit")
    assert refused.value.message == (
        f"secret it/livekit must be a JSON object with api_key and api_secret (problem: {problem})"
    )


def test_a_secret_that_is_not_json_is_a_secret_error_that_names_it() -> None:
    with mock_aws():
        boto3.client("secretsmanager").create_secret(Name="it/livekit", SecretString="key:secret")
        with pytest.raises(SecretError) as refused:
            read_credentials("it/livekit")
    assert refused.value.message.startswith("cannot read LiveKit credentials from it/livekit: ")


def test_the_credentials_are_the_secrets_two_fields() -> None:
    with mock_aws():
        value = json.dumps({"api_key": "key", "api_secret": "secret"})
        boto3.client("secretsmanager").create_secret(Name="it/livekit", SecretString=value)
        credentials = read_credentials("it/livekit")
    assert credentials.api_key.get_secret_value() == "key"
    assert credentials.api_secret.get_secret_value() == "secret"


class StubSecrets:
    """A secrets provider: its answer or its error, and the region of its client."""

    def __init__(self, answer: object, region: str | None = "eu-west-1") -> None:
        self.answer = answer
        self.client = SimpleNamespace(meta=SimpleNamespace(region_name=region)) if region else None
        self.asked: list[tuple[str, dict[str, object]]] = []

    def get(self, name: str, **options: object) -> object:
        self.asked.append((name, options))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _unreadable(code: str) -> GetParameterError:
    try:
        try:
            raise ClientError({"Error": {"Code": code, "Message": "no"}}, "GetSecretValue")
        except ClientError as exc:
            raise GetParameterError(str(exc)) from exc
    except GetParameterError as wrapped:
        return wrapped


def test_the_secret_is_read_as_json_and_kept_five_minutes() -> None:
    secrets = StubSecrets({"api_key": "key", "api_secret": "secret"})
    read_credentials("it/livekit", secrets)  # type: ignore[arg-type]
    assert secrets.asked == [("it/livekit", {"transform": "json", "max_age": 300})]


@pytest.mark.parametrize(("region", "said"), [("eu-west-1", "eu-west-1"), (None, "this region")])
def test_a_secret_that_does_not_exist_says_so_with_the_providers_region(
    region: str | None, said: str
) -> None:
    secrets = StubSecrets(_unreadable("ResourceNotFoundException"), region)
    with pytest.raises(SecretError) as refused:
        read_credentials("it/livekit", secrets)  # type: ignore[arg-type]
    assert (
        refused.value.message
        == "cannot read LiveKit credentials from it/livekit: "
        + SECRET_NOT_FOUND.format(resource="it/livekit", region=said)
    )


def test_a_secret_read_refused_for_its_permissions_names_the_call_and_the_secret() -> None:
    secrets = StubSecrets(_unreadable("AccessDeniedException"))
    with pytest.raises(SecretError) as refused:
        read_credentials("it/livekit", secrets)  # type: ignore[arg-type]
    hint = NOT_ALLOWED.format(action="GetSecretValue", resource="it/livekit", code="AccessDeniedException")
    assert refused.value.message == f"cannot read LiveKit credentials from it/livekit: {hint}"


def test_a_secret_read_that_fails_for_another_reason_names_the_errors_kind() -> None:
    secrets = StubSecrets(_unreadable("InternalServiceError"))
    with pytest.raises(SecretError) as refused:
        read_credentials("it/livekit", secrets)  # type: ignore[arg-type]
    assert refused.value.message == "cannot read LiveKit credentials from it/livekit: GetParameterError"


@pytest.mark.parametrize("admin", [False, True], ids=["room-calls", "room-admin-calls"])
def test_a_livekit_cloud_request_is_one_attempt_on_the_clients_own_session(admin: bool) -> None:
    """livekit-api replays a request that failed with a 5xx or no reply against other regions of a
    LiveKit Cloud project: a delete or a warning that may have acted would be sent again."""
    from livekit.api._failover import failover_attempts

    async def made() -> tuple[int, bool]:
        rooms = LiveKitRoomService(
            "https://project.livekit.cloud", LiveKitCredentials(api_key="key", api_secret="s" * 32), 30.0
        )
        try:
            twirp = (rooms._room_admin() if admin else rooms._rooms())._client
            return failover_attempts(twirp._failover, "project.livekit.cloud", timeout=30.0), (
                twirp._session is rooms._session
            )
        finally:
            await rooms.aclose()

    assert asyncio.run(made()) == (1, True)


def test_a_server_that_refuses_the_connection_is_unavailable_naming_its_url() -> None:
    async def listed() -> BaseException | None:
        rooms = LiveKitRoomService(
            "http://127.0.0.1:9", LiveKitCredentials(api_key="k", api_secret="s" * 32), 2.0
        )
        try:
            await rooms.list_rooms()
        except LiveKitUnavailableError as exc:
            return exc
        finally:
            await rooms.aclose()
        return None

    error = asyncio.run(listed())
    assert error is not None
    assert error.message.startswith("LiveKit ListRooms at http://127.0.0.1:9 did not answer: ")


def test_a_client_made_without_a_deadline_waits_five_seconds_a_request() -> None:
    async def made() -> float:
        rooms = LiveKitRoomService("http://127.0.0.1:9", LiveKitCredentials(api_key="k", api_secret="s"))
        await rooms.aclose()
        return rooms.request_timeout_seconds

    assert asyncio.run(made()) == 5.0


class ClientlessSecrets:
    """A secrets provider without a boto3 client of its own."""

    def get(self, name: str, **options: object) -> object:
        raise _unreadable("ResourceNotFoundException")


def test_a_missing_secret_read_by_a_provider_without_a_client_says_this_region() -> None:
    with pytest.raises(SecretError) as refused:
        read_credentials("it/livekit", ClientlessSecrets())  # type: ignore[arg-type]
    assert refused.value.message.endswith(
        SECRET_NOT_FOUND.format(resource="it/livekit", region="this region")
    )
