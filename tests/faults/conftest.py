"""Fixtures of the fault suite: the fault recorder, a moto server on loopback for AWS endpoints
to forward to, and the real livekit-server (from tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto.server import ThreadedMotoServer

from tests.faults.table import FaultRecorder, recorder_for


@pytest.fixture
def fault(request: pytest.FixtureRequest) -> FaultRecorder:
    return recorder_for(request.node.nodeid)


@pytest.fixture(scope="module")
def moto_server() -> Iterator[str]:
    """moto's HTTP server on a free loopback port (its state is this process's moto backends)."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()
