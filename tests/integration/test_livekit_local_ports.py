"""``devkit.livekit_local``: a port chosen free and taken before livekit-server bound it is the shared
machine's race, and the server starts again on fresh ports; a port the caller chose is never
replaced, and its clash is said with the server's own words."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from devkit import livekit_local
from devkit.livekit_local import LocalLiveKit, free_port

pytestmark = pytest.mark.livekit


@pytest.fixture
def taken() -> Iterator[int]:
    """A port another process's socket holds (listening, as a server would)."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def test_a_free_port_taken_before_the_server_bound_it_is_chosen_again(
    taken: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    ports = iter([taken])
    monkeypatch.setattr(livekit_local, "free_port", lambda: next(ports, None) or free_port())
    with LocalLiveKit() as server:
        assert server.port != taken
        with socket.create_connection(("127.0.0.1", server.port), timeout=2):
            pass


def test_a_port_the_caller_chose_is_never_replaced(taken: int) -> None:
    with pytest.raises(RuntimeError, match="address already in use"):
        LocalLiveKit(port=taken).start()
