"""Construct users' configuration is code: ``lkfr`` reads it back from what the functions run with.
examples/consumer_app (two instances in one stack) is synthesized; its template's functions give each
instance's ``EnvironmentConfig`` (``--app``), and the same functions standing in a CloudFormation stack
on moto give it through ``ListStackResources`` and ``GetFunctionConfiguration`` (``--stack``).

The stack on moto holds only the template's functions, their variables resolved as CloudFormation
would (a resource CloudFormation names stands for itself by its logical id) and their code inline:
what ``--stack`` reads is the functions' configuration, which is all there. moto's CloudFormation
drops ``Architectures`` (every function reads back as x86_64), so the stack's processor is not
compared; the template's is.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from aws_cdk.assertions import Template
from moto import mock_aws

from devkit.livekit_clients import create_rooms
from devkit.livekit_local import LocalLiveKit
from livekit_fleet_remediation.cli import deployed_config
from livekit_fleet_remediation.cli.common import UsageError, configuration
from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.fleet_remediation import FleetRemediation

STACK = "VoiceAgents"
REGION = "eu-west-1"
# What the functions carry of an EnvironmentConfig (``mode`` is the kill switch's value at run time).
CARRIED = (
    "region",
    "agent_services",
    "livekit_url",
    "livekit_secret_name",
    "runbook_base_url",
    "runbook_links",
    "reaper",
    "detection",
    "tts_reach",
    "drainer",
    "scan_budget",
    "disruption_window",
)


@pytest.fixture(scope="module")
def consumer(consumer_app: cdk.Stack) -> tuple[dict[str, Any], dict[str, EnvironmentConfig]]:
    """The consumer app's template (the session's one synthesis) and each instance's configuration as
    the construct holds it."""
    stack = consumer_app
    configs = {
        construct.name_prefix: construct.config
        for construct in stack.node.find_all()
        if isinstance(construct, FleetRemediation)
    }
    return Template.from_stack(stack).to_json(), configs


def _carried(config: EnvironmentConfig) -> dict[str, Any]:
    """What the functions carry, each agent service with the sections it runs (its own, else the
    environment's): the functions hold the sections in effect, not where they were written."""
    dumped = config.model_dump(mode="json")
    services = [
        service.identity.model_dump(mode="json")
        | {
            "detection": config.detection_of(service).model_dump(mode="json"),
            "tts_reach": config.tts_reach_of(service).model_dump(mode="json"),
            "drainer": config.drainer_of(service).model_dump(mode="json"),
        }
        for service in config.agent_services
    ]
    return {field: dumped[field] for field in CARRIED} | {"agent_services": services}


@pytest.mark.parametrize("prefix", ["calls", "tutor"])
def test_the_template_gives_back_each_instances_configuration(
    consumer: tuple[dict[str, Any], dict[str, EnvironmentConfig]], prefix: str
) -> None:
    template, configs = consumer
    functions = deployed_config.from_templates([template])
    assert deployed_config.instance_names(functions) == ["calls", "tutor"]
    name, raw = deployed_config.environment_config(functions, prefix, "your CDK app")
    read = EnvironmentConfig.model_validate(raw)
    assert name == prefix
    assert _carried(read) == _carried(configs[prefix])
    assert read.lambda_architecture == configs[prefix].lambda_architecture


def test_two_instances_and_no_env_is_a_usage_error_naming_both(
    consumer: tuple[dict[str, Any], dict[str, EnvironmentConfig]],
) -> None:
    functions = deployed_config.from_templates([consumer[0]])
    with pytest.raises(deployed_config.DeployedConfigError, match="pass --env calls or tutor"):
        deployed_config.environment_config(functions, None, "stack VoiceAgents")


def _deployed_template(template: dict[str, Any], role_arn: str) -> dict[str, Any]:
    """The template's functions as a stack of their own, variables resolved (see the module's text)."""
    resources = {}
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        properties = resource["Properties"]
        variables = properties["Environment"]["Variables"]
        resources[logical_id] = {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "FunctionName": properties["FunctionName"],
                "Role": role_arn,
                "Runtime": properties["Runtime"],
                "Handler": properties["Handler"],
                "Code": {"ZipFile": "def handler(event, context):\n    return {}\n"},
                "Environment": {"Variables": {k: deployed_config._plain(v) for k, v in variables.items()}},
            },
        }
    return {"Resources": resources}


@pytest.fixture
def deployed(consumer: tuple[dict[str, Any], dict[str, EnvironmentConfig]]) -> Iterator[None]:
    with mock_aws():
        role = boto3.client("iam", region_name=REGION).create_role(
            RoleName="functions", AssumeRolePolicyDocument="{}"
        )["Role"]["Arn"]
        boto3.client("cloudformation", region_name=REGION).create_stack(
            StackName=STACK, TemplateBody=json.dumps(_deployed_template(consumer[0], role))
        )
        yield


def _args(**given: Any) -> argparse.Namespace:
    return argparse.Namespace(
        **{"config": None, "stack": None, "app": None, "env": None, "region": REGION} | given
    )


