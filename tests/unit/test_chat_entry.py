"""The chat entry point's door (pure) and its forward whose outcome is unknown.

``TokensInMemory`` stands in for the drainer's ledger (``DynamoChatTokens``, exercised on moto in
tests/integration/test_chat_undo_button.py): the same read, and a claim that fails once used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import pytest

from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.core.chat_actions import ChatRequest, new_token, parse_chat_request
from fleet_remediation.core.errors import AwsApiError, ConcurrentActionError, InvalidEventError
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from worker_drainer import chat_handler
from worker_drainer.adapters.chat_tokens import ChatToken
from worker_drainer.chat_entry import ChatEntryDependencies, ChatEntrySettings

NOW = datetime(2026, 9, 15, 18, 0, tzinfo=UTC)
TOKEN = "AbCdEfGhIjKlMnOp"


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"u": TOKEN}, ChatRequest("undrain", token=TOKEN)),
        ({"d": TOKEN}, ChatRequest("drain", token=TOKEN)),
        ({"o": "w"}, ChatRequest("off", function=FunctionName.WORKER_DRAINER)),
        ({"o": "r"}, ChatRequest("off", function=FunctionName.ZOMBIE_REAPER)),
    ],
)
def test_the_door_lets_in_exactly_the_three_requests(payload: Any, expected: ChatRequest) -> None:
    assert parse_chat_request(payload) == expected


@pytest.mark.parametrize(
    "payload",
    [
        {},
        [],
        "u",
        {"u": TOKEN, "action": "drain"},
        {"u": TOKEN + '","action":"drain'},
        {"u": TOKEN[:-1]},
        {"u": TOKEN + "x"},
        {"u": 1},
        {"d": None},
        {"o": "enforce"},
        {"o": "dry-run"},
        {"o": ["w"]},
        {"mode": "off"},
        {"action": "plan", "dry_run": False},
    ],
)
def test_the_door_refuses_everything_else(payload: Any) -> None:
    with pytest.raises(InvalidEventError, match="chat request refused"):
        parse_chat_request(payload)


def test_tokens_are_sixteen_url_safe_characters_and_pass_the_door() -> None:
    tokens = {new_token() for _ in range(200)}
    assert len(tokens) == 200
    for token in tokens:
        assert parse_chat_request({"u": token}).token == token


@dataclass
class TokensInMemory:
    items: dict[str, ChatToken] = field(default_factory=dict)

    def issue(self, token: ChatToken) -> None:
        self.items[token.token] = token

    def read(self, token: str) -> ChatToken | None:
        return self.items.get(token)

    def claim(self, token: str, now: datetime) -> None:
        found = self.items[token]
        if found.used_at is not None:
            raise ConcurrentActionError("used", resource=token)
        self.items[token] = replace(found, used_at=int(now.timestamp()))


@dataclass
class LostReply:
    sent: list[Mapping[str, Any]] = field(default_factory=list)

    def send(self, function_name: str, payload: Mapping[str, Any]) -> None:
        self.sent.append(payload)
        raise AwsApiError("Lambda Invoke failed: read timeout", aws_code="Transport", unknown=True)


class NoSwitches:
    def turn_off(self, parameter_name: str) -> None:
        raise AssertionError("no switch in this test")


def test_a_forward_whose_reply_is_lost_is_unknown_and_never_sent_again() -> None:
    tokens = TokensInMemory()
    tokens.issue(ChatToken(TOKEN, "undrain", "2789d238", "agents", "prod.inc", int(NOW.timestamp()) + 60))
    invoker = LostReply()
    deps = ChatEntryDependencies(
        settings=ChatEntrySettings.model_validate(
            {
                "environment_name": "prod",
                "services": {"agents": {"ledger_table_name": "t", "drainer_function_name": "d"}},
                "switches": {"worker_drainer": "/p"},
            }
        ),
        tokens={"agents": tokens},
        invoker=invoker,
        switches=NoSwitches(),
        clock=lambda: NOW,
    )
    first = chat_handler.lambda_handler({"u": TOKEN}, LocalLambdaContext(), dependencies=deps)
    assert [(a["action"], a["outcome"]) for a in first["actions"]] == [("chat-undrain", "unknown")]
    again = chat_handler.lambda_handler({"u": TOKEN}, LocalLambdaContext(), dependencies=deps)
    assert [e["code"] for e in again["errors"]] == ["ChatRequestRefused"]
    assert len(invoker.sent) == 1
