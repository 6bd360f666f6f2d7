"""DrainAwareLoad in a real livekit-agents worker registered with the real livekit-server.

The ECS task metadata endpoint is ``FakeEcsTaskMetadataEndpoint`` (a local HTTP server serving
``/taskWithTags``), since there is no ECS here. Dispatch, availability and ``/worker`` are real.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
from livekit import api

from devkit.fakes.agent_worker import RunningAgentWorker
from devkit.fakes.ecs_fakes import FakeEcsTaskMetadataEndpoint
from devkit.livekit_local import LocalLiveKit
from livekit_fleet_agent import DRAINING_STATE, STATE_TAG, DrainAwareLoad, SlowInferenceCounter, TaskTagReader

pytestmark = pytest.mark.livekit
# Long enough for livekit-server to offer a job to the only worker several times over.
NO_JOB_WAIT_SECONDS = 4.0


async def _dispatch(server: LocalLiveKit, room: str, agent_name: str) -> None:
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as client:
        await client.room.create_room(api.CreateRoomRequest(name=room))
        await client.agent_dispatch.create_dispatch(
            api.CreateAgentDispatchRequest(room=room, agent_name=agent_name)
        )


@pytest.fixture
def tags() -> dict[str, str]:
    return {"service": "agents"}


@pytest.fixture
def metadata(tags: dict[str, str]) -> Iterator[FakeEcsTaskMetadataEndpoint]:
    endpoint = FakeEcsTaskMetadataEndpoint("arn:aws:ecs:eu-west-1:1:task/c/abc", lambda: dict(tags)).start()
    yield endpoint
    endpoint.stop()


def test_a_marked_worker_takes_no_new_job_and_keeps_the_one_it_has(
    livekit_server: LocalLiveKit, metadata: FakeEcsTaskMetadataEndpoint, tags: dict[str, str]
) -> None:
    agent_name = f"coop-{uuid.uuid4().hex[:6]}"
    reader = TaskTagReader(metadata.url, cache_seconds=0.2)
    load = DrainAwareLoad(max_jobs=4, tag_reader=reader, slow_inference=SlowInferenceCounter())
    worker = RunningAgentWorker(
        livekit_server.http_url,
        livekit_server.ws_url,
        livekit_server.api_key,
        livekit_server.api_secret,
        agent_name,
        load_fnc=load,
    ).start()
    try:
        asyncio.run(_dispatch(livekit_server, f"{agent_name}-before", agent_name))
        assert worker.wait_for(lambda: f"{agent_name}-before" in worker.rooms_joined, 10)
        assert worker.wait_for(lambda: worker.worker_info().get("active_jobs") == 1, 5)

        tags[STATE_TAG] = DRAINING_STATE
        assert worker.wait_for(lambda: worker.worker_info().get("worker_load") == 1.0, 5)
        asyncio.run(_dispatch(livekit_server, f"{agent_name}-marked", agent_name))
        assert not worker.wait_for(lambda: f"{agent_name}-marked" in worker.rooms_joined, NO_JOB_WAIT_SECONDS)
        assert worker.worker_info().get("active_jobs") == 1  # the running lesson continues

        # Unmarked: livekit-server learns it from the next status update (every 2.5 s) and places
        # jobs again; an offer made before that finds no worker, so keep offering new rooms.
        del tags[STATE_TAG]
        offered: list[str] = []

        def takes_a_job_again() -> bool:
            offered.append(f"{agent_name}-after-{len(offered)}")
            asyncio.run(_dispatch(livekit_server, offered[-1], agent_name))
            return worker.wait_for(lambda: any(room in worker.rooms_joined for room in offered), 1.0)

        assert worker.wait_for(takes_a_job_again, 10)
        # The tags were read through the cache, not once per load computation (every 0.5 s and per offer).
        assert 0 < reader.fetches < 200
    finally:
        worker.stop()
