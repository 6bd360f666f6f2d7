"""The one-tap undo buttons in chat: Amazon Q Developer *custom actions* attached to the functions'
custom notifications, and what a message must carry for them.

A custom action is account-wide, so each is named after its environment and attached only to
notifications of that environment (``environment`` EQUALS). An attachment reads at most five
variables, each from the notification's ``metadata.additionalContext`` (strings only), so a message
that offers an undo carries exactly what the command needs there (``CONTEXT_*`` below). The stack
builds the actions from ``chat_actions``; the messages fill the context from ``Undo.button``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from fleet_remediation.contract.naming import (
    MODE_PARAMETER_ROOT,
    PRODUCT_PREFIX,
    FunctionName,
    lambda_function_name,
)

# The notification type Amazon Q gives custom notifications (``"source": "custom"``).
NOTIFICATION_TYPE = "Custom"
CONTEXT_ENVIRONMENT = "environment"
# The drainer a button invokes is the message's agent service's.
CONTEXT_AGENT_SERVICE = "agent_service"
CONTEXT_UNDO_ACTION = "undo_action"
CONTEXT_UNDO_TASK = "undo_task"
CONTEXT_SWITCH = "switch_function"
VARIABLE_SOURCE = "event.metadata.additionalContext."
DRAINER_ACTIONS = ("undrain", "drain")
SWITCH_OFF = "switch-off"


@dataclass(frozen=True)
class ChatAction:
    """One custom action: its name, button, command (``$variable`` placeholders) and attachment."""

    key: str
    button_text: str
    command: str
    variables: dict[str, str]
    # (variable, operator, value): every one must hold for the button to show.
    criteria: list[tuple[str, str, str | None]] = field(default_factory=list)


def action_name(environment: str, key: str) -> str:
    return f"{PRODUCT_PREFIX}-{environment}-{key}"


def drainer_payload(action: str, task: str) -> str:
    """The drainer's manual event, compact; the same text in the e-mail's command and the button's."""
    return json.dumps({"action": action, "task": task, "dry_run": False}, separators=(",", ":"))


def _variables(*names: str) -> dict[str, str]:
    return {name: VARIABLE_SOURCE + name for name in (CONTEXT_ENVIRONMENT, *names)}


def drainer_action(environment: str, region: str, action: str) -> ChatAction:
    """One action for every agent service: the message names its service, the command its drainer
    (the channel's guardrail allows only this environment's drainers)."""
    function = lambda_function_name(environment, FunctionName.WORKER_DRAINER, "$" + CONTEXT_AGENT_SERVICE)
    payload = drainer_payload(action, "$" + CONTEXT_UNDO_TASK)
    return ChatAction(
        key=action,
        button_text=f"{action.capitalize()} the task",
        command=f"aws lambda invoke --function-name {function} --region {region} --payload '{payload}'",
        variables=_variables(CONTEXT_AGENT_SERVICE, CONTEXT_UNDO_ACTION, CONTEXT_UNDO_TASK),
        criteria=[
            (CONTEXT_ENVIRONMENT, "EQUALS", environment),
            (CONTEXT_AGENT_SERVICE, "HAS_VALUE", None),
            (CONTEXT_UNDO_ACTION, "EQUALS", action),
            (CONTEXT_UNDO_TASK, "HAS_VALUE", None),
        ],
    )


def switch_parameter(environment: str, function_slug: str) -> str:
    return f"{MODE_PARAMETER_ROOT}/{environment}/{function_slug}/mode"


def switch_off_action(environment: str, region: str) -> ChatAction:
    name = switch_parameter(environment, "$" + CONTEXT_SWITCH)
    return ChatAction(
        key=SWITCH_OFF,
        button_text="Turn this function off",
        command=f"aws ssm put-parameter --overwrite --name {name} --value off --region {region}",
        variables=_variables(CONTEXT_SWITCH),
        criteria=[(CONTEXT_ENVIRONMENT, "EQUALS", environment), (CONTEXT_SWITCH, "HAS_VALUE", None)],
    )


def chat_actions(environment: str, region: str) -> list[ChatAction]:
    return [
        *(drainer_action(environment, region, a) for a in DRAINER_ACTIONS),
        switch_off_action(environment, region),
    ]


def drainer_button(action: str, task: str, service: str) -> dict[str, str]:
    return {CONTEXT_UNDO_ACTION: action, CONTEXT_UNDO_TASK: task, CONTEXT_AGENT_SERVICE: service}


def switch_button(function: FunctionName) -> dict[str, str]:
    return {CONTEXT_SWITCH: function.slug}
