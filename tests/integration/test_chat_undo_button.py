"""The chat buttons do what their label says and nothing else.

A hand drain on moto ECS (the real livekit-server behind the drainer) delivers a chat message; the
custom actions come from the stack's own construct, synthesized for the same environment. The test
plays Amazon Q's part: it picks the actions whose attachment criteria the message meets, reads each
attachment's variables from the message's ``metadata.additionalContext``, substitutes them into the
command, and sends the command's payload to the chat entry point's ``lambda_handler``.

Stand-in, said here as the bar asks: moto cannot run a Lambda function without Docker, so the entry
point's forward to the drainer (an asynchronous ``Invoke``) is ``DrainerOnHand``, which calls the
drainer's ``lambda_handler`` at once with the same payload. The ledger, the kill switch (SSM) and
the topics are moto's; the action events go to a list.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from aws_cdk import assertions

from devkit.fakes.drainer_world import CHAT_TOPIC, TABLE, TOPIC, DrainerWorld, moto_world
from devkit.fakes.drainer_world import SERVICE as ECS_SERVICE
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.contract.action_events import ActionEvent
from fleet_remediation.contract.naming import FunctionName, function_mode_parameter_name
from fleet_remediation.core.announce import Announced
from fleet_remediation.core.chat_actions import chat_entry_function_name, new_token
from livekit_fleet_remediation.constructs.chat_actions import ChatActions
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from worker_drainer import chat_handler
from worker_drainer.adapters.chat_tokens import ChatToken, DynamoChatTokens
from worker_drainer.adapters.ledger import DynamoLedger
from worker_drainer.chat_entry import ChatEntryDependencies, ChatEntrySettings, SsmSwitchWriter
from worker_drainer.decide.task_tags import STATE_TAG

pytestmark = pytest.mark.livekit
REGION = "eu-west-1"
ENV = "it"
SERVICE = "agents"
DRAINER = "lkfr-it-agents-worker-drainer"


@dataclass
class DrainerOnHand:
    """The drainer, invoked in-process with the payload the entry point would send."""

    world: DrainerWorld
    reports: list[dict[str, Any]] = field(default_factory=list)

    def send(self, function_name: str, payload: Mapping[str, Any]) -> None:
        assert function_name == DRAINER
        self.reports.append(self.world.invoke(dict(payload)))


@dataclass
class EventList:
    events: list[ActionEvent] = field(default_factory=list)

    def put(self, events: list[ActionEvent]) -> Announced:
        self.events += events
        return Announced(sent=len(events))


@dataclass
class Chat:
    world: DrainerWorld
    drainer: DrainerOnHand
    action_events: EventList

    def deps(self) -> ChatEntryDependencies:
        settings = ChatEntrySettings.model_validate(
            {
                "environment_name": ENV,
                "services": {SERVICE: {"ledger_table_name": TABLE, "drainer_function_name": DRAINER}},
                "switches": {f.value: function_mode_parameter_name(ENV, f) for f in FunctionName},
            }
        )
        return ChatEntryDependencies(
            settings=settings,
            tokens={SERVICE: DynamoChatTokens(TABLE, client=boto3.client("dynamodb"))},
            invoker=self.drainer,
            switches=SsmSwitchWriter(boto3.client("ssm")),
            action_events=self.action_events,
            clock=lambda: self.world.now,
        )

    def send(self, payload: Any) -> dict[str, Any]:
        return dict(chat_handler.lambda_handler(payload, LocalLambdaContext(), dependencies=self.deps()))


@pytest.fixture
def world(livekit_server: LocalLiveKit) -> Iterator[DrainerWorld]:
    with moto_world(livekit_server) as built:
        yield built


@pytest.fixture
def chat(world: DrainerWorld) -> Chat:
    return Chat(world, DrainerOnHand(world), EventList())


@functools.cache
def custom_actions(env_name: str) -> list[dict[str, Any]]:
    app = cdk.App()
    stack = cdk.Stack(app, "ChatActionsOnly", env=cdk.Environment(account="123456789012", region=REGION))
    ChatActions(stack, "ChatActions", env_name=env_name)
    found = assertions.Template.from_stack(stack).find_resources("AWS::Chatbot::CustomAction")
    return [resource["Properties"] for resource in found.values()]


def _value(path: str, notification: dict[str, Any]) -> str | None:
    found: Any = {"event": notification}
    for part in path.split("."):
        found = found.get(part) if isinstance(found, dict) else None
    return found if isinstance(found, str) else None


def buttons(notification: dict[str, Any], actions: list[dict[str, Any]]) -> dict[str, str]:
    """Button text -> command, for the buttons Amazon Q would show on ``notification``, each
    ``$name`` replaced by its variable's value as it stands (no escaping)."""
    shown = {}
    for action in actions:
        for attachment in action["Attachments"]:
            values = {name: _value(path, notification) for name, path in attachment["Variables"].items()}
            if all(
                values.get(c["VariableName"]) is not None
                and (c["Operator"] == "HAS_VALUE" or values[c["VariableName"]] == c["Value"])
                for c in attachment["Criteria"]
            ):
                command = action["Definition"]["CommandText"]
                shown[attachment["ButtonText"]] = re.sub(
                    r"\$(\w+)", lambda m, found=values: str(found[m.group(1)]), command
                )
    return shown


