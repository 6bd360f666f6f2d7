"""Conditions a sibling statement undoes, in a synthesized template's IAM policies.

A conditioned Allow statement limits what its principal may do only if no other Allow statement of the
same principal grants the same thing with less: statement B undoes A when both are Allow, they belong to
the same principal, some action of B overlaps some action of A, some resource of B overlaps some resource
of A, and B lacks one of A's condition keys (an ``(operator, key)`` pair of A's ``Condition`` that B does
not have). B may carry the same keys with other values (one statement per detail-type, say): that grants
something else, not the same thing unconditioned.

Principals: an IAM role, with the statements of every policy attached to it (``AWS::IAM::Policy`` and
``AWS::IAM::ManagedPolicy`` naming it, its ``ManagedPolicyArns`` and inline ``Policies``); and each
``Principal`` of a resource policy (key, topic, queue). Actions and resources overlap when one's pattern
(``*`` and ``?`` wildcards, actions without case) matches the other; a ``NotAction`` or ``NotResource``
overlaps everything; a deploy-time resource (``Fn::GetAtt``...) is itself and matches ``*``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from devkit.template_values import Partial, Resolver

RESOURCE_POLICIES = {
    "AWS::KMS::Key": "KeyPolicy",
    "AWS::SNS::TopicPolicy": "PolicyDocument",
    "AWS::SQS::QueuePolicy": "PolicyDocument",
}


@dataclass(frozen=True)
class Statement:
    where: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    condition_keys: frozenset[tuple[str, str]]
    raw: str


@dataclass(frozen=True)
class Undone:
    principal: str
    conditioned: Statement
    sibling: Statement

    def __str__(self) -> str:
        missing = sorted(self.conditioned.condition_keys - self.sibling.condition_keys)
        return (
            f"{self.principal}: {self.sibling.where} grants what {self.conditioned.where} conditions, "
            f"without {missing}\n  conditioned: {self.conditioned.raw}\n  sibling: {self.sibling.raw}"
        )


def undone_conditions(template: Mapping[str, Any], region: str, account: str) -> list[Undone]:
    """Every conditioned Allow statement a sibling of the same principal undoes."""
    found: list[Undone] = []
    for principal, statements in statements_by_principal(template, region, account).items():
        for conditioned in statements:
            if not conditioned.condition_keys:
                continue
            for sibling in statements:
                if sibling is not conditioned and _undoes(sibling, conditioned):
                    found.append(Undone(principal, conditioned, sibling))
    return found


def statements_by_principal(
    template: Mapping[str, Any], region: str, account: str
) -> dict[str, list[Statement]]:
    resources = template.get("Resources", {})
    resolver = Resolver(resources, region, account)
    by_principal: dict[str, list[Statement]] = defaultdict(list)
    for logical_id, resource in resources.items():
        properties = resource.get("Properties", {})
        kind = resource["Type"]
        if kind == "AWS::IAM::Role":
            for index, policy in enumerate(properties.get("Policies", [])):
                where = f"{logical_id}.Policies[{index}]"
                by_principal[logical_id] += _statements(policy["PolicyDocument"], where, resolver)
            for arn in properties.get("ManagedPolicyArns", []):
                policy_id = str(arn.get("Ref")) if isinstance(arn, dict) else ""
                if policy_id in resources:
                    document = resources[policy_id]["Properties"]["PolicyDocument"]
                    by_principal[logical_id] += _statements(document, policy_id, resolver)
        elif kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            for role in properties.get("Roles", []):
                role_id = str(role.get("Ref")) if isinstance(role, dict) else str(role)
                by_principal[role_id] += _statements(properties["PolicyDocument"], logical_id, resolver)
        elif kind in RESOURCE_POLICIES:
            for statement in _statements(properties.get(RESOURCE_POLICIES[kind], {}), logical_id, resolver):
                principal = json.loads(statement.raw).get("Principal")
                by_principal[f"{logical_id} for {json.dumps(principal, sort_keys=True)}"].append(statement)
    return by_principal


def _statements(document: dict[str, Any], where: str, resolver: Resolver) -> Iterator[Statement]:
    for index, statement in enumerate(document.get("Statement", [])):
        if statement.get("Effect") != "Allow":
            continue
        actions = _listed(statement.get("Action")) if "NotAction" not in statement else ("*",)
        resources = (
            tuple(_resource(item, resolver) for item in _listed(statement.get("Resource", "*")))
            if "NotResource" not in statement
            else ("*",)
        )
        keys = frozenset(
            (operator, key) for operator, pairs in statement.get("Condition", {}).items() for key in pairs
        )
        sid = statement.get("Sid")
        label = f"{where} statement {index}" + (f" ({sid})" if sid else "")
        yield Statement(label, actions, resources, keys, json.dumps(statement, sort_keys=True))


def _listed(value: Any) -> tuple[Any, ...]:
    if value is None:
        return ()
    return tuple(value) if isinstance(value, list) else (value,)


def _resource(raw: Any, resolver: Resolver) -> str:
    value = resolver.value(raw)
    if isinstance(value, Partial) or not isinstance(value, str):
        return json.dumps(raw, sort_keys=True)  # a deploy-time value: itself
    return value


def _overlap(first: str, second: str, *, fold: bool) -> bool:
    if fold:
        first, second = first.lower(), second.lower()
    return first == second or fnmatchcase(first, second) or fnmatchcase(second, first)


def _undoes(sibling: Statement, conditioned: Statement) -> bool:
    if conditioned.condition_keys <= sibling.condition_keys:
        return False
    actions = any(_overlap(a, b, fold=True) for a in sibling.actions for b in conditioned.actions)
    resources = any(_overlap(a, b, fold=False) for a in sibling.resources for b in conditioned.resources)
    return actions and resources
