"""Every metric the dashboard and the alarms ask for exists, with exactly that identity.

CloudWatch matches a metric by namespace, name and the exact dimension set, so a graph is only as
good as that match. The test synthesizes the staging stack, reads the metrics its dashboard graphs
and its alarms watch, then runs each function's handler in its own process with the environment the
stack deploys for it (``devkit.emf_capture``: moto, the real livekit-server, Powertools writing EMF
to stdout as in Lambda) and checks each of the functions' metrics against the EMF they emitted. The
agents' metrics are checked against the stack's metric filters; ECS Container Insights' against
the documented names and dimensions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from devkit.checkout import checkout_pythonpath
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.contract import metrics as metric_definitions
from fleet_remediation.contract.naming import (
    METRICS_NAMESPACE,
    PER_SERVICE_FUNCTIONS,
    FunctionName,
    lambda_function_name,
)
from livekit_fleet_remediation.config import load_environment
from livekit_fleet_remediation.standalone import build_app
from tests.dashboard_body import MetricIdentity, dashboard_json, graphed_metrics
from tests.example_environments import example_context

REPO = Path(__file__).resolve().parents[2]
REGION = "ap-northeast-2"
MOTO_ACCOUNT = "123456789012"

pytestmark = pytest.mark.livekit


def _service(function: FunctionName) -> str | None:
    """The example environments' one agent service, for the functions it has its own copy of."""
    return "agents" if function in PER_SERVICE_FUNCTIONS else None


def deployed_environment(template: dict[str, Any], function: FunctionName) -> dict[str, str]:
    """The function's deployed variables, each CloudFormation reference replaced by the name of a
    resource the capture script creates in moto."""
    resources = template["Resources"]
    (properties,) = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Function"
        # The example environments' one agent service, "agents", has its own responder and drainer.
        and r["Properties"].get("FunctionName")
        == lambda_function_name("staging", function, _service(function))
    ]
    variables: dict[str, str] = {}
    for name, value in properties["Environment"]["Variables"].items():
        if isinstance(value, str):
            variables[name] = value
            continue
        logical_id = value["Ref"]
        kind = resources[logical_id]["Type"]
        if kind == "AWS::SNS::Topic":
            variables[name] = f"arn:aws:sns:{REGION}:{MOTO_ACCOUNT}:capture-{logical_id}"
        elif kind == "AWS::DynamoDB::Table":
            variables[name] = f"capture-{logical_id}"
        else:
            raise AssertionError(f"{name}: no stand-in for a {kind}")
    return variables


def emitted_metrics(stdout: str) -> set[MetricIdentity]:
    """Every (namespace, name, dimension set) in the EMF documents on ``stdout``."""
    found = set()
    for line in stdout.splitlines():
        if not line.startswith("{") or '"_aws"' not in line:
            continue
        document = json.loads(line)
        for directive in document["_aws"]["CloudWatchMetrics"]:
            for dimension_set in directive["Dimensions"]:
                dimensions = frozenset((key, str(document[key])) for key in dimension_set)
                for metric in directive["Metrics"]:
                    found.add(MetricIdentity(directive["Namespace"], metric["Name"], dimensions))
    return found


def capture(function: FunctionName, template: dict[str, Any], livekit: LocalLiveKit) -> set[MetricIdentity]:
    environment = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": checkout_pythonpath(),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,  # Lambda sets it
        "POWERTOOLS_TRACE_DISABLED": "1",  # no X-Ray daemon here
        **deployed_environment(template, function),
    }
    if "LIVEKIT_URL" in environment:
        environment["LIVEKIT_URL"] = livekit.http_url  # the local server stands in for the deployed one
    done = subprocess.run(
        [sys.executable, "-m", "devkit.emf_capture", function.value, str(livekit.port)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return emitted_metrics(done.stdout)


def alarm_metrics(template: dict[str, Any]) -> list[tuple[str, MetricIdentity]]:
    found = []
    for resource in template["Resources"].values():
        properties = resource.get("Properties", {})
        if resource["Type"] != "AWS::CloudWatch::Alarm" or properties.get("Namespace") != METRICS_NAMESPACE:
            continue
        dimensions = frozenset((d["Name"], d["Value"]) for d in properties.get("Dimensions", []))
        identity = MetricIdentity(METRICS_NAMESPACE, properties["MetricName"], dimensions)
        found.append((f"alarm {properties['AlarmName']}", identity))
    return found


def test_every_metric_the_dashboard_and_alarms_ask_for_is_emitted_with_that_identity(
    livekit_server: LocalLiveKit, tmp_path: Path
) -> None:
    app, stack = build_app("staging", example_context(), str(tmp_path))
    app.synth()
    template = json.loads((tmp_path / f"{stack.stack_name}.template.json").read_text())
    emitted: set[MetricIdentity] = set()
    for function in FunctionName:
        emitted |= capture(function, template, livekit_server)

    wanted = graphed_metrics(dashboard_json(template)) + alarm_metrics(template)
    filters = {
        (t["MetricNamespace"], t["MetricName"])
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Logs::MetricFilter"
        for t in r["Properties"]["MetricTransformations"]
    }
    config = load_environment(example_context(), "staging")
    ecs = frozenset(
        {("ClusterName", config.agent_service.ecs_cluster), ("ServiceName", config.agent_service.ecs_service)}
    )
    # A sparse count is published only when not zero, which the capture runs need not reach: its
    # identity is its definition's, the one the handlers emit it through.
    sparse = {
        MetricIdentity(d.namespace, d.name, frozenset(d.dimensions("staging", f, _service(f)).items()))
        for d in metric_definitions.definitions()
        if d.sparse
        for f in d.functions
    }
    lines, missing = [], []
    for where, identity in wanted:
        if identity.namespace == METRICS_NAMESPACE and identity not in emitted and identity in sparse:
            ok, source = True, "a sparse count's definition (published when not zero)"
        elif identity.namespace == METRICS_NAMESPACE:
            ok, source = identity in emitted, "EMF emitted by the handlers"
        elif identity.namespace == metric_definitions.ECS_CONTAINER_INSIGHTS_NAMESPACE:
            names = {metric_definitions.ECS_RUNNING_TASK_COUNT, metric_definitions.ECS_DESIRED_TASK_COUNT}
            ok, source = identity.name in names and identity.dimensions == ecs, "ECS Container Insights"
        else:
            ok = (identity.namespace, identity.name) in filters and not identity.dimensions
            source = "the stack's metric filters"
        lines.append(f"{'ok  ' if ok else 'MISSING'} {identity}  <- {where} [{source}]")
        if not ok:
            missing.append(str(identity))
    ours = sum(identity.namespace == METRICS_NAMESPACE for _, identity in wanted)
    print("\n".join(lines))
    print(
        f"checked {len(wanted)} metric references ({ours} of the functions' own against "
        f"{len(emitted)} emitted identities): {len(wanted) - len(missing)} matched, {len(missing)} missing"
    )
    assert ours >= 20
    assert missing == [], "\n".join(lines)
