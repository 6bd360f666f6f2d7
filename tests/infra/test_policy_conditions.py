"""Least privilege everywhere: every ``events:PutEvents`` a role may make is conditioned on our source and
a detail-type of ours, and no statement's condition is undone by a sibling statement of the same
principal (``devkit.policy_siblings`` defines it), in every environment's stack and the consumer app."""

from __future__ import annotations

import json
from typing import Any

import pytest

from devkit.policy_siblings import statements_by_principal, undone_conditions
from fleet_remediation.contract.action_events import ACTION_EVENT_DETAIL_TYPE
from fleet_remediation.contract.naming import EVENT_SOURCE, SUSPECT_WORKER_DETAIL_TYPE
from tests.example_environments import EXAMPLE_CONFIG

ENVIRONMENTS = sorted(json.loads(EXAMPLE_CONFIG.read_text())["environments"])
STACKS = [*ENVIRONMENTS, "consumer app"]
REGION, ACCOUNT = "eu-west-1", "123456789012"
BUS = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/default"
OURS = {"StringEquals": {"events:source": EVENT_SOURCE, "events:detail-type": ACTION_EVENT_DETAIL_TYPE}}


@pytest.mark.parametrize("name", STACKS)
def test_no_statement_s_condition_is_undone_by_a_sibling(name: str, stack_templates: dict[str, Any]) -> None:
    found = undone_conditions(*stack_templates[name])
    assert found == [], "\n".join(str(undone) for undone in found)


@pytest.mark.parametrize("name", STACKS)
def test_every_put_events_is_conditioned_on_our_source_and_detail_types(
    name: str, stack_templates: dict[str, Any]
) -> None:
    put_events = [
        json.loads(statement.raw)
        for statements in statements_by_principal(*stack_templates[name]).values()
        for statement in statements
        if "events:PutEvents" in statement.actions
    ]
    assert put_events
    for statement in put_events:
        equals = statement["Condition"]["StringEquals"]
        assert equals["events:source"] == EVENT_SOURCE
        assert equals["events:detail-type"] in (ACTION_EVENT_DETAIL_TYPE, SUSPECT_WORKER_DETAIL_TYPE)


# --- the check, failing ------------------------------------------------------------------------------


def _role_with(*statements: dict[str, Any], managed: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {
        "Role": {"Type": "AWS::IAM::Role", "Properties": {"ManagedPolicyArns": [{"Ref": "Managed"}]}},
        "Inline": {
            "Type": "AWS::IAM::Policy",
            "Properties": {"PolicyDocument": {"Statement": list(statements)}, "Roles": [{"Ref": "Role"}]},
        },
        "Managed": {
            "Type": "AWS::IAM::ManagedPolicy",
            "Properties": {"PolicyDocument": {"Statement": managed or []}},
        },
    }
    return {"Resources": resources}


def _allow(action: str, resource: Any = BUS, condition: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "Effect": "Allow",
        "Action": action,
        "Resource": resource,
        **({"Condition": condition} if condition else {}),
    }


def test_an_unconditioned_sibling_undoes_the_condition() -> None:
    (undone,) = undone_conditions(
        _role_with(_allow("events:PutEvents", condition=OURS), _allow("events:PutEvents")), REGION, ACCOUNT
    )
    assert undone.principal == "Role"
    assert "Inline statement 1 grants what Inline statement 0 conditions" in str(undone)


def test_a_sibling_with_a_wildcard_or_in_another_attached_policy_undoes_it_too() -> None:
    wildcard = _role_with(_allow("events:PutEvents", condition=OURS), _allow("events:Put*", "*"))
    assert len(undone_conditions(wildcard, REGION, ACCOUNT)) == 1
    half = {"StringEquals": {"events:source": EVENT_SOURCE}}
    elsewhere = _role_with(
        _allow("events:PutEvents", condition=OURS), managed=[_allow("events:PutEvents", BUS, half)]
    )
    (undone,) = undone_conditions(elsewhere, REGION, ACCOUNT)
    assert "('StringEquals', 'events:detail-type')" in str(undone)


def test_siblings_with_the_same_keys_or_on_other_actions_or_resources_do_not() -> None:
    suspect = {
        "StringEquals": {"events:source": EVENT_SOURCE, "events:detail-type": SUSPECT_WORKER_DETAIL_TYPE}
    }
    template = _role_with(
        _allow("events:PutEvents", condition=OURS),
        _allow("events:PutEvents", condition=suspect),
        _allow("sns:Publish"),
        _allow("events:PutEvents", BUS.replace("default", "other")),
    )
    assert undone_conditions(template, REGION, ACCOUNT) == []
