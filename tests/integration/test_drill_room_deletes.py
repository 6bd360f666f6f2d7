"""``make drill``'s DeleteRoom (devkit.drill_fleet.Callers) against a real livekit-server behind the
fault proxy: each answer says what became of the room, and a lost reply is read again, never sent
twice, so the live remediation goes on."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from livekit import api

from devkit.drill_fleet import Callers
from devkit.fault_proxy import Fault, FaultProxy
from devkit.livekit_local import LocalLiveKit

pytestmark = pytest.mark.livekit


async def _create(server: LocalLiveKit, room: str) -> None:
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as lk:
        await lk.room.create_room(api.CreateRoomRequest(name=room, empty_timeout=300))


async def _exists(server: LocalLiveKit, room: str) -> bool:
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as lk:
        listed = await lk.room.list_rooms(api.ListRoomsRequest(names=[room]))
    return any(r.name == room for r in listed.rooms)


@pytest.fixture
def proxy(livekit_server: LocalLiveKit) -> Iterator[FaultProxy]:
    with FaultProxy("127.0.0.1", livekit_server.port) as running:
        yield running


@pytest.fixture
def callers(livekit_server: LocalLiveKit, proxy: FaultProxy) -> Iterator[Callers]:
    found = Callers(livekit_server, api_url=proxy.url)
    yield found
    found.close()


def _room(livekit_server: LocalLiveKit) -> str:
    room = f"drill-{uuid.uuid4().hex[:8]}"
    asyncio.run(_create(livekit_server, room))
    return room


def test_a_delete_that_is_answered_says_deleted_and_one_already_gone_says_so(
    livekit_server: LocalLiveKit, callers: Callers
) -> None:
    room = _room(livekit_server)
    assert callers.delete_room(room) == "deleted on livekit-server"
    assert not asyncio.run(_exists(livekit_server, room))
    assert callers.delete_room(room) == "already gone"


def test_a_delete_whose_reply_was_lost_is_read_again_and_not_sent_twice(
    livekit_server: LocalLiveKit, callers: Callers, proxy: FaultProxy
) -> None:
    room = _room(livekit_server)
    proxy.inject(Fault.HANG_AFTER_ANSWER, methods={"DeleteRoom"})
    assert callers.delete_room(room) == "no answer (TimeoutError); read again: gone"
    assert proxy.forwarded.count("DeleteRoom") == 1


@pytest.mark.parametrize(
    ("fault", "answer"),
    [
        (Fault.HANG_BEFORE_FORWARD, "no answer (TimeoutError)"),
        (Fault.CUT_BEFORE_FORWARD, "no answer (ClientOSError)"),
    ],
)
def test_a_delete_that_never_reached_the_server_reads_the_room_still_there(
    livekit_server: LocalLiveKit, callers: Callers, proxy: FaultProxy, fault: Fault, answer: str
) -> None:
    room = _room(livekit_server)
    proxy.inject(fault, methods={"DeleteRoom"})
    assert callers.delete_room(room) == f"{answer}; read again: still there, not sent again"
    assert proxy.forwarded.count("DeleteRoom") == 0
    assert asyncio.run(_exists(livekit_server, room))
