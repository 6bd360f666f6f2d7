"""Real LiveKit participants (the `livekit` rtc SDK) on their own event loop thread, so synchronous
Lambda handlers (which call asyncio.run) can run beside them in the test thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from livekit import api, rtc

from devkit.livekit_local import LocalLiveKit

T = TypeVar("T")


class BackgroundLoop:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 20.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)


class Participant:
    """A child's browser tab, as far as LiveKit can tell: a real client connected to a room."""

    def __init__(self, server: LocalLiveKit, loop: BackgroundLoop, room_name: str, identity: str) -> None:
        self.server = server
        self.loop = loop
        self.room_name = room_name
        self.identity = identity
        self.room: rtc.Room | None = None
        self.disconnected = threading.Event()
        # (topic, payload) of every data message received, e.g. the reaper's warning.
        self.received: list[tuple[str, bytes]] = []

    def connect(self) -> Participant:
        token = (
            api.AccessToken(self.server.api_key, self.server.api_secret)
            .with_identity(self.identity)
            .with_grants(api.VideoGrants(room_join=True, room=self.room_name))
            .to_jwt()
        )

        async def _connect() -> None:
            self.room = rtc.Room()

            @self.room.on("disconnected")
            def _on_disconnected(reason: Any) -> None:
                self.disconnected.set()

            @self.room.on("data_received")
            def _on_data(packet: rtc.DataPacket) -> None:
                self.received.append((packet.topic or "", bytes(packet.data)))

            await self.room.connect(self.server.ws_url, token)

        self.loop.run(_connect())
        return self

    def close(self) -> None:
        if self.room is not None and not self.disconnected.is_set():
            self.loop.run(self.room.disconnect())


async def create_rooms(server: LocalLiveKit, names: list[str]) -> list[api.Room]:
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as lk:
        return [
            await lk.room.create_room(api.CreateRoomRequest(name=name, empty_timeout=3600)) for name in names
        ]


async def delete_rooms(server: LocalLiveKit, names: set[str]) -> None:
    """Remove rooms a test created from the session's shared server (a room already gone is fine)."""
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as lk:
        for room in (await lk.room.list_rooms(api.ListRoomsRequest())).rooms:
            if room.name in names:
                await lk.room.delete_room(api.DeleteRoomRequest(room=room.name))


async def room_names(server: LocalLiveKit) -> set[str]:
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as lk:
        return {room.name for room in (await lk.room.list_rooms(api.ListRoomsRequest())).rooms}


async def wait_for_participants(server: LocalLiveKit, room_name: str, count: int) -> None:
    """Poll until LiveKit counts ``count`` participants in the room (callers bound it with a timeout)."""
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as lk:
        while True:
            rooms = (await lk.room.list_rooms(api.ListRoomsRequest(names=[room_name]))).rooms
            if rooms and rooms[0].num_participants >= count:
                return
            await asyncio.sleep(0.1)
