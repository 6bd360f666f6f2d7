"""The responder's ECS facts (``tts_reach_alarm.adapters.task_facts``): DescribeTasks in batches of
100, the running tasks' zone, revision and start; whatever ECS could not tell is unknown (a failed
or unstarted call, a stream that names no task id, a task ECS does not know, a running task without
one of the facts), and a stopped task is history. A stand-in client answers from a table."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from tts_reach_alarm.adapters.task_facts import EcsTaskFacts

STARTED = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)


def _id(n: int) -> str:
    return f"{n:032x}"


def _stream(n: int) -> str:
    return f"agent/agent/{_id(n)}"


class Ecs:
    """DescribeTasks over ``tasks`` (task id -> answer); ``fail_calls``: which calls are throttled."""

    def __init__(self, tasks: dict[str, dict[str, Any]], fail_calls: frozenset[int] = frozenset()) -> None:
        self.tasks, self.fail_calls = tasks, fail_calls
        self.calls: list[list[str]] = []

    def describe_tasks(self, *, cluster: str, tasks: list[str]) -> dict[str, Any]:
        self.calls.append(tasks)
        if len(self.calls) in self.fail_calls:
            raise ClientError(
                {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "DescribeTasks"
            )
        found = [self.tasks[t] for t in tasks if t in self.tasks]
        return {
            "tasks": found,
            "failures": [{"arn": t, "reason": "MISSING"} for t in tasks if t not in self.tasks],
        }


def _task(n: int, status: str = "RUNNING", **overrides: Any) -> dict[str, Any]:
    return {
        "taskArn": f"arn:aws:ecs:eu-west-1:123456789012:task/agents/{_id(n)}",
        "lastStatus": status,
        "desiredStatus": status,
        "availabilityZone": "eu-west-1a",
        "taskDefinitionArn": "arn:aws:ecs:eu-west-1:123456789012:task-definition/agent:7",
        "startedAt": STARTED,
    } | overrides


def test_a_fleet_is_read_in_batches_of_a_hundred_and_its_running_tasks_told() -> None:
    ecs = Ecs({_id(n): _task(n) for n in range(250)})
    read = EcsTaskFacts("agents", ecs).read([_stream(n) for n in range(250)], time.monotonic() + 8)  # type: ignore[arg-type]
    assert [len(batch) for batch in ecs.calls] == [100, 100, 50]
    assert read.complete
    assert len(read.running) == 250
    first = next(f for f in read.running if f.log_stream == _stream(0))
    assert (first.availability_zone, first.task_definition, first.started_at) == (
        "eu-west-1a",
        "arn:aws:ecs:eu-west-1:123456789012:task-definition/agent:7",
        STARTED,
    )
    assert read.describe() == "ECS facts of 250 running task(s)"


def test_what_ecs_cannot_tell_is_unknown_and_a_stopped_task_is_history() -> None:
    tasks = {_id(0): _task(0), _id(1): _task(1, "STOPPED"), _id(3): _task(3, availabilityZone="")}
    streams = [_stream(0), _stream(1), _stream(2), _stream(3), "agent/agent/not-a-task"]
    read = EcsTaskFacts("agents", Ecs(tasks)).read(streams, time.monotonic() + 8)  # type: ignore[arg-type]
    assert [f.log_stream for f in read.running] == [_stream(0)]
    assert set(read.unknown) == {_stream(2), _stream(3), "agent/agent/not-a-task"}
    assert read.describe() == "ECS facts of 1 running task(s); unknown for 3 task(s) (ECS does not know them)"


def test_a_failed_batch_is_unknown_and_the_rest_still_read() -> None:
    ecs = Ecs({_id(n): _task(n) for n in range(150)}, fail_calls=frozenset({1}))
    read = EcsTaskFacts("agents", ecs).read([_stream(n) for n in range(150)], time.monotonic() + 8)  # type: ignore[arg-type]
    assert len(read.running) == 50
    assert len(read.unknown) == 100
    (error,) = read.errors
    assert "ThrottlingException" in error.message


def test_no_call_starts_without_the_time_to_finish_it() -> None:
    ecs = Ecs({_id(0): _task(0)})
    read = EcsTaskFacts("agents", ecs).read([_stream(0)], time.monotonic() + 1.0)  # type: ignore[arg-type]
    assert ecs.calls == []
    assert read.unknown == (_stream(0),)
    assert "no time left for 1 task(s)" in read.describe()