def invocation(command: str) -> tuple[str, Any]:
    """(function name, payload) of an ``aws lambda invoke`` command line; the payload as JSON reads it."""
    words = shlex.split(command)
    assert words[:3] == ["aws", "lambda", "invoke"], command
    return words[words.index("--function-name") + 1], json.loads(words[words.index("--payload") + 1])


def chat_message(world: DrainerWorld) -> dict[str, Any]:
    return json.loads(world.received(CHAT_TOPIC)[-1]["Message"])


def drained(world: DrainerWorld) -> tuple[str, dict[str, Any]]:
    task = world.task_ids[1]
    world.invoke({"action": "drain", "task": task, "dry_run": False})
    assert world.tags(task)[STATE_TAG]
    return task, chat_message(world)


def press(chat: Chat, notification: dict[str, Any], label: str) -> dict[str, Any]:
    function, payload = invocation(buttons(notification, custom_actions(ENV))[label])
    assert function == chat_entry_function_name(ENV)
    return chat.send(payload)


def _codes(report: dict[str, Any]) -> list[str]:
    return [error["code"] for error in report["errors"]]


def test_the_undrain_button_undrains_the_named_task_and_is_told_in_its_thread(
    world: DrainerWorld, chat: Chat
) -> None:
    task, notification = drained(world)
    context = notification["metadata"]["additionalContext"]
    assert set(buttons(notification, custom_actions(ENV))) == {
        "Undrain the drained task",
        "Turn the worker drainers off",
    }
    first_step = notification["content"]["nextSteps"][0]
    assert first_step.startswith(f'Undrain task {task} (agents): button "Undrain the drained task". ')
    report = press(chat, notification, "Undrain the drained task")
    assert report["status"] == "ok", report
    assert [(a["resource"], a["action"], a["outcome"]) for a in report["actions"]] == [
        (task, "chat-undrain", "done")
    ]
    assert STATE_TAG not in world.tags(task)
    (drainer_report,) = chat.drainer.reports
    assert [(a["action"], a["outcome"]) for a in drainer_report["actions"]] == [("undo", "done")]
    assert drainer_report["trigger"]["detail"]["chat"]["token"] == context["undrain_token"]
    undone = chat_message(world)
    assert undone["metadata"]["threadId"] == notification["metadata"]["threadId"]
    assert [(e.kind.value, e.resource, e.action) for e in chat.action_events.events] == [
        ("action", task, "chat-undrain")
    ]
    # The e-mail still carries the operator's command (the drainer, directly, with IAM).
    email = world.received(TOPIC)[0]["Message"]
    assert f"--function-name {DRAINER}" in email


def test_a_token_works_once(world: DrainerWorld, chat: Chat) -> None:
    task, notification = drained(world)
    # Each press and command a second after the last: two runs never share an instant, and the
    # drainer orders its own tag writes by when they were made.
    world.now += timedelta(seconds=1)
    assert press(chat, notification, "Undrain the drained task")["status"] == "ok"
    world.now += timedelta(seconds=1)
    world.invoke({"action": "drain", "task": task, "dry_run": False})
    again = press(chat, notification, "Undrain the drained task")
    assert _codes(again) == ["ChatRequestRefused"]
    assert "already used" in again["errors"][0]["message"]
    assert world.tags(task)[STATE_TAG]
    assert len(chat.drainer.reports) == 1
    assert chat.action_events.events[-1].kind.value == "refusal"


@pytest.mark.parametrize(
    "bent",
    [
        '{token}","action":"drain',
        '{token}"}}',
        "{token} --payload x",
        '{{"d":"{token}"}}',
        "{token}x",
    ],
)
def test_a_crafted_notification_cannot_bend_the_button(world: DrainerWorld, chat: Chat, bent: str) -> None:
    task, notification = drained(world)
    context = notification["metadata"]["additionalContext"]
    context["undrain_token"] = bent.format(token=context["undrain_token"])
    command = buttons(notification, custom_actions(ENV))["Undrain the drained task"]
    try:
        _, payload = invocation(command)
    except ValueError:
        return  # not JSON (json.JSONDecodeError is a ValueError): Lambda refuses it, nothing runs
    report = chat.send(payload)
    assert _codes(report) == ["InvalidEvent"], report
    assert world.tags(task)[STATE_TAG]
    assert chat.drainer.reports == []


