"""The one-tap buttons in chat: Amazon Q Developer *custom actions* attached to the functions'
custom notifications, what a message carries for them, and what the chat entry point accepts.

Every button runs one command: ``aws lambda invoke`` of the environment's chat entry point
(``lkfr-<env>-chat``) with a payload of one key. A chat request can only stop, never start:

* ``{"u": TOKEN}``: undrain the task a drainer message named (the token is the drainer's own record
  of what it did: task, agent service, action, expiry, used once);
* ``{"d": TOKEN}``: drain again the task a drainer message said it undid;
* ``{"o": CODE}``: turn one function's own kill switch off (no variable: one action per function).

The only variable a command reads is ``$t``, the token, followed by ``"`` so no name runs into the
text after it; the entry point refuses at its door anything that is not exactly one of these
(``parse_chat_request``). A custom action is account-wide, so each is named after its environment
and attached only to notifications of that environment (``environment`` EQUALS).
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from fleet_remediation.contract.models import excerpt
from fleet_remediation.contract.naming import PRODUCT_PREFIX, FunctionName
from fleet_remediation.core.errors import InvalidEventError

# The notification type Amazon Q gives custom notifications (``"source": "custom"``).
NOTIFICATION_TYPE = "Custom"
CONTEXT_ENVIRONMENT = "environment"
CONTEXT_AGENT_SERVICE = "agent_service"
CONTEXT_UNDRAIN_TOKEN = "undrain_token"
CONTEXT_DRAIN_TOKEN = "drain_token"
CONTEXT_SWITCH = "switch_function"
VARIABLE_SOURCE = "event.metadata.additionalContext."
# The chat API's limit on a custom action's command (botocore chatbot
# ``CustomActionDefinitionCommandTextString``: at most 100 characters).
COMMAND_TEXT_MAX_CHARS = 100
# ``secrets.token_urlsafe(12)``: 16 url-safe characters, 96 random bits.
TOKEN_BYTES = 12
TOKEN_PATTERN = r"^[A-Za-z0-9_-]{16}$"
TOKEN = re.compile(TOKEN_PATTERN)
# A token is good for this long after the message that carries it.
TOKEN_LIFETIME_SECONDS = 12 * 3600
TOKEN_VARIABLE = "t"
ChatDrainerAction = Literal["undrain", "drain"]
# The payload key of each token action, and the context key a message fills it from.
TOKEN_KEYS: dict[str, ChatDrainerAction] = {"u": "undrain", "d": "drain"}
TOKEN_CONTEXT: dict[ChatDrainerAction, str] = {"undrain": CONTEXT_UNDRAIN_TOKEN, "drain": CONTEXT_DRAIN_TOKEN}
OFF_KEY = "o"
OFF_CODES = {
    "r": FunctionName.ZOMBIE_REAPER,
    "t": FunctionName.TTS_REACH_ALARM,
    "w": FunctionName.WORKER_DRAINER,
}
BUTTON_TEXT = {
    "undrain": "Undrain the drained task",
    "drain": "Drain the task again",
    FunctionName.ZOMBIE_REAPER: "Turn the zombie reaper off",
    FunctionName.TTS_REACH_ALARM: "Turn the TTS responders off",
    FunctionName.WORKER_DRAINER: "Turn the worker drainers off",
}
CHAT_ENTRY_SLUG = "chat"


def chat_entry_function_name(environment: str) -> str:
    """The environment's chat entry point: the one function the chat channel may invoke."""
    return f"{PRODUCT_PREFIX}-{environment}-{CHAT_ENTRY_SLUG}"


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


@dataclass(frozen=True)
class ChatAction:
    """One custom action: its name, button, command and attachment."""

    key: str
    button_text: str
    command: str
    variables: dict[str, str]
    # (variable, operator, value): every one must hold for the button to show.
    criteria: list[tuple[str, str, str | None]] = field(default_factory=list)


def action_name(environment: str, key: str) -> str:
    return f"{PRODUCT_PREFIX}-{environment}-{key}"


def chat_command(environment: str, region: str, payload: dict[str, str]) -> str:
    """The command a button runs: the chat entry point, in the stack's region, with one key."""
    body = json.dumps(payload, separators=(",", ":"))
    function = chat_entry_function_name(environment)
    return f"aws lambda invoke --function-name {function} --region {region} --payload '{body}'"


def _environment_only(environment: str) -> tuple[str, str, str | None]:
    return (CONTEXT_ENVIRONMENT, "EQUALS", environment)


