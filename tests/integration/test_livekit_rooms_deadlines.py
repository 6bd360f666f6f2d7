"""The LiveKit adapter against a real livekit-server behind the fault proxy (devkit.fault_proxy):
every request ends within its deadline, and every failure is a typed error that says what is known
about the server's side (read back from the real server after each fault)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from livekit import api

from devkit.fault_proxy import Fault, FaultProxy
from devkit.livekit_clients import (
    BackgroundLoop,
    Participant,
    create_rooms,
    room_names,
    wait_for_participants,
)
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.adapters.livekit_rooms import LiveKitCredentials, LiveKitRoomService
from fleet_remediation.core.errors import (
    LiveKitApiError,
    LiveKitBadReplyError,
    LiveKitTimeoutError,
    LiveKitUnavailableError,
)

TIMEOUT = 0.5
# What a request may take beyond its deadline: cancelling the request and closing its connection.
SLACK = 0.5

pytestmark = [pytest.mark.livekit, pytest.mark.timeout(15)]


@pytest.fixture
def proxy(livekit_server: LocalLiveKit) -> Iterator[FaultProxy]:
    with FaultProxy("127.0.0.1", livekit_server.port) as running:
        yield running


def client(url: str, server: LocalLiveKit, **kwargs: Any) -> LiveKitRoomService:
    credentials = LiveKitCredentials(api_key=server.api_key, api_secret=server.api_secret)
    return LiveKitRoomService(url, credentials, TIMEOUT, **kwargs)


def a_room(server: LocalLiveKit) -> str:
    # Outside the "lesson-" pattern other tests on the shared server reap, and removed afterwards.
    name = f"adapter-fault-{uuid.uuid4().hex[:8]}"
    asyncio.run(create_rooms(server, [name]))
    return name


@pytest.fixture(autouse=True)
def _remove_rooms(livekit_server: LocalLiveKit) -> Iterator[None]:
    yield

    async def remove() -> None:
        async with api.LiveKitAPI(
            livekit_server.http_url, livekit_server.api_key, livekit_server.api_secret
        ) as lk:
            for room in (await lk.room.list_rooms(api.ListRoomsRequest())).rooms:
                if room.name.startswith("adapter-fault-"):
                    await lk.room.delete_room(api.DeleteRoomRequest(room=room.name))

    asyncio.run(remove())


async def timed(call: Any) -> tuple[float, BaseException | None]:
    started = time.monotonic()
    try:
        await call
    except Exception as exc:
        return time.monotonic() - started, exc
    return time.monotonic() - started, None


def run(server: LocalLiveKit, url: str, method: str, *args: Any) -> tuple[float, BaseException | None]:
    async def go() -> tuple[float, BaseException | None]:
        rooms = client(url, server)
        try:
            return await timed(getattr(rooms, method)(*args))
        finally:
            await rooms.aclose()

    return asyncio.run(go())


def test_livekit_api_alone_waits_past_its_session_timeout_on_a_silent_server(
    livekit_server: LocalLiveKit, proxy: FaultProxy
) -> None:
    """Why the adapter sets its own deadline: livekit-api 1.2.2 passes timeout=None per request,
    which aiohttp reads as "no limit", so the session's 0.5 s timeout never fires."""
    proxy.inject(Fault.HANG_BEFORE_FORWARD)

    async def go() -> bool:
        import aiohttp

        async with api.LiveKitAPI(
            proxy.url,
            livekit_server.api_key,
            livekit_server.api_secret,
            timeout=aiohttp.ClientTimeout(total=TIMEOUT),
            failover=False,
        ) as lk:
            try:
                await asyncio.wait_for(lk.room.list_rooms(api.ListRoomsRequest()), 4 * TIMEOUT)
            except TimeoutError:
                return True  # still waiting when our outer bound cancelled it
            return False

    assert asyncio.run(go()), "livekit-api now honours its session timeout: the premise changed"


@pytest.mark.parametrize("method", ["ListRooms", "DeleteRoom"])
def test_a_server_that_never_answers_is_a_timeout_within_the_deadline(
    livekit_server: LocalLiveKit, proxy: FaultProxy, method: str
) -> None:
    name = a_room(livekit_server)
    proxy.inject(Fault.HANG_BEFORE_FORWARD, methods={method})
    call = ("list_rooms", [name]) if method == "ListRooms" else ("delete_room", name)
    elapsed, error = run(livekit_server, proxy.url, *call)
    assert isinstance(error, LiveKitTimeoutError)
    assert error.code == "LiveKitTimeout"
    assert f"{TIMEOUT:g}s" in error.message
    assert TIMEOUT <= elapsed < TIMEOUT + SLACK
    assert method not in proxy.forwarded
    assert name in asyncio.run(room_names(livekit_server))


