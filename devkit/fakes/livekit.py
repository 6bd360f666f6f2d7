"""In-memory stand-ins for LiveKit (unit tests only; integration tests use the real server)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from fleet_remediation.adapters.livekit_rooms import NOT_FOUND, LiveRoom
from fleet_remediation.core.errors import LiveKitApiError, LiveKitUnavailableError, RemediationError


class InMemoryRoomService:
    """Behaves like RoomService: ListRooms filters by name, DeleteRoom of a missing room is not_found."""

    def __init__(self, rooms: Sequence[LiveRoom] = ()) -> None:
        self.rooms = {room.name: room for room in rooms}
        self.calls: list[tuple[str, str | None]] = []
        self.fail_deletes: set[str] = set()
        # DeleteRoom of these rooms raises the error, after deleting the room when the flag is True
        # (a reply lost after the server acted) or without deleting it (lost before).
        self.delete_errors: dict[str, tuple[RemediationError, bool]] = {}
        # ListRooms with names (the re-check, the re-read) raises this once per entry, in order.
        self.list_errors: list[RemediationError] = []
        self.unavailable = False
        self.closed = False
        # (room, topic, data) of every data message sent.
        self.messages: list[tuple[str, str, bytes]] = []

    async def list_rooms(self, names: Sequence[str] | None = None) -> list[LiveRoom]:
        self.calls.append(("ListRooms", ",".join(names) if names else None))
        if self.unavailable:
            raise LiveKitUnavailableError("fake LiveKit is down")
        if names and self.list_errors:
            raise self.list_errors.pop(0)
        wanted = set(names or self.rooms)
        return [room for name, room in self.rooms.items() if name in wanted]

    async def delete_room(self, name: str) -> None:
        self.calls.append(("DeleteRoom", name))
        if name in self.fail_deletes:
            raise LiveKitApiError("internal error", twirp_code="internal", resource=name)
        if name in self.delete_errors:
            error, acted = self.delete_errors[name]
            if acted:
                self.rooms.pop(name, None)
            raise error
        if name not in self.rooms:
            raise LiveKitApiError("room not found", twirp_code=NOT_FOUND, resource=name, http_status=404)
        del self.rooms[name]

    async def update_room_metadata(self, name: str, metadata: str) -> None:
        self.calls.append(("UpdateRoomMetadata", name))
        if name not in self.rooms:
            raise LiveKitApiError("room not found", twirp_code=NOT_FOUND, resource=name, http_status=404)
        self.rooms[name] = self.rooms[name]._replace(metadata=metadata)

    async def send_data(self, name: str, data: bytes, topic: str) -> None:
        self.calls.append(("SendData", name))
        if name not in self.rooms:
            raise LiveKitApiError("room not found", twirp_code=NOT_FOUND, resource=name, http_status=404)
        self.messages.append((name, topic, data))

    async def aclose(self) -> None:
        self.closed = True


def room(
    name: str, created_at: datetime | None, sid: str | None = None, participants: int = 0, metadata: str = ""
) -> LiveRoom:
    return LiveRoom(
        name=name,
        sid=sid or f"RM_{name}",
        created_at=created_at,
        num_participants=participants,
        metadata=metadata,
    )
