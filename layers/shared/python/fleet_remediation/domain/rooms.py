"""The rooms port: what the decisions read of a LiveKit room and ask of the room service.

The domain names this Protocol and its record; ``adapters/livekit_rooms.py`` implements it over
livekit-api, and the tests' in-memory fake implements it too, so the decisions never import an adapter.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple, Protocol

# LiveKit answers a DeleteRoom/ListRooms for a room that no longer exists with this Twirp code.
NOT_FOUND = "not_found"


class LiveRoom(NamedTuple):
    """One room as ListRooms saw it. A named tuple: a fleet-wide listing makes one per room, and
    it is CPython's cheapest immutable record (about half the cost of a frozen dataclass)."""

    name: str
    sid: str
    created_at: datetime | None
    num_participants: int
    # The application's room metadata (free text; often JSON), where the reaper records its warning.
    metadata: str = ""


class RoomService(Protocol):
    async def list_rooms(self, names: Sequence[str] | None = None) -> list[LiveRoom]: ...

    async def delete_room(self, name: str) -> None:
        """Delete a room; raises ``LiveKitApiError`` with twirp_code ``not_found`` if it is gone."""
        ...

    async def update_room_metadata(self, name: str, metadata: str) -> None:
        """Replace the room's metadata (every participant is told of the change)."""
        ...

    async def send_data(self, name: str, data: bytes, topic: str) -> None:
        """Send a reliable data message to every participant of the room."""
        ...

    async def aclose(self) -> None: ...
