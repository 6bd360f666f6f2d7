"""In-memory stand-ins for LiveKit (unit tests only; integration tests use the real server)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from fleet_remediation.adapters.livekit_rooms import NOT_FOUND, LiveRoom
from fleet_remediation.core.errors import LiveKitApiError, LiveKitUnavailableError


class InMemoryRoomService:
    """Behaves like RoomService: ListRooms filters by name, DeleteRoom of a missing room is not_found."""

    def __init__(self, rooms: Sequence[LiveRoom] = ()) -> None:
        self.rooms = {room.name: room for room in rooms}
        self.calls: list[tuple[str, str | None]] = []
        self.fail_deletes: set[str] = set()
        self.unavailable = False
        self.closed = False

    async def list_rooms(self, names: Sequence[str] | None = None) -> list[LiveRoom]:
        self.calls.append(("ListRooms", ",".join(names) if names else None))
        if self.unavailable:
            raise LiveKitUnavailableError("fake LiveKit is down")
        wanted = set(names or self.rooms)
        return [room for name, room in self.rooms.items() if name in wanted]

    async def delete_room(self, name: str) -> None:
        self.calls.append(("DeleteRoom", name))
        if name in self.fail_deletes:
            raise LiveKitApiError("internal error", twirp_code="internal", resource=name)
        if name not in self.rooms:
            raise LiveKitApiError("room not found", twirp_code=NOT_FOUND, resource=name)
        del self.rooms[name]

    async def aclose(self) -> None:
        self.closed = True


def room(name: str, created_at: datetime | None, sid: str | None = None, participants: int = 1) -> LiveRoom:
    return LiveRoom(name=name, sid=sid or f"RM_{name}", created_at=created_at, num_participants=participants)
