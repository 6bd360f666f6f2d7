"""The action events on the synthesized stack: every function may put them (and only them), and no
rule of the stack matches them, so the functions never act on their own announcements."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from moto.events.models import EventPattern

from fleet_remediation.contract.action_events import (
    ACTION_EVENT_DETAIL_TYPE,
    ActionEvent,
    ActionKind,
    event_id,
)
from fleet_remediation.contract.naming import EVENT_SOURCE, SUSPECT_WORKER_DETAIL_TYPE
from tests.infra.conftest import Synthesized


def _event(detail_type: str) -> dict[str, Any]:
    detail = ActionEvent(
        id=event_id("worker_drainer", "req", "cordon"),
        environment="staging",
        function="worker_drainer",
        version="0.2.0",
        invocation_id="req",
        mode="enforce",
        kind=ActionKind.ACTION,
        resource="0123456789abcdef0123456789abcdef",
        action="cordon",
        outcome="done",
        reason="slow inference on this worker only",
        at=datetime(2026, 9, 15, 17, 36, tzinfo=UTC),
    )
    return {
        "version": "0",
        "id": "e",
        "detail-type": detail_type,
        "source": EVENT_SOURCE,
        "account": "111111111111",
        "time": "2026-09-15T17:36:00Z",
        "region": "ap-northeast-2",
        "resources": [],
        # A suspect-worker event names the agent service whose drainer takes it.
        "detail": {**json.loads(detail.model_dump_json()), "agent_service": "agents"},
    }


def _patterns(staging: Synthesized) -> list[EventPattern]:
    rules = staging.template.find_resources("AWS::Events::Rule")
    return [
        EventPattern.load(json.dumps(rule["Properties"]["EventPattern"]))
        for rule in rules.values()
        if "EventPattern" in rule["Properties"]
    ]


def test_no_rule_of_the_stack_matches_an_action_event(staging: Synthesized) -> None:
    patterns = _patterns(staging)
    # The check can fail: the suspect-worker rule matches our own suspect-worker event.
    assert any(p.matches_event(_event(SUSPECT_WORKER_DETAIL_TYPE)) for p in patterns)
    assert not any(p.matches_event(_event(ACTION_EVENT_DETAIL_TYPE)) for p in patterns)


def test_every_function_may_put_only_its_action_events_and_the_responder_its_suspect_event(
    staging: Synthesized,
) -> None:
    policies = staging.template.find_resources("AWS::IAM::Policy")
    granted = {
        (name, statement["Condition"]["StringEquals"]["events:detail-type"])
        for name, policy in policies.items()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement["Action"] == "events:PutEvents"
        and statement["Condition"]["StringEquals"]["events:source"] == EVENT_SOURCE
    }
    put_events = [
        statement
        for policy in policies.values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if "events:PutEvents" in statement["Action"]
    ]
    assert len(put_events) == len(granted) == 4
    bus = f"arn:aws:events:{staging.stack.region}:{staging.stack.account}:event-bus/default"
    assert {statement["Resource"] for statement in put_events} == {bus}, "the default bus, nothing else"
    assert sorted(detail for _, detail in granted) == [ACTION_EVENT_DETAIL_TYPE] * 3 + [
        SUSPECT_WORKER_DETAIL_TYPE
    ]
    (suspect_policy,) = [name for name, detail in granted if detail == SUSPECT_WORKER_DETAIL_TYPE]
    assert "TtsReachResponder" in suspect_policy
