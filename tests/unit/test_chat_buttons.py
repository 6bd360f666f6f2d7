"""The chat buttons in the unit that defines them (``core.chat_actions``): each custom action's name,
button, command, variables and attachment, the 100-character command budget at its edge and one
character either side, and what the door says when it refuses. The synthesized template's view of
the same buttons is tests/infra/test_chat_actions.py."""

from __future__ import annotations

import pytest

from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.core import chat_actions
from fleet_remediation.core.chat_actions import ChatAction, ChatRequest, ChatTokenRequest, parse_chat_request
from fleet_remediation.core.errors import InvalidEventError

REGION = "eu-west-1"
ENTRY = "aws lambda invoke --function-name lkfr-prod-chat --region eu-west-1 --payload"
CONTEXT = "event.metadata.additionalContext."
ENVIRONMENT = ("environment", CONTEXT + "environment")
PROD_ONLY = ("environment", "EQUALS", "prod")


def _off(slug: str, text: str, code: str) -> ChatAction:
    return ChatAction(
        key=f"off-{slug}",
        button_text=text,
        command=f"""{ENTRY} '{{"o":"{code}"}}'""",
        variables=dict([ENVIRONMENT, ("switch_function", CONTEXT + "switch_function")]),
        criteria=[PROD_ONLY, ("switch_function", "EQUALS", slug)],
    )


def test_each_button_runs_the_entry_point_with_one_key_and_shows_only_in_its_environment() -> None:
    assert chat_actions.chat_actions("prod", REGION) == [
        ChatAction(
            key="undrain",
            button_text="Undrain the drained task",
            command=f"""{ENTRY} '{{"u":"$t"}}'""",
            variables=dict([ENVIRONMENT, ("t", CONTEXT + "undrain_token")]),
            criteria=[PROD_ONLY, ("t", "HAS_VALUE", None)],
        ),
        ChatAction(
            key="drain",
            button_text="Drain the task again",
            command=f"""{ENTRY} '{{"d":"$t"}}'""",
            variables=dict([ENVIRONMENT, ("t", CONTEXT + "drain_token")]),
            criteria=[PROD_ONLY, ("t", "HAS_VALUE", None)],
        ),
        _off("zombie-reaper", "Turn the zombie reaper off", "r"),
        _off("tts-reach-alarm", "Turn the TTS responders off", "t"),
        _off("worker-drainer", "Turn the worker drainers off", "w"),
    ]


def test_names_are_the_products_and_the_environments() -> None:
    assert chat_actions.chat_entry_function_name("prod") == "lkfr-prod-chat"
    assert chat_actions.action_name("prod", "off-worker-drainer") == "lkfr-prod-off-worker-drainer"
    assert chat_actions.switch_button(FunctionName.TTS_REACH_ALARM) == {"switch_function": "tts-reach-alarm"}


def test_a_token_request_labels_its_action_task_and_service() -> None:
    request = ChatTokenRequest(action="undrain", task_id="2789d238", agent_service="agents")
    assert request.label == "Undrain task 2789d238 (agents)"


def test_the_longest_command_is_a_token_buttons() -> None:
    # '{"u":"$t"}' is one character longer than '{"o":"w"}'.
    assert chat_actions.longest_command("prod", REGION) == len(f"""{ENTRY} '{{"u":"$t"}}'""") == 90


@pytest.mark.parametrize("region", ["eu-west-1", "ap-southeast-2"])
def test_the_environment_name_budget_is_what_the_100_characters_leave(region: str) -> None:
    command = f"""aws lambda invoke --function-name lkfr--chat --region {region} --payload '{{"u":"$t"}}'"""
    without_name = len(command)
    assert chat_actions.environment_name_budget(region) == 100 - without_name


@pytest.mark.parametrize("region", ["eu-west-1", "ap-southeast-2"])
def test_a_name_fits_up_to_the_budget_and_not_one_character_over(region: str) -> None:
    budget = chat_actions.environment_name_budget(region)
    assert chat_actions.command_length_problem("p" * (budget - 1), region) is None
    assert chat_actions.command_length_problem("p" * budget, region) is None
    assert chat_actions.longest_command("p" * budget, region) == 100
    over = "p" * (budget + 1)
    assert chat_actions.command_length_problem(over, region) == (
        f"the chat buttons' commands would be 101 characters, over Amazon Q's 100: with a Slack channel in "
        f"{region}, the environment's name may have at most {budget} characters ({over!r} has {budget + 1})"
    )


def test_tokens_are_sixteen_url_safe_characters() -> None:
    for _ in range(50):
        assert chat_actions.TOKEN.fullmatch(chat_actions.new_token())


def test_the_door_lets_in_each_switch_code() -> None:
    assert parse_chat_request({"o": "t"}) == ChatRequest("off", function=FunctionName.TTS_REACH_ALARM)


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        ({"u": "short"}, "chat request refused: short is not a button token (^[A-Za-z0-9_-]{16}$)."),
        ({"o": "x"}, "chat request refused: x is not a switch code (one of r, t, w)."),
        ({"x": "w"}, "chat request refused: unknown key x."),
        ({"u": "a", "d": "b"}, "chat request refused: the payload must be an object with exactly one key"),
    ],
)
def test_a_refusal_says_what_was_wrong_and_what_the_channel_may_send(payload: object, why: str) -> None:
    with pytest.raises(InvalidEventError) as refused:
        parse_chat_request(payload)
    message = str(refused.value)
    assert message.startswith(why)
    assert message.endswith(
        'The chat channel can only send {"u": TOKEN} (undrain), {"d": TOKEN} (drain again) with a token '
        'from a message, or {"o": r|t|w} (turn a function off); it can never enforce, plan, run for real '
        "or name a task: use lkfr or the e-mail's command for those"
    )
