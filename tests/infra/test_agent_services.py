"""Several agent services in one deployment, as the consumer app's "calls" instance synthesizes them
(inbound and outbound, each its own ECS service and log group): each service has its own
detection, responder and drainer, named after it; the reaper, the kill switch and the dashboard
are shared; a suspect-worker event reaches only its own service's drainer; the dashboard's rows
name their service. cdk-nag and name collisions over the whole app: ``test_consumer_app``."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template
from moto.events.models import EventPattern

from fleet_remediation.contract.naming import (
    ECS_SERVICE_NAME_TAG,
    EVENT_SOURCE,
    SUSPECT_WORKER_DETAIL_TYPE,
    service_mode_parameter_name,
)
from livekit_fleet_remediation import EnvironmentConfig, FleetRemediation
from livekit_fleet_remediation.config import ConfigError
from tests.dashboard_body import dashboard_json, graphed_metrics
from tests.example_environments import REPO

SERVICES = ("inbound", "outbound")
PREFIX = "calls"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    spec = importlib.util.spec_from_file_location("consumer_app", REPO / "examples/consumer_app/app.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app = module.build(str(tmp_path_factory.mktemp("consumer")))
    (stack,) = [child for child in app.node.children if isinstance(child, cdk.Stack)]
    return Template.from_stack(stack).to_json()


def _of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


def _function(template: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    (found,) = [
        (k, r["Properties"])
        for k, r in _of_type(template, "AWS::Lambda::Function").items()
        if r["Properties"].get("FunctionName") == name
    ]
    return found


def test_each_service_has_its_own_responder_and_drainer_and_the_reaper_is_shared(
    template: dict[str, Any],
) -> None:
    names = {
        r["Properties"].get("FunctionName") for r in _of_type(template, "AWS::Lambda::Function").values()
    }
    calls = sorted(name for name in names if isinstance(name, str) and name.startswith(f"lkfr-{PREFIX}-"))
    assert calls == [
        "lkfr-calls-inbound-tts-reach-alarm",
        "lkfr-calls-inbound-worker-drainer",
        "lkfr-calls-outbound-tts-reach-alarm",
        "lkfr-calls-outbound-worker-drainer",
        "lkfr-calls-zombie-reaper",
    ]
    for service in SERVICES:
        _, drainer = _function(template, f"lkfr-{PREFIX}-{service}-worker-drainer")
        variables = drainer["Environment"]["Variables"]
        assert variables["AGENT_SERVICE"] == service
        assert variables["ECS_SERVICE"] == f"{PREFIX}-{service}-agent"
        assert variables["AGENT_LOG_GROUP"] == f"/agents/{PREFIX}/{service}"
        assert variables["SERVICE_MODE_PARAMETER_NAME"] == service_mode_parameter_name(PREFIX, service)
        # One kill switch above both: the environment's, the same in every function.
        assert variables["MODE_PARAMETER_NAME"] == f"/livekit-fleet-remediation/{PREFIX}/mode"
        # Reserved concurrency per service: one service's burst cannot starve the other's drainer.
        assert drainer["ReservedConcurrentExecutions"] == 2
    # One scan budget for the environment: every service's responder and drainer count into one tally.
    tallies = {
        json.dumps(
            _function(template, f"lkfr-{PREFIX}-{service}-{slug}")[1]["Environment"]["Variables"][
                "SCAN_BUDGET_TABLE_NAME"
            ]
        )
        for service in SERVICES
        for slug in ("tts-reach-alarm", "worker-drainer")
    }
    assert len(tallies) == 1
    _, reaper = _function(template, f"lkfr-{PREFIX}-zombie-reaper")
    watched = json.loads(reaper["Environment"]["Variables"]["AGENT_SERVICES"])
    assert [service["name"] for service in watched] == list(SERVICES)
    assert all(
        set(service) == {"name", "ecs_cluster", "ecs_service", "agent_log_group"} for service in watched
    )


def test_each_service_has_its_own_pages_and_kill_switch(template: dict[str, Any]) -> None:
    pages = {
        r["Properties"]["AlarmName"] for r in _of_type(template, "AWS::CloudWatch::CompositeAlarm").values()
    }
    for service in SERVICES:
        assert f"livekit-{PREFIX}-{service}-vad-slow-inference" in pages
        assert f"livekit-{PREFIX}-{service}-tts-reach" in pages
    switches = {r["Properties"]["Name"] for r in _of_type(template, "AWS::SSM::Parameter").values()}
    assert {service_mode_parameter_name(PREFIX, s) for s in SERVICES} <= switches
    # Each service's metric filters write to its own namespace, on its own log group.
    filters = _of_type(template, "AWS::Logs::MetricFilter").values()
    for service in SERVICES:
        mine = [f for f in filters if f["Properties"]["LogGroupName"] == f"/agents/{PREFIX}/{service}"]
        assert mine
        namespaces = {t["MetricNamespace"] for f in mine for t in f["Properties"]["MetricTransformations"]}
        assert namespaces == {f"LiveKitAgents/{PREFIX}/{service}"}


def _suspect_event(service: str) -> dict[str, Any]:
    return {
        "source": EVENT_SOURCE,
        "detail-type": SUSPECT_WORKER_DETAIL_TYPE,
        "detail": {"environment": PREFIX, "agent_service": service, "task_id": "0" * 32},
    }


def test_a_suspect_worker_event_is_routed_to_its_own_services_drainer_only(template: dict[str, Any]) -> None:
    rules = _of_type(template, "AWS::Events::Rule").values()
    for service in SERVICES:
        drainer_id, _ = _function(template, f"lkfr-{PREFIX}-{service}-worker-drainer")
        routed = [
            rule["Properties"]["EventPattern"]
            for rule in rules
            if any(
                t["Arn"] == {"Fn::GetAtt": [drainer_id, "Arn"]} for t in rule["Properties"].get("Targets", [])
            )
            and "EventPattern" in rule["Properties"]
            and rule["Properties"]["EventPattern"].get("detail-type") == [SUSPECT_WORKER_DETAIL_TYPE]
        ]
        (pattern,) = routed
        other = next(s for s in SERVICES if s != service)
        assert EventPattern.load(json.dumps(pattern)).matches_event(_suspect_event(service))
        assert not EventPattern.load(json.dumps(pattern)).matches_event(_suspect_event(other))


def _policy_statements(template: dict[str, Any], role_of: str) -> list[dict[str, Any]]:
    return [
        statement
        for policy in _of_type(template, "AWS::IAM::Policy").values()
        if {"Ref": role_of} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_each_drainer_may_change_only_its_own_services_tasks(template: dict[str, Any]) -> None:
    for service in SERVICES:
        _, drainer = _function(template, f"lkfr-{PREFIX}-{service}-worker-drainer")
        statements = _policy_statements(template, drainer["Role"]["Fn::GetAtt"][0])
        conditioned = [s["Condition"] for s in statements if "ecs:StopTask" in json.dumps(s.get("Action"))]
        assert conditioned
        for condition in conditioned:
            assert (
                condition["StringEquals"][f"aws:ResourceTag/{ECS_SERVICE_NAME_TAG}"]
                == f"{PREFIX}-{service}-agent"
            )


def test_the_one_dashboard_has_rows_naming_each_service(template: dict[str, Any]) -> None:
    body = dashboard_json(template, f"livekit-{PREFIX}-fleet")
    titles = [
        w.get("properties", {}).get("title") or w.get("properties", {}).get("markdown", "")
        for w in body["widgets"]
    ]
    for service in SERVICES:
        assert any(t.startswith(f"## Agent service `{service}`") for t in titles)
        own = [t for t in titles if t.startswith(f"{service}: ")]
        assert len(own) >= 6, own
        assert any(t.startswith(f"### {service}: per worker (saved Logs Insights queries)") for t in titles)
    # A service's graphs ask for that service's series (the agent_service dimension), never the other's.
    for title, identity in graphed_metrics(body):
        dimensions = dict(identity.dimensions)
        for service in SERVICES:
            if title.startswith(f"{service}: ") and identity.namespace == "LiveKitFleetRemediation":
                assert dimensions["agent_service"] == service, (title, identity)
            if title.startswith(f"{service}: ") and identity.namespace.startswith("LiveKitAgents/"):
                assert identity.namespace == f"LiveKitAgents/{PREFIX}/{service}", (title, identity)


def _two_services(**second: Any) -> EnvironmentConfig:
    service = {"ecs_cluster": "agents", "ecs_service": "in", "agent_log_group": "/agents/in"}
    return EnvironmentConfig.model_validate(
        {
            "region": "eu-west-1",
            "agent_services": [{**service, "name": "inbound"}, {**service, **second}],
            "livekit_url": "https://livekit.example.com",
            "livekit_secret_name": "livekit",
            "runbook_base_url": "https://runbooks.example.com",
        }
    )


def test_a_name_over_an_aws_limit_fails_synth_naming_the_field_to_shorten() -> None:
    config = _two_services(name="outbound-calls-overflow")
    stack = cdk.Stack(cdk.App(), "Team", env=cdk.Environment(account="123456789012", region="eu-west-1"))
    with pytest.raises(ConfigError) as refused:
        FleetRemediation(stack, "Remediation", name_prefix="production-voice-agents", config=config)
    message = str(refused.value)
    too_long = "lkfr-production-voice-agents-outbound-calls-overflow"
    assert message.startswith(
        f"agent_services[1].name: {too_long}-tts-reach-alarm (68 > 64), {too_long}-worker-drainer (67 > 64): "
    )
    assert "shorten the agent service's name 'outbound-calls-overflow' or the environment's" in message


def test_two_services_of_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match="agent service names must differ: inbound used more than once"):
        _two_services(name="inbound")


def test_a_service_may_carry_its_own_sections_and_the_rest_are_the_environments() -> None:
    config = _two_services(name="outbound", drainer={"schedule_minutes": 5})
    inbound, outbound = (config.for_service(service) for service in config.agent_services)
    assert outbound.drainer.schedule_minutes == 5
    assert inbound.drainer == config.drainer
    assert outbound.detection == inbound.detection == config.detection
    assert [s.name for s in outbound.agent_services] == ["outbound"]
