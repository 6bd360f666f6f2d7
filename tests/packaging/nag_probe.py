"""Run by an installed environment's Python (tests/packaging/test_dependency_ranges.py), with
whichever cdk-nag major that end installs: a role with two wildcard resources, one acknowledged through
``livekit_fleet_remediation.nag`` by pattern (the construct's own form), one left unacknowledged, and
the AwsSolutions checks applied as the example app applies them. Prints, as JSON, the cdk-nag major
and the findings the checks reported: cdk-nag 2 writes them as the stack's error messages, cdk-nag 3
fails the synth with a validation report."""

from __future__ import annotations

import json
import re
import sys
from importlib.metadata import version
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import cx_api

from livekit_fleet_remediation.nag import acknowledge, apply_aws_solutions_checks

LOG_STREAMS = re.compile(r"^Resource::arn:(<AWS::Partition>|aws[a-z-]*):logs:.*:log-group:.*:\*$")


def main(outdir: Path) -> None:
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Probe", env=cdk.Environment(account="123456789012", region="eu-west-1"))
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    log_group = f"arn:{cdk.Aws.PARTITION}:logs:eu-west-1:123456789012:log-group:/agents:*"
    role.add_to_policy(iam.PolicyStatement(actions=["logs:StartQuery"], resources=[log_group]))
    role.add_to_policy(iam.PolicyStatement(actions=["xray:PutTraceSegments"], resources=["*"]))
    reason = "StartQuery reads the agents' log group and its streams."
    acknowledge(role, "AwsSolutions-IAM5", reason, [LOG_STREAMS], apply_to_children=True)
    apply_aws_solutions_checks(app)
    try:
        assembly = app.synth()
        messages = assembly.get_stack_by_name("Probe").messages
        errors = [m for m in messages if m.level == cx_api.SynthesisMessageLevel.ERROR]
        reported = [str(m.entry.data).split(": ", 1)[0] for m in errors]
    except RuntimeError:
        report = json.loads((outdir / "validation-report.json").read_text())
        reported = [v["ruleName"] for plugin in report["pluginReports"] for v in plugin["violations"]]
    print(json.dumps({"cdk_nag": version("cdk-nag"), "reported": sorted(reported)}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
