"""The one-tap undo in chat does what the message's undo command does.

A hand drain on moto ECS (the real livekit-server behind the drainer) delivers a chat message; the
custom actions come from the stack's own construct, synthesized for the same environment. The test
plays Amazon Q's part: it picks the actions whose attachment criteria the message meets, reads each
attachment's variables from the message's ``metadata.additionalContext``, substitutes them into the
command, and compares the invocation with the e-mail's undo command: the same function, the same
parsed payload (action, task, ``dry_run`` false). That payload, sent through the drainer's
``lambda_handler``, undrains the task.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import assertions

from devkit.fakes.drainer_world import CHAT_TOPIC, TOPIC, DrainerWorld, moto_world
from devkit.livekit_local import LocalLiveKit
from livekit_fleet_remediation.constructs.chat_actions import ChatActions
from worker_drainer.tags import STATE_TAG

pytestmark = pytest.mark.livekit
REGION = "eu-west-1"


@pytest.fixture
def world(livekit_server: LocalLiveKit) -> Iterator[DrainerWorld]:
    with moto_world(livekit_server) as built:
        yield built


def custom_actions(env_name: str) -> list[dict[str, Any]]:
    app = cdk.App()
    stack = cdk.Stack(app, "ChatActionsOnly", env=cdk.Environment(account="123456789012", region=REGION))
    ChatActions(stack, "ChatActions", env_name=env_name, services=["agents"])
    found = assertions.Template.from_stack(stack).find_resources("AWS::Chatbot::CustomAction")
    return [resource["Properties"] for resource in found.values()]


def _value(path: str, notification: dict[str, Any]) -> str | None:
    found: Any = {"event": notification}
    for part in path.split("."):
        found = found.get(part) if isinstance(found, dict) else None
    return found if isinstance(found, str) else None


def buttons(notification: dict[str, Any], actions: list[dict[str, Any]]) -> list[str]:
    """The commands of the buttons Amazon Q would show on ``notification``, variables substituted."""
    commands = []
    for action in actions:
        for attachment in action["Attachments"]:
            assert attachment["NotificationType"] == "Custom"
            assert len(attachment["Variables"]) <= 5
            values = {name: _value(path, notification) for name, path in attachment["Variables"].items()}
            shown = all(
                values.get(c["VariableName"]) is not None
                and (c["Operator"] == "HAS_VALUE" or values[c["VariableName"]] == c["Value"])
                for c in attachment["Criteria"]
            )
            if shown:
                command = action["Definition"]["CommandText"]
                commands.append(re.sub(r"\$(\w+)", lambda m, found=values: str(found[m.group(1)]), command))
    return commands


def invocation(command: str) -> tuple[str, dict[str, Any]]:
    """(function name, parsed payload) of an ``aws lambda invoke`` command line."""
    words = shlex.split(command)
    assert words[:3] == ["aws", "lambda", "invoke"], command
    return words[words.index("--function-name") + 1], json.loads(words[words.index("--payload") + 1])


def test_the_undrain_button_invokes_what_the_undo_command_does_and_undrains_the_task(
    world: DrainerWorld,
) -> None:
    task = world.task_ids[1]
    world.invoke({"action": "drain", "task": task, "dry_run": False})
    assert world.tags(task)[STATE_TAG]
    (email,) = world.received(TOPIC)
    (chat,) = world.received(CHAT_TOPIC)
    notification = json.loads(chat["Message"])

    shown = buttons(notification, custom_actions("it"))
    lambda_buttons = [command for command in shown if command.startswith("aws lambda invoke")]
    assert len(lambda_buttons) == 1
    assert any(command.startswith("aws ssm put-parameter") for command in shown)
    assert f"--region {REGION}" in lambda_buttons[0]
    undo_line = next(
        line.strip() for line in email["Message"].splitlines() if line.strip().startswith("aws lambda invoke")
    )
    button_function, button_payload = invocation(lambda_buttons[0])
    undo_function, undo_payload = invocation(undo_line)
    assert button_function == undo_function == "lkfr-it-agents-worker-drainer"
    assert button_payload == undo_payload == {"action": "undrain", "task": task, "dry_run": False}

    report = world.invoke(button_payload)
    assert [(a["action"], a["outcome"]) for a in report["actions"]] == [("undo", "done")]
    assert STATE_TAG not in world.tags(task)


def test_no_button_shows_on_another_environments_message(world: DrainerWorld) -> None:
    task = world.task_ids[1]
    world.invoke({"action": "drain", "task": task, "dry_run": False})
    (chat,) = world.received(CHAT_TOPIC)
    assert buttons(json.loads(chat["Message"]), custom_actions("prod")) == []
