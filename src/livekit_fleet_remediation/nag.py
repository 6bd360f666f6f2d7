"""cdk-nag 2 and 3 behind one interface: the AwsSolutions checks on an app, and the findings the
construct acknowledges, each with its reason.

cdk-nag 2 checks an app as an aspect and reads ``NagSuppressions`` (a rule, or some of its findings
by exact text or by regular expression). cdk-nag 3 is a policy-validation plugin and reads
aws-cdk-lib's ``Validations.of(...).acknowledge`` (aws-cdk-lib 2.257 or newer): one exact finding
per acknowledgment, on the resource or any construct above it. A pattern is matched here, under
cdk-nag 3, against the findings of each IAM policy below the scope, flattened as cdk-nag 3 writes
them (``wildcard_findings``), and each match is acknowledged by its exact text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from importlib.metadata import version
from typing import TYPE_CHECKING, Protocol, cast

import jsii
from aws_cdk import Aspects, IAspect, Stack
from aws_cdk import aws_iam as iam
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct

if TYPE_CHECKING:
    # aws-cdk-lib 2.257 and newer (what cdk-nag 3 needs); older releases have neither.
    from aws_cdk import IPolicyValidationPlugin

# cdk-nag's major version, read once: it decides which of the two interfaces this module speaks.
NAG_MAJOR = int(version("cdk-nag").split(".", 1)[0])

# What a finding of a rule names: its exact text (``Resource::*``) or a pattern over that text.
Finding = str | re.Pattern[str]


class _ValidationPluginPack(Protocol):
    """cdk-nag 3's rule packs: built on the scope they check, then added as a validation plugin."""

    def __call__(self, scope: IConstruct, *, verbose: bool) -> IPolicyValidationPlugin: ...


def apply_aws_solutions_checks(app: IConstruct, *, verbose: bool = True) -> None:
    """cdk-nag's AwsSolutions checks on ``app``, whichever major of cdk-nag is installed: an
    unacknowledged finding fails ``cdk synth``."""
    if NAG_MAJOR < 3:
        Aspects.of(app).add(AwsSolutionsChecks(verbose=verbose))
        return
    from aws_cdk import Validations

    pack = cast(_ValidationPluginPack, AwsSolutionsChecks)
    Validations.of(app).add_plugins(pack(app, verbose=verbose))


def acknowledge(
    scope: IConstruct,
    rule: str,
    reason: str,
    applies_to: Sequence[Finding] = (),
    *,
    apply_to_children: bool = False,
) -> None:
    """Acknowledge ``rule`` on ``scope`` for ``reason``: the whole rule, or only the findings in
    ``applies_to``. ``apply_to_children`` reaches the resources below ``scope`` under cdk-nag 2
    (cdk-nag 3 always reads the constructs above a resource)."""
    if NAG_MAJOR < 3:
        from cdk_nag import NagPackSuppression, NagSuppressions

        suppression = NagPackSuppression(
            id=rule, reason=reason, applies_to=[_nag2_finding(f) for f in applies_to] or None
        )
        NagSuppressions.add_resource_suppressions(scope, [suppression], apply_to_children=apply_to_children)
        return
    from aws_cdk import Acknowledgment, Validations

    exact = [f for f in applies_to if isinstance(f, str)]
    for finding_id in [f"{rule}[{finding}]" for finding in exact] if applies_to else [rule]:
        Validations.of(scope).acknowledge(Acknowledgment(id=finding_id, reason=reason))
    patterns = [f for f in applies_to if isinstance(f, re.Pattern)]
    if patterns:
        Aspects.of(scope).add(_AcknowledgeMatchingFindings(rule, reason, patterns))


def _nag2_finding(finding: Finding) -> str | dict[str, str]:
    return finding if isinstance(finding, str) else {"regex": f"/{finding.pattern}/g"}


@jsii.implements(IAspect)
class _AcknowledgeMatchingFindings:
    """At synth, before the checks run: each IAM policy's findings that match a pattern."""

    def __init__(self, rule: str, reason: str, patterns: Sequence[re.Pattern[str]]) -> None:
        self._rule, self._reason, self._patterns = rule, reason, patterns

    def visit(self, node: IConstruct) -> None:
        from aws_cdk import Acknowledgment, Validations

        for finding in sorted(set(wildcard_findings(node))):
            if any(pattern.search(finding) for pattern in self._patterns):
                Validations.of(node).acknowledge(
                    Acknowledgment(id=f"{self._rule}[{finding}]", reason=self._reason)
                )


def wildcard_findings(node: IConstruct) -> Iterator[str]:
    """The wildcard findings cdk-nag writes for an IAM resource's allowed statements:
    ``Action::<action>`` and ``Resource::<flattened resource>``, those with a ``*``."""
    if isinstance(node, iam.CfnPolicy | iam.CfnManagedPolicy):
        documents = [Stack.of(node).resolve(node.policy_document)]
    elif isinstance(node, iam.CfnRole | iam.CfnUser | iam.CfnGroup):
        inline = Stack.of(node).resolve(node.policies) or []
        documents = [Stack.of(node).resolve(policy)["policyDocument"] for policy in inline]
    else:
        return
    for document in documents:
        for statement in document.get("Statement", []):
            if statement.get("Effect") != "Allow":
                continue
            for action in _as_list(statement.get("Action")):
                if isinstance(action, str) and "*" in action:
                    yield f"Action::{action}"
            for resource in map(flattened_reference, _as_list(statement.get("Resource"))):
                if "*" in resource:
                    yield f"Resource::{resource}"


def _as_list(value: object) -> list[object]:
    return value if isinstance(value, list) else [value]


def flattened_reference(reference: object) -> str:
    """A resolved CloudFormation value as one string, as cdk-nag names it in a finding:
    ``Ref`` and ``Fn::GetAtt`` in angle brackets, ``Fn::Join`` joined, ``${x}`` as ``<x>``."""
    if reference is None:
        return ""
    if isinstance(reference, str):
        return reference.replace("${", "<").replace("}", ">")
    if isinstance(reference, dict):
        if reference.get("Fn::Join"):
            delimiter, items = reference["Fn::Join"]
            return str(delimiter).join(flattened_reference(item) for item in items)
        if reference.get("Fn::Sub"):
            return flattened_reference(reference["Fn::Sub"])
        if reference.get("Fn::GetAtt"):
            resource, attribute = reference["Fn::GetAtt"]
            return f"<{flattened_reference(resource)}.{flattened_reference(attribute)}>"
        if reference.get("Fn::ImportValue"):
            return flattened_reference(reference["Fn::ImportValue"])
        if reference.get("Ref"):
            return f"<{flattened_reference(reference['Ref'])}>"
    return json.dumps(reference, separators=(",", ":"), ensure_ascii=False)
