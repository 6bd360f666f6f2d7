"""``python -m devkit.service_limits``: synthesize every environment of the example configuration and the
consumer app, print what the template checks find (``devkit.service_models``, ``devkit.service_quotas``)
and how close each stack comes to the limits that matter most (the figures in
docs/development/service-limits.md). Deploy-time values count by their literal part: lower bounds.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import assertions

from devkit.insights_queries import queries_sent
from devkit.service_models import check_template
from devkit.service_quotas import check_quotas, policy_size
from devkit.template_values import Partial, Resolver, json_text, sample
from livekit_fleet_remediation.config import context_from_file
from livekit_fleet_remediation.standalone import build_app, pinned_context

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_CONFIG = REPO / "examples" / "standalone" / "environments.json"
CONSUMER = REPO / "examples" / "consumer_app"


def stacks(outdir: Path) -> Iterator[tuple[str, cdk.Stack]]:
    context = {**pinned_context(REPO / "cdk.json"), **context_from_file(EXAMPLE_CONFIG)}
    for name in sorted(json.loads(EXAMPLE_CONFIG.read_text())["environments"]):
        app, stack = build_app(name, context, str(outdir / name))
        app.synth()
        yield name, stack
    spec = importlib.util.spec_from_file_location("consumer_app", CONSUMER / "app.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    consumer = module.build(str(outdir / "consumer"), pinned_context(CONSUMER / "cdk.json"))
    consumer.synth()
    (consumer_stack,) = [child for child in consumer.node.children if isinstance(child, cdk.Stack)]
    yield "consumer app", consumer_stack


def headroom(template: Mapping[str, Any], region: str, account: str) -> dict[str, str]:
    """The largest value of each kind in the template, against its limit."""
    resolver = Resolver(template["Resources"], region, account)
    largest: Counter[str] = Counter()

    def note(what: str, value: int) -> None:
        largest[what] = max(largest[what], value)

    for resource in template["Resources"].values():
        kind, properties = resource["Type"], resolver.value(resource.get("Properties", {}))
        if kind == "AWS::Lambda::Function":
            variables = properties["Environment"]["Variables"]
            note("Lambda environment, bytes of 4,096", len(sample(json_text(variables)).encode()))
            deploy_time = sum(isinstance(value, Partial) for value in variables.values())
            note("deploy-time values left out of one environment", deploy_time)
            note(
                "Insights query, characters of 10,000",
                max(len(query) for _, query in queries_sent(variables)),
            )
        if kind == "AWS::Chatbot::CustomAction":
            note(
                "custom-action command, characters of 100",
                len(sample(properties["Definition"]["CommandText"])),
            )
        if kind == "AWS::CloudWatch::CompositeAlarm":
            note("composite alarm rule, characters of 10,240", len(sample(properties["AlarmRule"])))
        if kind == "AWS::Events::Rule" and "EventPattern" in properties:
            note("event pattern, characters of 2,048", len(sample(json_text(properties["EventPattern"]))))
        if kind == "AWS::IAM::Policy":
            note("inline policy, characters of 10,240", policy_size(properties["PolicyDocument"]))
        if kind == "AWS::CloudWatch::Dashboard":
            note("dashboard widgets, of 500", len(json.loads(sample(properties["DashboardBody"]))["widgets"]))
    return {name: f"{value:,}" for name, value in sorted(largest.items())}


def main() -> int:
    failed = False
    with tempfile.TemporaryDirectory() as outdir:
        for name, stack in stacks(Path(outdir)):
            template = assertions.Template.from_stack(stack).to_json()
            findings = [
                *check_template(template, stack.region, stack.account),
                *check_quotas(template, stack.region, stack.account),
            ]
            failed = failed or bool(findings)
            print(f"## {name}: {len(findings)} finding(s)")
            for finding in findings:
                print(f"- {finding}")
            for limit, value in headroom(template, stack.region, stack.account).items():
                print(f"  largest {limit}: {value}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