def token_action(environment: str, region: str, key: str) -> ChatAction:
    action = TOKEN_KEYS[key]
    return ChatAction(
        key=action,
        button_text=BUTTON_TEXT[action],
        command=chat_command(environment, region, {key: "$" + TOKEN_VARIABLE}),
        variables={
            CONTEXT_ENVIRONMENT: VARIABLE_SOURCE + CONTEXT_ENVIRONMENT,
            TOKEN_VARIABLE: VARIABLE_SOURCE + TOKEN_CONTEXT[action],
        },
        criteria=[_environment_only(environment), (TOKEN_VARIABLE, "HAS_VALUE", None)],
    )


def off_action(environment: str, region: str, code: str) -> ChatAction:
    function = OFF_CODES[code]
    return ChatAction(
        key=f"off-{function.slug}",
        button_text=BUTTON_TEXT[function],
        command=chat_command(environment, region, {OFF_KEY: code}),
        variables={
            CONTEXT_ENVIRONMENT: VARIABLE_SOURCE + CONTEXT_ENVIRONMENT,
            CONTEXT_SWITCH: VARIABLE_SOURCE + CONTEXT_SWITCH,
        },
        criteria=[_environment_only(environment), (CONTEXT_SWITCH, "EQUALS", function.slug)],
    )


def chat_actions(environment: str, region: str) -> list[ChatAction]:
    return [
        *(token_action(environment, region, key) for key in TOKEN_KEYS),
        *(off_action(environment, region, code) for code in OFF_CODES),
    ]


def longest_command(environment: str, region: str) -> int:
    return max(len(action.command) for action in chat_actions(environment, region))


def environment_name_budget(region: str) -> int:
    """The longest environment name whose buttons' commands fit the chat API in ``region``."""
    return COMMAND_TEXT_MAX_CHARS - longest_command("", region)


def command_length_problem(environment: str, region: str) -> str | None:
    """Why the buttons cannot be created for ``environment`` in ``region`` (None: they fit)."""
    longest = longest_command(environment, region)
    if longest <= COMMAND_TEXT_MAX_CHARS:
        return None
    return (
        f"the chat buttons' commands would be {longest} characters, over Amazon Q's "
        f"{COMMAND_TEXT_MAX_CHARS}: with a Slack channel in {region}, the environment's name may have at "
        f"most {environment_name_budget(region)} characters ({environment!r} has {len(environment)})"
    )


def switch_button(function: FunctionName) -> dict[str, str]:
    return {CONTEXT_SWITCH: function.slug}


class ChatTokenRequest(BaseModel):
    """What a token will let a button do: the drainer records it, under a fresh token, when it sends
    the message that carries the button."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: ChatDrainerAction
    task_id: str = Field(max_length=128)
    agent_service: str = Field(max_length=64)

    @property
    def label(self) -> str:
        return f"{self.action.capitalize()} task {self.task_id} ({self.agent_service})"


@dataclass(frozen=True)
class ChatRequest:
    """A chat request past the door: a token action or a switch to turn off."""

    action: ChatDrainerAction | Literal["off"]
    token: str | None = None
    function: FunctionName | None = None


def _refuse(why: str) -> InvalidEventError:
    return InvalidEventError(
        f'chat request refused: {why}. The chat channel can only send {{"u": TOKEN}} (undrain), '
        f'{{"d": TOKEN}} (drain again) with a token from a message, or {{"o": r|t|w}} (turn a '
        "function off); it can never enforce, plan, run for real or name a task: use lkfr or the "
        "e-mail's command for those"
    )


def parse_chat_request(event: Any) -> ChatRequest:
    """The chat entry point's door: exactly one key, a well-formed token or a known switch code."""
    if not isinstance(event, dict) or len(event) != 1:
        raise _refuse(f"the payload must be an object with exactly one key, not {excerpt(event)}")
    ((key, value),) = event.items()
    if key in TOKEN_KEYS:
        if not isinstance(value, str) or not TOKEN.fullmatch(value):
            raise _refuse(f"{excerpt(value)} is not a button token ({TOKEN_PATTERN})")
        return ChatRequest(TOKEN_KEYS[key], token=value)
    if key == OFF_KEY:
        if not isinstance(value, str) or value not in OFF_CODES:
            raise _refuse(f"{excerpt(value)} is not a switch code (one of {', '.join(OFF_CODES)})")
        return ChatRequest("off", function=OFF_CODES[value])
    raise _refuse(f"unknown key {excerpt(key)}")
