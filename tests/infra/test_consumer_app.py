"""examples/consumer_app: a team's own CDK app with two ``FleetRemediation`` instances in one stack
(one covering two agent services), on existing resources by reference. It synthesizes cdk-nag
clean under the feature flags its cdk.json pins and under those a fresh `cdk init` writes, and the
two instances name nothing alike."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match, Template

from livekit_fleet_remediation.standalone import pinned_context
from tests.example_environments import ROOT_CDK_JSON
from tests.feature_flags import recommended_flags
from tests.infra.conftest import CONSUMER, synth_consumer
from tests.resource_names import named_resources, retained_with_fixed_names

FLAG_SETS = {
    "pinned": lambda: pinned_context(CONSUMER / "cdk.json"),
    "cdk-init": recommended_flags,
}


@pytest.fixture(scope="module", params=sorted(FLAG_SETS))
def consumer(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, consumer_app: cdk.Stack
) -> cdk.Stack:
    if request.param == "pinned":
        return consumer_app
    context: dict[str, Any] = FLAG_SETS[request.param]()
    return synth_consumer(tmp_path_factory.mktemp("consumer"), context)


def test_the_example_pins_the_same_feature_flags_as_the_standalone_app() -> None:
    pinned = pinned_context(CONSUMER / "cdk.json")
    assert pinned
    assert all(flag.startswith("@aws-cdk") for flag in pinned)
    assert pinned == pinned_context(ROOT_CDK_JSON)
    assert json.loads((CONSUMER / "cdk.json").read_text())["app"].endswith("app.py")


def test_the_consumer_app_is_cdk_nag_clean(consumer: cdk.Stack) -> None:
    annotations = Annotations.from_stack(consumer)
    for found in (annotations.find_error, annotations.find_warning):
        assert found("*", Match.any_value()) == []


def test_two_instances_name_nothing_alike(consumer: cdk.Stack) -> None:
    template = Template.from_stack(consumer).to_json()
    names = named_resources(template)
    assert len(names) > 60
    doubled = [name for name, count in Counter(names.values()).items() if count > 1]
    assert doubled == []
    for prefix in ("calls", "tutor"):
        assert f"AWS::Lambda::Function lkfr-{prefix}-zombie-reaper" in names.values()
        assert f"AWS::SSM::Parameter /livekit-fleet-remediation/{prefix}/mode" in names.values()
    # Metric filters write to a namespace per instance and agent service ("calls" covers two): none
    # adds to another's metrics.
    namespaces = {
        transformation["MetricNamespace"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Logs::MetricFilter"
        for transformation in resource["Properties"]["MetricTransformations"]
    }
    assert namespaces == {
        "LiveKitAgents/calls/inbound",
        "LiveKitAgents/calls/outbound",
        "LiveKitAgents/tutor/agents",
    }


def test_nothing_retained_has_a_fixed_name(consumer: cdk.Stack) -> None:
    assert retained_with_fixed_names(Template.from_stack(consumer).to_json()) == []