def test_a_drain_token_on_the_undrain_button_is_refused(world: DrainerWorld, chat: Chat) -> None:
    task, notification = drained(world)
    assert press(chat, notification, "Undrain the drained task")["status"] == "ok"
    undone = chat_message(world)
    drain_token = undone["metadata"]["additionalContext"]["drain_token"]
    assert "Drain the task again" in buttons(undone, custom_actions(ENV))
    undone["metadata"]["additionalContext"]["undrain_token"] = drain_token
    report = press(chat, undone, "Undrain the drained task")
    assert _codes(report) == ["ChatRequestRefused"]
    assert "issued to drain, not to undrain" in report["errors"][0]["message"]
    assert STATE_TAG not in world.tags(task)


def _record(world: DrainerWorld, token: str, **changes: Any) -> None:
    fields: dict[str, Any] = {
        "token": token,
        "action": "undrain",
        "task_id": world.task_ids[1],
        "agent_service": SERVICE,
        "incident_id": "it-incident",
        "expires_at": int(world.now.timestamp()) + 3600,
    }
    DynamoChatTokens(TABLE, client=boto3.client("dynamodb")).issue(ChatToken(**(fields | changes)))


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("unknown", "unknown"),
        ("expired", "expired at"),
        ("another service", "names service billing"),
    ],
)
def test_the_undo_token_is_refused_when_unknown_expired_or_of_another_service(
    world: DrainerWorld, chat: Chat, case: str, why: str
) -> None:
    task, _ = drained(world)
    token = new_token()
    if case == "expired":
        _record(world, token)
        world.now += timedelta(hours=2)
    elif case == "another service":
        _record(world, token, agent_service="billing")
    report = chat.send({"u": token})
    assert _codes(report) == ["ChatRequestRefused"]
    assert why in report["errors"][0]["message"]
    assert world.tags(task)[STATE_TAG]
    assert chat.drainer.reports == []
    (refusal,) = chat.action_events.events
    assert refusal.kind.value == "refusal"


@pytest.mark.parametrize(
    "request_",
    [
        {"action": "plan", "dry_run": False},
        {"action": "drain", "task": "0123456789abcdef0123456789abcdef", "dry_run": False},
        {"o": "enforce"},
        {"o": "w", "value": "enforce"},
        {"mode": "enforce"},
        {"u": "../../worker-drainer"},
    ],
)
def test_a_chat_request_to_start_anything_is_refused_and_recorded(
    world: DrainerWorld, chat: Chat, request_: dict[str, Any]
) -> None:
    ssm = boto3.client("ssm")
    names = [function_mode_parameter_name(ENV, f) for f in FunctionName]
    before = {p["Name"]: p["Value"] for p in ssm.get_parameters(Names=names)["Parameters"]}
    report = chat.send(request_)
    assert _codes(report) == ["InvalidEvent"]
    assert "can never enforce" in report["errors"][0]["message"]
    assert chat.drainer.reports == []
    assert {p["Name"]: p["Value"] for p in ssm.get_parameters(Names=names)["Parameters"]} == before
    (refusal,) = chat.action_events.events
    assert (refusal.kind.value, refusal.action) == ("refusal", "chat-request")


def test_the_off_button_writes_off_to_that_functions_switch_only(world: DrainerWorld, chat: Chat) -> None:
    _, notification = drained(world)
    report = press(chat, notification, "Turn the worker drainers off")
    assert report["status"] == "ok"
    parameter = function_mode_parameter_name(ENV, FunctionName.WORKER_DRAINER)
    assert boto3.client("ssm").get_parameter(Name=parameter)["Parameter"]["Value"] == "off"
    assert [(a["resource"], a["action"]) for a in report["actions"]] == [(parameter, "switch-off")]
    assert boto3.client("ssm").get_parameters(
        Names=[function_mode_parameter_name(ENV, FunctionName.ZOMBIE_REAPER)]
    )["InvalidParameters"]


def test_a_chat_drain_waits_out_a_group_event(world: DrainerWorld, chat: Chat) -> None:
    task, notification = drained(world)
    assert press(chat, notification, "Undrain the drained task")["status"] == "ok"
    undone = chat_message(world)
    # The drainer's ledger, as the group-aware detection writes it (keyed by the ECS service).
    ledger = DynamoLedger(TABLE, ECS_SERVICE, client=boto3.client("dynamodb"))
    ledger.hold_group_event("availability zone eu-west-1a", world.now, ttl_seconds=30 * 60)
    report = press(chat, undone, "Drain the task again")
    assert report["status"] == "ok"  # the entry point forwarded it; the drainer refuses it
    refused = chat.drainer.reports[-1]
    assert _codes(refused) == ["ChatRequestRefused"]
    assert "group event holds for agents (availability zone eu-west-1a)" in refused["errors"][0]["message"]
    assert STATE_TAG not in world.tags(task)


def test_no_button_shows_on_another_environments_message(world: DrainerWorld) -> None:
    _, notification = drained(world)
    assert buttons(notification, custom_actions("prod")) == {}
