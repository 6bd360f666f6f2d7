"""The scheduled drill's deploy artifact, run as Lambda runs it.

The example ``staging`` with a weekly drill (``drills.schedule``: tts-silence, one minute) is
synthesized offline from the checkout; the ``scheduled_drill`` function's code asset, layers, handler
string and environment come from that template, and it runs under AWS's Lambda Runtime Interface
Emulator with ``awslambdaric``, invoked over the Invoke API with the event its own schedule rule
sends. AWS is moto in server mode on loopback: the template's stores and switches, and the agents'
ECS service, first with no running task, then with two.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests

from devkit.aws_standins import AwsStandIns, loopback_aws
from devkit.lambda_artifact import FunctionArtifact, synthesize
from devkit.lambda_emulator import (
    RIE_FUNCTION_ACCOUNT,
    RIE_FUNCTION_REGION,
    EmulatedFunction,
    emulated_from_template,
)
from fleet_remediation.contract.drills import DRILL_TAG
from livekit_fleet_remediation.offline.eventbridge_events import schedule_event
from tests.example_environments import staging_with_drills

ENV_NAME = "staging"
DRILL = {"enabled": True, "schedule": {"fault": "tts-silence", "minutes": 1}}
INVOKE_TIMEOUT_SECONDS = 30.0
RIE_START_TIMEOUT_SECONDS = 10.0
PYTHON_OPTIONS = ("-W", "error::DeprecationWarning", "-W", "error::PendingDeprecationWarning")


@dataclass
class DrillRuns:
    """The function's reports in its own dry run, invoked in this order: with no running task, with a
    stale event, and with two running tasks; the drill tags on those tasks afterwards."""

    function: FunctionArtifact
    no_task: dict[str, Any]
    stale: dict[str, Any]
    dry_run: dict[str, Any]
    drill_tags: list[str]


def _invoke(emulated: EmulatedFunction, event: dict[str, Any]) -> dict[str, Any]:
    invocation = emulated.invoke(event, timeout=INVOKE_TIMEOUT_SECONDS)
    assert invocation.status_code == 200, emulated.log_tail()
    assert invocation.function_error is None, invocation.body
    report: dict[str, Any] = invocation.body
    return report


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DrillRuns]:
    workdir = tmp_path_factory.mktemp("scheduled-drill-smoke")
    config = workdir / "environments.json"
    config.write_text(json.dumps(staging_with_drills(DRILL)))
    assembly = synthesize(ENV_NAME, workdir / "cdk.out", config=config)
    (function,) = [f for f in assembly.functions() if f.package == "scheduled_drill"]
    (rule,) = assembly.schedule_rules(function)
    env = function.environment
    with contextlib.ExitStack() as stack:
        endpoint, xray_address = stack.enter_context(loopback_aws())
        # Started tasks stay RUNNING (moto otherwise moves a task one lifecycle step per DescribeTasks).
        requests.post(
            f"{endpoint}/moto-api/state-manager/set-transition",
            json={"model_name": "ecs::task", "transition": {"progression": "manual", "times": 1_000_000}},
            timeout=5,
        ).raise_for_status()
        standins = AwsStandIns(endpoint_url=endpoint, region=RIE_FUNCTION_REGION)
        standins.create_referenced(assembly, [function])
        standins.create_parameters(assembly)
        standins.create_ecs_service(env["ECS_CLUSTER"], env["ECS_SERVICE"])
        # Its own switch in dry-run from the first invoke: a warm function keeps the switch it read.
        standins.client("ssm").put_parameter(
            Name=env["FUNCTION_MODE_PARAMETER_NAME"], Value="dry-run", Overwrite=True
        )
        emulated = emulated_from_template(
            function,
            standins.resolve(function, {}),
            workdir,
            "scheduled_drill",
            region=RIE_FUNCTION_REGION,
            xray_daemon_address=xray_address,
            aws_endpoint_url=endpoint,
            python_options=PYTHON_OPTIONS,
        )
        stack.callback(emulated.stop)
        emulated.start(RIE_START_TIMEOUT_SECONDS)
        rule_name = f"{assembly.stack_name}-{rule}"

        def event(at: datetime | None = None) -> dict[str, Any]:
            return schedule_event(rule_name, account=RIE_FUNCTION_ACCOUNT, region=RIE_FUNCTION_REGION, now=at)

        no_task = _invoke(emulated, event())
        stale = _invoke(emulated, event(datetime.now(UTC) - timedelta(minutes=30)))
        ecs = standins.client("ecs")
        (family,) = ecs.list_task_definitions(familyPrefix=env["ECS_SERVICE"])["taskDefinitionArns"]
        tasks = ecs.run_task(
            cluster=env["ECS_CLUSTER"],
            taskDefinition=family,
            count=2,
            launchType="FARGATE",
            group=f"service:{env['ECS_SERVICE']}",
        )["tasks"]
        dry_run = _invoke(emulated, event())
        drill_tags = [
            t["value"]
            for task in tasks
            for t in ecs.list_tags_for_resource(resourceArn=task["taskArn"])["tags"]
            if t["key"] == DRILL_TAG
        ]
        yield DrillRuns(function, no_task, stale, dry_run, drill_tags)


def test_with_no_running_task_the_drill_is_refused_and_the_refusal_is_its_report(runs: DrillRuns) -> None:
    report = runs.no_task
    assert report["function"] == "scheduled_drill"
    assert report["environment"] == ENV_NAME
    assert report["trigger"]["kind"] == "schedule"
    assert [e["code"] for e in report["errors"]] == ["NoTaskToDrill"], report["errors"]
    assert report["actions"] == []


def test_an_event_older_than_its_route_admits_is_refused_at_the_door(runs: DrillRuns) -> None:
    assert [e["code"] for e in runs.stale["errors"]] == ["UntrustedEvent"], runs.stale["errors"]
    assert "stale" in runs.stale["errors"][0]["message"]
    assert runs.stale["actions"] == []


def test_in_its_own_dry_run_it_names_the_task_it_would_drill_and_tags_nothing(runs: DrillRuns) -> None:
    report = runs.dry_run
    assert report["errors"] == []
    assert report["mode"] == "dry-run"
    assert [c["decision"] for c in report["candidates"]] == ["would-act"], report["candidates"]
    assert report["actions"] == []
    assert runs.drill_tags == []