def test_a_delete_whose_reply_is_lost_times_out_and_the_room_is_gone(
    livekit_server: LocalLiveKit, proxy: FaultProxy
) -> None:
    name = a_room(livekit_server)
    proxy.inject(Fault.HANG_AFTER_ANSWER, methods={"DeleteRoom"})
    elapsed, error = run(livekit_server, proxy.url, "delete_room", name)
    assert isinstance(error, LiveKitTimeoutError)
    assert error.resource == name
    assert elapsed < TIMEOUT + SLACK
    assert name not in asyncio.run(room_names(livekit_server))  # the outcome the client could not see


def test_a_slow_network_is_not_an_error(livekit_server: LocalLiveKit, proxy: FaultProxy) -> None:
    name = a_room(livekit_server)
    proxy.inject(Fault.DELAY, delay_ms=100)

    async def go() -> tuple[float, list[str]]:
        rooms = client(proxy.url, livekit_server)
        try:
            await rooms.list_rooms([name])  # a new connection: handshake + both legs
            started = time.monotonic()
            listed = await rooms.list_rooms([name])  # the kept-alive connection: both legs
            return time.monotonic() - started, [room.name for room in listed]
        finally:
            await rooms.aclose()

    elapsed, listed = asyncio.run(go())
    assert listed == [name]
    assert 0.2 <= elapsed < TIMEOUT


@pytest.mark.parametrize(
    ("fault", "server_acted"), [(Fault.CUT_BEFORE_FORWARD, False), (Fault.CUT_AFTER_ANSWER, True)]
)
def test_a_reset_connection_is_unavailable(
    livekit_server: LocalLiveKit, proxy: FaultProxy, fault: Fault, server_acted: bool
) -> None:
    name = a_room(livekit_server)
    proxy.inject(fault, methods={"DeleteRoom"})
    elapsed, error = run(livekit_server, proxy.url, "delete_room", name)
    assert type(error) is LiveKitUnavailableError
    assert error.code == "LiveKitUnavailable"
    assert elapsed < TIMEOUT
    assert (name not in asyncio.run(room_names(livekit_server))) is server_acted


@pytest.mark.parametrize("method", ["ListRooms", "DeleteRoom"])
def test_a_corrupt_200_reply_is_a_bad_reply(
    livekit_server: LocalLiveKit, proxy: FaultProxy, method: str
) -> None:
    name = a_room(livekit_server)
    proxy.inject(Fault.CORRUPT_BODY, methods={method})
    call = ("list_rooms", [name]) if method == "ListRooms" else ("delete_room", name)
    elapsed, error = run(livekit_server, proxy.url, *call)
    assert isinstance(error, LiveKitBadReplyError)
    assert error.code == "LiveKitBadReply"
    assert method in error.message
    assert elapsed < TIMEOUT
    assert (name in asyncio.run(room_names(livekit_server))) is (method == "ListRooms")


def test_a_5xx_after_the_server_acted_is_an_api_error_with_its_status(
    livekit_server: LocalLiveKit, proxy: FaultProxy
) -> None:
    name = a_room(livekit_server)
    proxy.inject(Fault.SERVER_ERROR_AFTER_FORWARD, methods={"DeleteRoom"}, status=502)
    _, error = run(livekit_server, proxy.url, "delete_room", name)
    assert isinstance(error, LiveKitApiError)
    assert error.http_status == 502
    assert "HTTP 502" in error.message
    assert name not in asyncio.run(room_names(livekit_server))


def test_a_missing_room_is_an_api_error_with_twirp_not_found(livekit_server: LocalLiveKit) -> None:
    _, error = run(livekit_server, livekit_server.http_url, "delete_room", "lesson-never-existed")
    assert isinstance(error, LiveKitApiError)
    assert (error.twirp_code, error.http_status) == ("not_found", 404)


