"""The agent-side load function: drain marker, slow-inference pressure, CPU; the task-tag reader
against a loopback stand-in for the ECS task metadata endpoint."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import pytest

from devkit.fakes.ecs_fakes import FakeEcsTaskMetadataEndpoint
from livekit_fleet_agent import DRAINING_STATE, STATE_TAG, DrainAwareLoad, SlowInferenceCounter, TaskTagReader
from worker_drainer.decide import task_tags as tags


@dataclass
class Marker:
    marked: bool = False

    def draining(self) -> bool:
        return self.marked


@dataclass
class Server:
    active_jobs: list[Any] = field(default_factory=list)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_agent_reads_the_tag_the_drainer_writes() -> None:
    assert STATE_TAG == tags.STATE_TAG
    assert tags.State.DRAINING.value == DRAINING_STATE


def test_load_is_the_job_share_until_the_task_is_marked_then_full() -> None:
    marker = Marker()
    load = DrainAwareLoad(max_jobs=2, tag_reader=marker, slow_inference=SlowInferenceCounter())
    assert load(Server(["job"])) == 0.5  # the incident's zombie: half full, still taking lessons
    marker.marked = True
    assert load(Server(["job"])) == 1.0
    assert load.last_reason == "task is marked draining"


def test_sustained_slow_inference_raises_the_load_to_full_and_it_ages_out() -> None:
    clock = Clock()
    counter = SlowInferenceCounter(window_seconds=60, clock=clock)
    vad_logger = logging.getLogger("livekit.plugins.silero")
    counter.attach(["livekit.plugins.silero"])
    try:
        load = DrainAwareLoad(max_jobs=2, tag_reader=Marker(), slow_inference=counter, slow_per_minute_full=6)
        for _ in range(3):
            vad_logger.warning("inference is slower than realtime", extra={"delay": 1.5})
        assert load(Server(["zombie"])) == pytest.approx(0.5)  # 3/min of 6/min: as loaded as the jobs
        for _ in range(5):
            vad_logger.warning("inference is slower than realtime", extra={"delay": 9.0})
        assert load(Server(["zombie"])) == 1.0
        assert load.last_reason == "slow inference"
        vad_logger.warning("some other warning")
        clock.now += 61
        assert counter.per_minute() == 0
        assert load(Server(["zombie"])) == 0.5
    finally:
        counter.detach(["livekit.plugins.silero"])


def test_cpu_pressure_counts_when_it_is_the_highest() -> None:
    load = DrainAwareLoad(
        max_jobs=2, tag_reader=Marker(), slow_inference=SlowInferenceCounter(), cpu_sampler=lambda: 0.97
    )
    assert load(Server([])) == pytest.approx(0.97)
    assert load.last_reason == "cpu"


def test_a_reply_without_task_tags_means_no_tags_and_ends_the_drain() -> None:
    """The ECS agent leaves ``TaskTags`` out when the task has none (an undone drain removes the
    drainer's): the stale "draining" must not stick. A loopback ``FakeEcsTaskMetadataEndpoint``."""
    current = {STATE_TAG: DRAINING_STATE}
    endpoint = FakeEcsTaskMetadataEndpoint("arn:aws:ecs:eu-west-1:1:task/c/t0", lambda: dict(current)).start()
    try:
        reader = TaskTagReader(endpoint.url, cache_seconds=0)
        assert reader.draining()
        current.clear()
        assert "TaskTags" not in endpoint.body()
        assert not reader.draining()
    finally:
        endpoint.stop()


def test_a_failed_tag_lookup_keeps_the_last_known_tags() -> None:
    failing: list[str] = []
    endpoint = FakeEcsTaskMetadataEndpoint(
        "arn:aws:ecs:eu-west-1:1:task/c/t0",
        lambda: {STATE_TAG: DRAINING_STATE},
        tag_lookup_error=lambda: failing[0] if failing else None,
    ).start()
    try:
        reader = TaskTagReader(endpoint.url, cache_seconds=0)
        assert reader.draining()
        failing.append("ThrottlingException")
        assert endpoint.body()["Errors"][0]["ErrorField"] == "TaskTags"
        assert reader.draining()  # a metadata hiccup neither starts nor stops a drain
        assert endpoint.requests == 2  # both reads reached the endpoint
    finally:
        endpoint.stop()
