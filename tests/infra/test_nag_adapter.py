"""livekit_fleet_remediation.nag, the one place that speaks both majors of cdk-nag.

The development environment has cdk-nag 2: the findings this module names for cdk-nag 3's exact
acknowledgments are compared with the ones cdk-nag 2 reports (both majors name a finding alike),
and the cdk-nag 3 path's acknowledgments are read back from the construct tree (aws-cdk-lib's
``Validations``, which cdk-nag 3 reads). cdk-nag 3 itself runs at the highest end of the dependency
ranges (tests/packaging/test_dependency_ranges.py), on the consumer app."""

from __future__ import annotations

import re

import aws_cdk as cdk
import pytest
from aws_cdk import assertions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs

from livekit_fleet_remediation import nag

ACCOUNT, REGION = "123456789012", "eu-west-1"
LOG_STREAMS = re.compile(r"^Resource::arn:(<AWS::Partition>|aws[a-z-]*):logs:.*:log-group:.*:\*$")


def _stack_with_wildcards() -> tuple[cdk.App, cdk.Stack, iam.Role]:
    """A role whose policy names wildcards in each form a finding flattens: a literal, a join with
    the partition token, a GetAtt, an Fn::Sub, and wildcard actions."""
    app = cdk.App()
    stack = cdk.Stack(app, "Nag", env=cdk.Environment(account=ACCOUNT, region=REGION))
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    own_logs = logs.LogGroup(stack, "Logs")
    imported = logs.LogGroup.from_log_group_name(stack, "Agents", "/agents/calls")
    statements = [
        iam.PolicyStatement(actions=["xray:PutTraceSegments"], resources=["*"]),
        iam.PolicyStatement(actions=["logs:StartQuery"], resources=[imported.log_group_arn]),
        iam.PolicyStatement(actions=["logs:GetLogEvents"], resources=[f"{own_logs.log_group_arn}/*"]),
        iam.PolicyStatement(
            actions=["kms:GenerateDataKey*"],
            resources=[stack.format_arn(service="kms", resource="key", resource_name="k")],
        ),
        iam.PolicyStatement(
            actions=["s3:GetObject"], resources=[cdk.Fn.sub("arn:${AWS::Partition}:s3:::b/*")]
        ),
    ]
    for statement in statements:
        role.add_to_policy(statement)
    return app, stack, role


def _default_policy(role: iam.Role) -> iam.CfnPolicy:
    policy = role.node.find_child("DefaultPolicy").node.default_child
    assert isinstance(policy, iam.CfnPolicy)
    return policy


def test_the_findings_named_here_are_the_ones_cdk_nag_reports() -> None:
    from cdk_nag import AwsSolutionsChecks

    app, stack, role = _stack_with_wildcards()
    cdk.Aspects.of(app).add(AwsSolutionsChecks())
    app.synth()
    errors = assertions.Annotations.from_stack(stack).find_error(
        "*", assertions.Match.string_like_regexp("AwsSolutions-IAM5.*")
    )
    # Each error reads "AwsSolutions-IAM5[<finding>]: <the rule's text>".
    reported = {str(error.entry.data).split("]: ", 1)[0] + "]" for error in errors}
    named = {f"AwsSolutions-IAM5[{finding}]" for finding in nag.wildcard_findings(_default_policy(role))}
    assert len(named) == 5, named
    assert named == reported


def _acknowledged(construct: cdk.CfnResource | iam.Role) -> dict[str, str]:
    return {
        re.sub("^annotation::", "", key, flags=re.IGNORECASE): reason
        for entry in construct.node.metadata
        if entry.type == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY
        for key, reason in dict(entry.data).items()
    }


def test_under_cdk_nag_3_a_pattern_acknowledges_each_matching_finding_by_its_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(nag, "NAG_MAJOR", 3)
    app, _, role = _stack_with_wildcards()
    reason = "StartQuery reads the named log group's streams."
    nag.acknowledge(role, "AwsSolutions-IAM5", reason, [LOG_STREAMS, "Resource::*"], apply_to_children=True)
    app.synth()
    # The imported log group's ARN matches; the other wildcards (the own log group's streams, the
    # bucket's objects, the key action) are left to the checks.
    imported = f"Resource::arn:<AWS::Partition>:logs:{REGION}:{ACCOUNT}:log-group:/agents/calls:*"
    assert _acknowledged(_default_policy(role)) == {f"AwsSolutions-IAM5[{imported}]": reason}
    assert _acknowledged(role) == {"AwsSolutions-IAM5[Resource::*]": reason}


def test_under_cdk_nag_2_the_suppression_keeps_its_pattern_and_reason() -> None:
    app, stack, role = _stack_with_wildcards()
    reason = "StartQuery reads the named log group's streams."
    nag.acknowledge(role, "AwsSolutions-IAM5", reason, [LOG_STREAMS, "Resource::*"], apply_to_children=True)
    template = app.synth().get_stack_by_name(stack.stack_name).template
    metadata = template["Resources"][stack.get_logical_id(_default_policy(role))]["Metadata"]
    assert metadata["cdk_nag"]["rules_to_suppress"] == [
        {
            "id": "AwsSolutions-IAM5",
            "reason": reason,
            "applies_to": [{"regex": f"/{LOG_STREAMS.pattern}/g"}, "Resource::*"],
        }
    ]