def test_one_token_signs_every_call_until_it_is_due_for_renewal(livekit_server: LocalLiveKit) -> None:
    names = [a_room(livekit_server) for _ in range(3)]

    async def go() -> tuple[int, int, int]:
        # A 61 s token is renewed 60 s before it expires: after one second.
        rooms = client(livekit_server.http_url, livekit_server, token_ttl=timedelta(seconds=61))
        try:
            await rooms.list_rooms(names)
            await rooms.delete_room(names[0])
            await rooms.list_rooms(names)
            signed_early = rooms.tokens_signed
            await asyncio.sleep(1.1)
            await rooms.delete_room(names[1])
            listed = await rooms.list_rooms(names)
            return signed_early, rooms.tokens_signed, len(listed)
        finally:
            await rooms.aclose()

    assert asyncio.run(go()) == (1, 2, 1)


def test_room_admin_calls_reach_the_one_room_with_its_own_grant(livekit_server: LocalLiveKit) -> None:
    name = a_room(livekit_server)

    async def go() -> tuple[list[str], BaseException | None, BaseException | None, int]:
        rooms = client(livekit_server.http_url, livekit_server)
        try:
            await rooms.update_room_metadata(name, '{"warned": true}')
            await rooms.send_data(name, b"closing soon", "lkfr-warning")
            listed = [room.metadata for room in await rooms.list_rooms([name])]
            _, metadata_error = await timed(rooms.update_room_metadata("adapter-fault-missing", "{}"))
            _, data_error = await timed(rooms.send_data("adapter-fault-missing", b"x", "lkfr-warning"))
            return listed, metadata_error, data_error, rooms.calls
        finally:
            await rooms.aclose()

    listed, metadata_error, data_error, calls = asyncio.run(go())
    assert listed == ['{"warned": true}']
    assert calls == 5
    assert isinstance(metadata_error, LiveKitApiError)
    assert metadata_error.twirp_code == "not_found"
    # The server holds a data packet for a room that is not there until the deadline.
    for error in (metadata_error, data_error):
        assert isinstance(error, LiveKitApiError | LiveKitTimeoutError), error
        assert error.resource == "adapter-fault-missing"


def test_a_listing_by_name_lists_only_those_rooms(livekit_server: LocalLiveKit) -> None:
    wanted, other = a_room(livekit_server), a_room(livekit_server)

    async def go() -> tuple[list[str], list[str]]:
        rooms = client(livekit_server.http_url, livekit_server)
        try:
            named = [room.name for room in await rooms.list_rooms([wanted])]
            every = [room.name for room in await rooms.list_rooms()]
            return named, every
        finally:
            await rooms.aclose()

    named, every = asyncio.run(go())
    assert named == [wanted]
    assert {wanted, other} <= set(every)


@pytest.mark.parametrize(
    ("method", "args", "call"),
    [
        ("list_rooms", (), "ListRooms"),
        ("delete_room", ("adapter-fault-x",), "DeleteRoom"),
        ("update_room_metadata", ("adapter-fault-x", "{}"), "UpdateRoomMetadata"),
        ("send_data", ("adapter-fault-x", b"x", "lkfr-warning"), "SendData"),
    ],
)
def test_a_refused_key_names_the_livekit_call_it_refused(
    livekit_server: LocalLiveKit, method: str, args: tuple[Any, ...], call: str
) -> None:
    credentials = LiveKitCredentials(api_key=livekit_server.api_key, api_secret="not-the-secret")

    async def go() -> BaseException | None:
        rooms = LiveKitRoomService(livekit_server.http_url, credentials, TIMEOUT)
        try:
            return (await timed(getattr(rooms, method)(*args)))[1]
        finally:
            await rooms.aclose()

    error = asyncio.run(go())
    assert isinstance(error, LiveKitApiError)
    assert error.message.startswith(f"LiveKit {call} failed: HTTP 401")


def test_a_data_message_reaches_a_participant_with_its_topic_and_payload(
    livekit_server: LocalLiveKit,
) -> None:
    name = a_room(livekit_server)
    loop = BackgroundLoop()
    child = Participant(livekit_server, loop, name, "child").connect()
    try:
        asyncio.run(asyncio.wait_for(wait_for_participants(livekit_server, name, 1), 10))

        async def send() -> None:
            rooms = client(livekit_server.http_url, livekit_server)
            try:
                await rooms.send_data(name, b"closing in 5 minutes", "lkfr-warning")
            finally:
                await rooms.aclose()

        asyncio.run(send())
        deadline = time.monotonic() + 5
        while not child.received and time.monotonic() < deadline:
            time.sleep(0.05)
        assert child.received == [("lkfr-warning", b"closing in 5 minutes")]
    finally:
        child.close()
        loop.close()
