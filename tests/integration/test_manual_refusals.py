"""Every row of the docs' "What a manual command refuses" table, run: the test reads the table
from docs/on-call-from-a-phone.md, so the page and the behaviour are one source. Each row's
``target`` names a scenario below (a row without one fails the test).

The drainer rows run the drainer's ``lambda_handler`` on moto ECS with the real livekit-server
(``devkit.fakes.drainer_world``); the responder rows run its manual event through the responder's
router and door (``parse_transition``) with a real ``Door`` at the world's clock.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from devkit.fakes.drainer_world import CLUSTER, DrainerWorld, moto_world, suspect_event
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.contract.events import EventAges
from fleet_remediation.contract.naming import EXCLUDE_TAG
from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.core.door import Door
from fleet_remediation.core.errors import RemediationError
from tts_reach_alarm.transition import parse_transition
from worker_drainer.decide.task_tags import STATE_TAG, STOP_REASON_PREFIX

pytestmark = pytest.mark.livekit
DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "on-call-from-a-phone.md"
FUNCTION_ARN = "arn:aws:lambda:eu-west-1:123456789012:function:lkfr-it-agents-tts-reach-alarm"


@dataclass(frozen=True)
class Row:
    command: str
    target: str
    answer: str
    reason: str

    @property
    def code(self) -> str | None:
        found = re.search(r"refused: `(\w+)`", self.answer)
        return found.group(1) if found else None


def table_rows() -> list[Row]:
    text = DOCS_PAGE.read_text(encoding="utf-8")
    section = text.split("## What a manual command refuses", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ")][1:]  # after the header
    rows = [Row(*(cell.strip() for cell in line.strip("|").split("|"))) for line in lines]
    assert len(rows) >= 10, "the docs table is missing"
    return rows


def _drain(world: DrainerWorld, task: str) -> None:
    world.invoke({"action": "drain", "task": task, "dry_run": False})
    assert world.tags(task)[STATE_TAG]


def _stop(world: DrainerWorld, task: str, reason: str) -> None:
    world.ecs_client.stop_task(cluster=CLUSTER, task=task, reason=reason)


def _another_service_task(world: DrainerWorld) -> str:
    (task,) = world.ecs_client.run_task(
        cluster=CLUSTER, taskDefinition="agent", count=1, launchType="FARGATE", group="service:billing"
    )["tasks"]
    return str(task["taskArn"].rsplit("/", 1)[1])


def _later(world: DrainerWorld, step: Callable[..., Any], *args: Any) -> Any:
    world.now += timedelta(seconds=1)
    return step(*args)


def _manual(action: str, task: str) -> dict[str, Any]:
    return {"action": action, "task": task, "dry_run": False}


# target -> (world -> the event the row's command sends)
DRAINER_SCENARIOS: dict[str, Callable[[DrainerWorld, str], Any]] = {
    "a task id ECS does not know in the service's cluster": lambda w, a: _manual(a, "f" * 32),
    "a task of another service in the same cluster": lambda w, a: _manual(a, _another_service_task(w)),
    "a task ARN in another cluster": lambda w, a: _manual(
        a, f"arn:aws:ecs:eu-west-1:123456789012:task/other/{w.task_ids[1]}"
    ),
    "a task tagged `livekit-drainer:exclude=true`": lambda w, a: (
        w.ecs_client.tag_resource(resourceArn=w.task_arns[1], tags=[{"key": EXCLUDE_TAG, "value": "true"}]),
        _manual(a, w.task_ids[1]),
    )[1],
    "a running task the drainer never drained": lambda w, a: _manual(a, w.task_ids[1]),
    "a task someone else stopped": lambda w, a: (
        _stop(w, w.task_ids[1], "scaled in by hand"),
        _manual(a, w.task_ids[1]),
    )[1],
    "a task already draining": lambda w, a: (_drain(w, w.task_ids[1]), _manual(a, w.task_ids[1]))[1],
    # A second between the commands: two runs never share an instant, and the drainer orders its own
    # tag writes by when they were made.
    "a task the drainer already undrained": lambda w, a: (
        _drain(w, w.task_ids[1]),
        _later(w, w.invoke, _manual("undrain", w.task_ids[1])),
        _later(w, _manual, a, w.task_ids[1]),
    )[2],
    "a task the drainer stopped": lambda w, a: (
        _stop(w, w.task_ids[1], f"{STOP_REASON_PREFIX}drained: no active jobs"),
        _manual(a, w.task_ids[1]) if a in ("drain", "undrain") else suspect_event(w.task_ids[1], w.now),
    )[1],
}

RESPONDER_WINDOW_ENDS: dict[str, Callable[[datetime], str]] = {
    "more than a minute in the future": lambda now: (now + timedelta(minutes=5)).isoformat(),
    "the year 1": lambda now: "0001-01-01T00:00:00Z",
    "more than 14 days ago": lambda now: (now - timedelta(days=15)).isoformat(),
}


@pytest.fixture
def world(livekit_server: LocalLiveKit) -> Iterator[DrainerWorld]:
    with moto_world(livekit_server) as built:
        yield built


def _responder_answer(row: Row) -> str:
    now = datetime(2026, 9, 15, 18, 0, tzinfo=UTC)
    settings = TtsReachSettings.model_validate(
        {
            "environment_name": "it",
            "mode_parameter_name": "/livekit-fleet-remediation/it/mode",
            "notification_topic_arn": "arn:aws:sns:eu-west-1:123456789012:notifications",
            "runbook_base_url": "https://runbooks.example.com/repo",
            "aws_region": "eu-west-1",
            "agent_log_group": "/ppi/livekit/it/agent",
            "idempotency_table_name": "once",
        }
    )
    door = Door.for_invocation(FUNCTION_ARN, now, EventAges(schedule_seconds=120))
    event = {"dry_run": True, "window_end": RESPONDER_WINDOW_ENDS[row.target](now)}
    with pytest.raises(RemediationError) as refused:
        parse_transition(event, settings, door)
    assert refused.value.code == row.code
    return str(refused.value)


@pytest.mark.parametrize("row", table_rows(), ids=lambda row: f"{row.command}: {row.target}")
def test_the_manual_command_answers_as_the_docs_table_says(row: Row, request: pytest.FixtureRequest) -> None:
    if row.command == "responder `window_end`":
        assert row.reason in _responder_answer(row)
        return
    world: DrainerWorld = request.getfixturevalue("world")
    event = DRAINER_SCENARIOS[row.target](world, row.command)
    changed_by_setup = {task: world.tags(task) for task in world.task_ids}
    report = world.invoke(event)
    told = json.dumps(report)
    if row.code is not None:
        assert [error["code"] for error in report["errors"]] == [row.code], report["errors"]
        assert row.reason in report["errors"][0]["message"]
        assert report["actions"] == []
        assert {task: world.tags(task) for task in world.task_ids} == changed_by_setup
    else:
        assert row.answer == "no-op"
        assert report["status"] == "ok", report["errors"]
        assert report["actions"] == []
        assert row.reason in told
