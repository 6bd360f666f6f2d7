"""LiveKit RoomService adapter: a deadline on every request, typed errors, one signed token per
client, credentials that are never logged.

livekit-api and aiohttp are imported when a client is created, not with this module: a handler
whose invocation never reaches LiveKit (kill switch off, a bad event) does not pay for them on a
cold start.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, SecretStr, ValidationError

from fleet_remediation.adapters.aws_clients import secrets_provider
from fleet_remediation.core.error_hints import livekit_status_hint, secret_hint
from fleet_remediation.core.errors import (
    LiveKitApiError,
    LiveKitBadReplyError,
    LiveKitTimeoutError,
    LiveKitUnavailableError,
    RemediationError,
    SecretError,
)

# The port's types are the domain's; adapters, functions and tests may name them from here too.
from fleet_remediation.domain.rooms import NOT_FOUND as NOT_FOUND
from fleet_remediation.domain.rooms import LiveRoom as LiveRoom
from fleet_remediation.domain.rooms import RoomService as RoomService

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.parameters import SecretsProvider
    from livekit import api as lkapi
    from livekit.api.room_service import RoomService as LiveKitRooms

SECRET_MAX_AGE_SECONDS = 300
# One token signs every call of a client; it is signed again this long before it expires. A client
# lives for one invocation (at most Lambda's 15 minutes), so it is signed about once per run.
TOKEN_TTL = timedelta(minutes=10)
TOKEN_RENEW_MARGIN_SECONDS = 60.0


class LiveKitCredentials(BaseModel):
    api_key: SecretStr
    api_secret: SecretStr


def read_credentials(secret_id: str, provider: SecretsProvider | None = None) -> LiveKitCredentials:
    """Read ``{"api_key": ..., "api_secret": ...}`` from Secrets Manager (cached five minutes)."""
    from aws_lambda_powertools.utilities.parameters.exceptions import (
        GetParameterError,
        TransformParameterError,
    )

    secrets = provider or secrets_provider()
    try:
        value = secrets.get(secret_id, transform="json", max_age=SECRET_MAX_AGE_SECONDS)
    except (GetParameterError, TransformParameterError) as exc:
        # The provider's message names the secret but never its value.
        region = getattr(getattr(secrets, "client", None), "meta", None)
        hint = secret_hint(exc, secret_id=secret_id, region=getattr(region, "region_name", None))
        raise SecretError(
            f"cannot read LiveKit credentials from {secret_id}: {hint or type(exc).__name__}"
        ) from exc
    try:
        return LiveKitCredentials.model_validate(value)
    except ValidationError as exc:
        fields = ", ".join(".".join(map(str, e["loc"])) for e in exc.errors())
        raise SecretError(
            f"secret {secret_id} must be a JSON object with api_key and api_secret (problem: {fields})"
        ) from None


# A listing makes one per room of the fleet: built as the plain tuple it is (the named tuple's own
# constructor is a Python function, about 10 % of the listing's CPU at 100,000 rooms).
_new_room = partial(tuple.__new__, LiveRoom)


def _created_at(room: Any) -> datetime | None:
    # creation_time_ms is newer and more precise; fall back to seconds; 0 means "not set".
    millis = room.creation_time_ms
    if millis > 0:
        return datetime.fromtimestamp(millis / 1000, UTC)
    seconds = room.creation_time
    return datetime.fromtimestamp(seconds, UTC) if seconds > 0 else None


class LiveKitRoomService:
    """RoomService over livekit-api.

    Deadlines: livekit-api 1.2.2 passes ``timeout=None`` on every request, which aiohttp reads as
    "no limit" (the session's timeout is never used), so each request runs inside its own
    ``asyncio.timeout``; what it bounds is the whole request: connect, send, wait, read, decode.
    No region failover (a self-hosted server has one origin; failover would multiply the time a
    dead server costs).

    Signing: livekit-api signs a fresh JWT for every call; this client signs one token with the
    grants the reaper needs (list, create/delete) and reuses it until shortly before it expires.
    """

    def __init__(
        self,
        url: str,
        credentials: LiveKitCredentials,
        request_timeout_seconds: float = 5.0,
        *,
        token_ttl: timedelta = TOKEN_TTL,
    ) -> None:
        import aiohttp

        self.url = url
        self.calls = 0
        self.tokens_signed = 0
        self.request_timeout_seconds = request_timeout_seconds
        self._credentials = credentials
        self._token_ttl = token_ttl
        # Our own session, so the token can be renewed without a new connection pool; its timeout
        # is a second guard for any request that does pass the session default through.
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=request_timeout_seconds))
        self._api: lkapi.LiveKitAPI | None = None
        self._admin_api: lkapi.LiveKitAPI | None = None
        self._renew_at = 0.0

    async def list_rooms(self, names: Sequence[str] | None = None) -> list[LiveRoom]:
        from livekit import api as lkapi

        request = lkapi.ListRoomsRequest(names=list(names or []))
        response = await self._call("ListRooms", lambda rooms: rooms.list_rooms(request), resource=None)
        return [
            _new_room((room.name, room.sid, _created_at(room), room.num_participants, room.metadata))
            for room in response.rooms
        ]

    async def delete_room(self, name: str) -> None:
        from livekit import api as lkapi

        request = lkapi.DeleteRoomRequest(room=name)
        await self._call("DeleteRoom", lambda rooms: rooms.delete_room(request), resource=name)

    async def update_room_metadata(self, name: str, metadata: str) -> None:
        from livekit import api as lkapi

        request = lkapi.UpdateRoomMetadataRequest(room=name, metadata=metadata)
        await self._call(
            "UpdateRoomMetadata", lambda rooms: rooms.update_room_metadata(request), resource=name, admin=True
        )

    async def send_data(self, name: str, data: bytes, topic: str) -> None:
        from livekit import api as lkapi

        request = lkapi.SendDataRequest(
            room=name, data=data, topic=topic, kind=lkapi.DataPacket.Kind.RELIABLE
        )
        await self._call("SendData", lambda rooms: rooms.send_data(request), resource=name, admin=True)

    async def aclose(self) -> None:
        await self._session.close()

    def _room_admin(self) -> LiveKitRooms:
        """Room-admin calls need a grant for the one room they touch: livekit-api signs each of
        them with the key and secret (same session, same deadline)."""
        from livekit import api as lkapi

        if self._admin_api is None:
            self._admin_api = lkapi.LiveKitAPI(
                self.url,
                self._credentials.api_key.get_secret_value(),
                self._credentials.api_secret.get_secret_value(),
                session=self._session,
                failover=False,
            )
        return self._admin_api.room

    def _rooms(self) -> LiveKitRooms:
        from livekit import api as lkapi

        if self._api is None or time.monotonic() >= self._renew_at:
            token = (
                lkapi.AccessToken(
                    self._credentials.api_key.get_secret_value(),
                    self._credentials.api_secret.get_secret_value(),
                )
                .with_grants(lkapi.VideoGrants(room_list=True, room_create=True))
                .with_ttl(self._token_ttl)
                .to_jwt()
            )
            self.tokens_signed += 1
            # A pre-signed token is livekit-api's documented token mode; the session stays ours.
            self._api = lkapi.LiveKitAPI.with_token(token, self.url, session=self._session, failover=False)
            self._renew_at = time.monotonic() + self._token_ttl.total_seconds() - TOKEN_RENEW_MARGIN_SECONDS
        return self._api.room

    async def _call(
        self, method: str, send: Callable[[LiveKitRooms], Any], resource: str | None, *, admin: bool = False
    ) -> Any:
        self.calls += 1
        try:
            async with asyncio.timeout(self.request_timeout_seconds):
                return await send(self._room_admin() if admin else self._rooms())
        except Exception as exc:
            error = _typed_error(method, self.url, self.request_timeout_seconds, exc, resource)
            if error is None:
                raise
            raise error from exc


def _typed_error(
    method: str, url: str, timeout_seconds: float, exc: Exception, resource: str | None
) -> RemediationError | None:
    """The typed error for what livekit-api, aiohttp or protobuf raised; None for anything else
    (a bug of ours, which the handler reports as InternalError)."""
    import aiohttp
    from google.protobuf.message import DecodeError
    from livekit import api as lkapi

    if isinstance(exc, lkapi.ServerError):
        hint = livekit_status_hint(exc.status)
        return LiveKitApiError(
            f"LiveKit {method} failed: HTTP {exc.status}: {hint}"
            if hint
            else f"LiveKit {method} failed: HTTP {exc.status} {exc.code}: {exc.message}",
            twirp_code=exc.code,
            resource=resource,
            http_status=exc.status,
        )
    if isinstance(exc, TimeoutError):
        return LiveKitTimeoutError(
            f"LiveKit {method} at {url} did not answer within {timeout_seconds:g}s", resource=resource
        )
    if isinstance(exc, DecodeError):
        return LiveKitBadReplyError(
            f"LiveKit {method} at {url} answered with a body that is not a {method} reply: {exc}",
            resource=resource,
        )
    if isinstance(exc, (aiohttp.ClientError, OSError)):
        return LiveKitUnavailableError(
            f"LiveKit {method} at {url} did not answer: {type(exc).__name__}: {exc}", resource=resource
        )
    return None


def room_service_factory(
    url: str, secret_id: str, request_timeout_seconds: float
) -> Callable[[], RoomService]:
    """What the functions inject (once per container): reads the credentials, then connects, each
    time it is called (inside the event loop, which the client's HTTP session binds to). One secrets
    provider, built on the first call, serves every call of the container, so its five-minute cache
    spares the reads; an invocation that makes no LiveKit call reads no secret."""
    providers: list[SecretsProvider] = []

    def create() -> RoomService:
        if not providers:
            providers.append(secrets_provider())
        return LiveKitRoomService(url, read_credentials(secret_id, providers[0]), request_timeout_seconds)

    return create
