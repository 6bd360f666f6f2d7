"""LiveKit RoomService adapter: explicit timeouts, typed errors, credentials that are never logged."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import aiohttp
from aws_lambda_powertools.utilities.parameters import SecretsProvider
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError, TransformParameterError
from livekit import api as lkapi
from pydantic import BaseModel, SecretStr, ValidationError

from fleet_remediation.core.errors import LiveKitApiError, LiveKitUnavailableError, SecretError

# LiveKit answers a DeleteRoom/ListRooms for a room that no longer exists with this Twirp code.
NOT_FOUND = "not_found"
SECRET_MAX_AGE_SECONDS = 300


@dataclass(frozen=True)
class LiveRoom:
    name: str
    sid: str
    created_at: datetime | None
    num_participants: int


class RoomService(Protocol):
    async def list_rooms(self, names: Sequence[str] | None = None) -> list[LiveRoom]: ...

    async def delete_room(self, name: str) -> None:
        """Delete a room; raises ``LiveKitApiError`` with twirp_code ``not_found`` if it is gone."""
        ...

    async def aclose(self) -> None: ...


class LiveKitCredentials(BaseModel):
    api_key: SecretStr
    api_secret: SecretStr


def read_credentials(secret_id: str, provider: SecretsProvider | None = None) -> LiveKitCredentials:
    """Read ``{"api_key": ..., "api_secret": ...}`` from Secrets Manager (cached five minutes)."""
    secrets = provider or SecretsProvider()
    try:
        value = secrets.get(secret_id, transform="json", max_age=SECRET_MAX_AGE_SECONDS)
    except (GetParameterError, TransformParameterError) as exc:
        # The provider's message names the secret but never its value.
        raise SecretError(f"cannot read LiveKit credentials from {secret_id}: {type(exc).__name__}") from exc
    try:
        return LiveKitCredentials.model_validate(value)
    except ValidationError as exc:
        fields = ", ".join(".".join(map(str, e["loc"])) for e in exc.errors())
        raise SecretError(
            f"secret {secret_id} must be a JSON object with api_key and api_secret (problem: {fields})"
        ) from None


def _created_at(room: Any) -> datetime | None:
    # creation_time_ms is newer and more precise; fall back to seconds; 0 means "not set".
    millis = int(getattr(room, "creation_time_ms", 0) or 0)
    if millis > 0:
        return datetime.fromtimestamp(millis / 1000, tz=UTC)
    seconds = int(room.creation_time or 0)
    return datetime.fromtimestamp(seconds, tz=UTC) if seconds > 0 else None


class LiveKitRoomService:
    """RoomService over livekit-api. Every request has its own timeout and no region failover
    (a self-hosted server has one origin; failover would multiply the time a dead server costs)."""

    def __init__(
        self, url: str, credentials: LiveKitCredentials, request_timeout_seconds: float = 5.0
    ) -> None:
        self.url = url
        self.calls = 0
        self._timeout = aiohttp.ClientTimeout(total=request_timeout_seconds)
        self._api = lkapi.LiveKitAPI(
            url,
            credentials.api_key.get_secret_value(),
            credentials.api_secret.get_secret_value(),
            timeout=self._timeout,
            failover=False,
        )

    async def list_rooms(self, names: Sequence[str] | None = None) -> list[LiveRoom]:
        request = lkapi.ListRoomsRequest(names=list(names or []))
        response = await self._call("ListRooms", self._api.room.list_rooms(request), resource=None)
        return [
            LiveRoom(
                name=room.name,
                sid=room.sid,
                created_at=_created_at(room),
                num_participants=int(room.num_participants),
            )
            for room in response.rooms
        ]

    async def delete_room(self, name: str) -> None:
        await self._call("DeleteRoom", self._api.room.delete_room(lkapi.DeleteRoomRequest(room=name)), name)

    async def aclose(self) -> None:
        await self._api.aclose()

    async def _call(self, method: str, request: Any, resource: str | None) -> Any:
        self.calls += 1
        try:
            return await request
        except lkapi.ServerError as exc:
            raise LiveKitApiError(
                f"LiveKit {method} failed: {exc.code}: {exc.message}", twirp_code=exc.code, resource=resource
            ) from exc
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise LiveKitUnavailableError(
                f"LiveKit {method} at {self.url} did not answer: {type(exc).__name__}: {exc}",
                resource=resource,
            ) from exc


def room_service_factory(
    url: str, secret_id: str, request_timeout_seconds: float
) -> Callable[[], RoomService]:
    """What the functions inject: reads the credentials, then connects, each time it is called
    (inside the event loop, which the client's HTTP session binds to)."""

    def create() -> RoomService:
        return LiveKitRoomService(url, read_credentials(secret_id), request_timeout_seconds)

    return create