@pytest.mark.parametrize("prefix", ["calls", "tutor"])
def test_the_deployed_stack_gives_back_each_instances_configuration(
    consumer: tuple[dict[str, Any], dict[str, EnvironmentConfig]], deployed: None, prefix: str
) -> None:
    read = configuration(_args(stack=STACK, env=prefix))
    assert read.where == f"stack {STACK}"
    name, config = read.load(None)
    assert name == prefix
    assert _carried(config) == _carried(consumer[1][prefix])
    assert config.account == "123456789012"


def test_a_stack_without_our_functions_is_a_usage_error_that_names_it(deployed: None) -> None:
    boto3.client("cloudformation", region_name=REGION).create_stack(
        StackName="Other", TemplateBody=json.dumps({"Resources": {"T": {"Type": "AWS::SNS::Topic"}}})
    )
    with pytest.raises(UsageError, match="stack Other holds no LiveKit Fleet Remediation function"):
        configuration(_args(stack="Other"))


def test_audit_reads_the_deployed_instance_from_the_stack_alone(
    deployed: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No environments file anywhere: the stack names the instance's functions and its one service."""
    from livekit_fleet_remediation.cli import audit

    monkeypatch.delenv("LKFR_CONFIG", raising=False)
    # The drainer's ledger as the stack on moto names it (its logical id: see the module's text).
    ledger = "RemediationtutorServiceagentsWorkerDrainerLedger8379F2BB"
    boto3.client("dynamodb", region_name=REGION).create_table(
        TableName=ledger,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    logs = boto3.client("logs", region_name=REGION)
    for name in (
        "lkfr-tutor-zombie-reaper",
        "lkfr-tutor-agents-tts-reach-alarm",
        "lkfr-tutor-agents-worker-drainer",
    ):
        logs.create_log_group(logGroupName=f"/aws/lambda/{name}")
    status = audit.main(["--stack", STACK, "--env", "tutor", "--region", REGION, "--hours", "1", "--json"])
    out, err = capsys.readouterr()
    assert status == 0, err
    document = json.loads(out)
    assert document["environment"] == "tutor"
    assert sorted(document["functions"]) == [
        "lkfr-tutor-agents-tts-reach-alarm",
        "lkfr-tutor-agents-worker-drainer",
        "lkfr-tutor-zombie-reaper",
    ]
    assert document["functions"]["lkfr-tutor-agents-worker-drainer"]["ledger_table"] == ledger


def test_undo_asks_the_drainer_the_stack_names_with_no_environments_file(
    deployed: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The drainer's timeout is read from the stack's own function on moto (a wrong name fails
    there); moto runs no Lambda code without Docker, so the invoke itself is a recording stand-in
    that answers the drainer's report: the manual undrain sent once, to that function."""
    from livekit_fleet_remediation.cli import undo
    from livekit_fleet_remediation.cli.invoke import InvokeResult

    monkeypatch.delenv("LKFR_CONFIG", raising=False)
    report = {"function": "worker_drainer", "status": "ok", "mode": "enforce", "candidates": []}
    sent: list[tuple[str, dict[str, Any]]] = []

    def recording_invoker(client: Any, name: str) -> Any:
        def invoke(event: dict[str, Any]) -> InvokeResult:
            sent.append((name, event))
            return InvokeResult(report=report)

        return invoke

    monkeypatch.setattr(undo, "lambda_invoker", recording_invoker)
    status = undo.main(["--stack", STACK, "--env", "tutor", "--region", REGION, "--task", "abc", "--json"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert json.loads(out) == report
    assert sent == [
        ("lkfr-tutor-agents-worker-drainer", {"action": "undrain", "task": "abc", "dry_run": False})
    ]


def test_undo_names_the_stack_when_its_service_has_no_drainer(
    deployed: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from livekit_fleet_remediation.cli import undo

    monkeypatch.delenv("LKFR_CONFIG", raising=False)
    argv = ["--stack", STACK, "--env", "tutor", "--region", REGION, "--task", "abc", "--service", "nope"]
    status = undo.main(argv)
    _, err = capsys.readouterr()
    assert status == 2
    assert "nope" in err


@pytest.mark.livekit
def test_plan_runs_from_the_stack_alone_against_the_real_livekit_server(
    deployed: None,
    livekit_server: LocalLiveKit,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No environments file: the reaper's plan reads the instance's configuration from the stack and
    the rooms from livekit-server (the key from the environment, as a laptop's shell gives it)."""
    from livekit_fleet_remediation.cli import plan

    monkeypatch.delenv("LKFR_CONFIG", raising=False)
    monkeypatch.setenv("LIVEKIT_URL", livekit_server.http_url)
    monkeypatch.setenv("LIVEKIT_API_KEY", livekit_server.api_key)
    monkeypatch.setenv("LIVEKIT_API_SECRET", livekit_server.api_secret)
    room = f"lesson-stack-plan-{uuid.uuid4().hex[:6]}"
    asyncio.run(create_rooms(livekit_server, [room]))
    status = plan.main(["reaper", "--stack", STACK, "--env", "tutor", "--region", REGION, "--json"])
    out, err = capsys.readouterr()
    assert status == 0, err
    document = json.loads(out)
    assert document["mode"] == "dry-run"
    assert document["environment"] == "tutor"
    assert document["actions"] == []
    assert room in {candidate["resource"] for candidate in document["candidates"]}
