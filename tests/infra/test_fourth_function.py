"""A fourth function from a spec alone (tests/fixtures/fourth_function/room_census): its construct
synthesizes it with everything the built-in three get, and the shared handler answers a manual event
and a forged one with one report each."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import assertions

from devkit.fakes.livekit import InMemoryRoomService, room
from fleet_remediation.contract.action_events import ACTION_EVENT_DETAIL_TYPE
from fleet_remediation.core.report_model import Mode
from livekit_fleet_remediation.config import load_environment
from livekit_fleet_remediation.constructs.remediation_function import RemediationFunction, deployed_settings
from livekit_fleet_remediation.offline.fixed_mode import FixedModeSwitch
from livekit_fleet_remediation.offline.lambda_context import LOCAL_ACCOUNT, LocalLambdaContext, local_region
from livekit_fleet_remediation.standalone import build_app
from tests.example_environments import example_context

FUNCTIONS = Path(__file__).resolve().parents[1] / "fixtures" / "fourth_function"


@pytest.fixture
def census(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(FUNCTIONS))
    return importlib.import_module("room_census.handler")


def test_the_fourth_function_synthesizes_through_its_construct(census: Any, tmp_path: Path) -> None:
    _, stack = build_app("staging", example_context(), str(tmp_path))
    config = load_environment(example_context(), "staging")
    settings = deployed_settings(
        census.CensusSettings,
        env_name="staging",
        config=config,
        notifications=stack.remediation.notifications,
        kill_switch=stack.remediation.kill_switch,
        livekit_url=config.livekit_url,
        livekit_secret_id=config.livekit_secret_name,
    )
    RemediationFunction(
        stack,
        "RoomCensus",
        function=census.CensusName.ROOM_CENSUS,
        settings=settings,
        description="A census of crowded rooms",
        layers=stack.remediation.layers,
        notifications=stack.remediation.notifications,
        kill_switch=stack.remediation.kill_switch,
        key=stack.remediation.key,
        log_retention_days=14,
        functions_dir=FUNCTIONS,
    )
    template = assertions.Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "FunctionName": "lkfr-staging-room-census",
            "Handler": "room_census.handler.lambda_handler",
            "Timeout": 60,
            "DeadLetterConfig": assertions.Match.object_like({}),
            "Environment": {"Variables": assertions.Match.object_like({"ENVIRONMENT_NAME": "staging"})},
        },
    )
    template.has_resource_properties(
        "AWS::SSM::Parameter", {"Name": "/livekit-fleet-remediation/staging/room-census/mode"}
    )
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm", {"AlarmName": "lkfr-staging-room-census-failed-reports"}
    )
    template.has_resource_properties(
        "AWS::Logs::LogGroup", {"LogGroupName": "/aws/lambda/lkfr-staging-room-census"}
    )
    policies = template.find_resources("AWS::IAM::Policy")
    census_policy = next(p for name, p in policies.items() if name.startswith("RoomCensus"))
    statements = census_policy["Properties"]["PolicyDocument"]["Statement"]
    assert any(
        s.get("Condition", {}).get("StringEquals", {}).get("events:detail-type") == ACTION_EVENT_DETAIL_TYPE
        for s in statements
    )


def test_the_shared_handler_answers_a_manual_event_and_a_forged_one_with_one_report_each(census: Any) -> None:
    rooms = InMemoryRoomService([room("lesson-big", None, participants=12), room("lesson-small", None)])
    settings = census.CensusSettings.model_validate(
        {
            "environment_name": "unit",
            "mode_parameter_name": "/livekit-fleet-remediation/unit/mode",
            "notification_topic_arn": "arn:aws:sns:eu-west-1:123456789012:t",
            "runbook_base_url": "https://runbooks.example.com/repo",
            "livekit_url": "http://127.0.0.1:7880",
            "livekit_secret_id": "unit/livekit",
        }
    )
    deps = census.CensusDependencies(settings, FixedModeSwitch(Mode.ENFORCE), lambda: rooms)
    manual = census.lambda_handler({"dry_run": True}, LocalLambdaContext(), dependencies=deps)
    assert manual["function"] == "room_census"
    assert manual["summary"] == {"rooms": 2, "crowded": 1}
    assert [c["resource"] for c in manual["candidates"]] == ["lesson-big"]
    forged = {
        "version": "0",
        "id": "f",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "999999999999",
        "time": "2026-09-15T17:37:00Z",
        "region": local_region(),
        "resources": [f"arn:aws:events:{local_region()}:999999999999:rule/census"],
        "detail": {},
    }
    refused = census.lambda_handler(forged, LocalLambdaContext(), dependencies=deps)
    ((error),) = refused["errors"]
    assert error["code"] == "UntrustedEvent"
    assert f"ours is {LOCAL_ACCOUNT}" in error["message"]
    assert refused["candidates"] == []
    assert refused["summary"] == {}
