"""Two agent services in one environment, each with its own drainer, on moto ECS, DynamoDB, SNS and
SSM with the real livekit-server behind both drainers (the DrainerWorld: ``agents``, and a second
ECS service ``outbound`` in the same cluster, with its own ledger table).

A suspect-worker event for one service is refused at the other's door (``OtherAgentService``) and
changes nothing; the same event at its own drainer acts. Each drainer's messages and reports name
its service. The environment's switch turns both drainers off; a service's switch only its own.
moto lacks ECS task protection and the managed-tags setting: the DrainerWorld's named fakes
(``devkit.fakes.ecs_fakes``) stand in for those, as in every drainer test.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from devkit.fakes.drainer_world import (
    CLUSTER,
    MODE_PARAMETER,
    TOPIC,
    DrainerWorld,
    moto_world,
    suspect_event,
)
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.contract.naming import (
    FunctionName,
    function_mode_parameter_name,
    lambda_function_name,
    service_mode_parameter_name,
)
from fleet_remediation.core.kill_switch import SsmModeSwitch
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from worker_drainer import handler
from worker_drainer.adapters.ecs_tasks import BotoEcsTasks
from worker_drainer.adapters.ledger import DynamoLedger
from worker_drainer.adapters.outbox import DynamoOutbox, ledger_once_guard
from worker_drainer.decide.task_tags import STATE_TAG
from worker_drainer.dependencies import DrainerDependencies

pytestmark = pytest.mark.livekit

ENV = "it"
AGENTS, OUTBOUND = "agents", "outbound"
OUTBOUND_ECS_SERVICE = "outbound-svc"
OUTBOUND_TABLE = "it-outbound-drainer-ledger"
DRAINER_SWITCH = function_mode_parameter_name(ENV, FunctionName.WORKER_DRAINER)


@dataclasses.dataclass
class TwoServices:
    world: DrainerWorld
    outbound_tasks: list[str]

    def switch(self, service: str) -> SsmModeSwitch:
        """What a service's drainer reads at cold start: the environment's, the drainer's and the
        service's own switch."""
        return SsmModeSwitch(
            MODE_PARAMETER,
            DRAINER_SWITCH,
            client=boto3.client("ssm"),
            service_parameter_name=service_mode_parameter_name(ENV, service),
            max_age_seconds=0,
        )

    def deps(self, service: str) -> DrainerDependencies:
        base = self.world.dependencies()
        if service == AGENTS:
            return dataclasses.replace(base, mode_switch=self.switch(AGENTS))
        settings = base.settings.model_copy(
            update={
                "agent_service": OUTBOUND,
                "ecs_service": OUTBOUND_ECS_SERVICE,
                "ledger_table_name": OUTBOUND_TABLE,
                "service_mode_parameter_name": service_mode_parameter_name(ENV, OUTBOUND),
            }
        )
        return dataclasses.replace(
            base,
            settings=settings,
            mode_switch=self.switch(OUTBOUND),
            ecs=BotoEcsTasks(CLUSTER, OUTBOUND_ECS_SERVICE, client=self.world.drainer_ecs_client()),
            ledger=DynamoLedger(OUTBOUND_TABLE, OUTBOUND_ECS_SERVICE),
            once=ledger_once_guard(OUTBOUND_TABLE),
            outbox=DynamoOutbox(OUTBOUND_TABLE),
        )

    def invoke(self, service: str, event: dict[str, Any]) -> dict[str, Any]:
        context = LocalLambdaContext()
        name = lambda_function_name(ENV, FunctionName.WORKER_DRAINER, service)
        context.invoked_function_arn = f"arn:aws:lambda:eu-west-1:123456789012:function:{name}"
        return dict(handler.lambda_handler(event, context, dependencies=self.deps(service)))

    def ledger_items(self) -> int:
        return int(boto3.client("dynamodb").scan(TableName=OUTBOUND_TABLE, Select="COUNT")["Count"])


def _outbound_service(world: DrainerWorld) -> list[str]:
    """A second agent service in the world's cluster, started as ECS would, with its own ledger."""
    ecs = world.ecs_client
    ecs.create_service(
        cluster=CLUSTER,
        serviceName=OUTBOUND_ECS_SERVICE,
        taskDefinition="agent",
        desiredCount=3,
        enableECSManagedTags=True,
    )
    arns = [
        t["taskArn"]
        for t in ecs.run_task(
            cluster=CLUSTER,
            taskDefinition="agent",
            count=3,
            launchType="FARGATE",
            group=f"service:{OUTBOUND_ECS_SERVICE}",
        )["tasks"]
    ]
    ecs.update_task_protection(cluster=CLUSTER, tasks=arns, protectionEnabled=True)
    boto3.client("dynamodb").create_table(
        TableName=OUTBOUND_TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    ssm = boto3.client("ssm")
    for name in (DRAINER_SWITCH, *(service_mode_parameter_name(ENV, s) for s in (AGENTS, OUTBOUND))):
        ssm.put_parameter(Name=name, Value="enforce", Type="String")
    return [arn.rsplit("/", 1)[1] for arn in arns]


@pytest.fixture
def two(livekit_server: LocalLiveKit) -> Iterator[TwoServices]:
    with moto_world(livekit_server) as world:
        yield TwoServices(world, _outbound_service(world))


def _desired(world: DrainerWorld, service: str) -> int:
    found = world.ecs_client.describe_services(cluster=CLUSTER, services=[service])["services"][0]
    return int(found["desiredCount"])


def _untouched(two: TwoServices) -> bool:
    world = two.world
    return all(STATE_TAG not in world.tags(task) for task in [*world.task_ids, *two.outbound_tasks])


def test_a_suspect_worker_event_for_one_service_is_refused_by_the_others_drainer_and_changes_nothing(
    two: TwoServices,
) -> None:
    world = two.world
    suspect = world.task_ids[1]
    world.slow(suspect, count=3, minutes=25, delay=0.5)
    desired = (_desired(world, "agent-svc"), _desired(world, OUTBOUND_ECS_SERVICE))

    refused = two.invoke(OUTBOUND, suspect_event(suspect, world.now, service=AGENTS))
    assert refused["agent_service"] == OUTBOUND
    assert refused["status"] == "failed"
    (error,) = refused["errors"]
    assert error["code"] == "OtherAgentService"
    assert error["resource"] == suspect
    assert "names agent service 'agents', this drainer serves 'outbound'" in error["message"]
    assert refused["actions"] == []
    assert refused["candidates"] == []
    assert _untouched(two)
    assert (_desired(world, "agent-svc"), _desired(world, OUTBOUND_ECS_SERVICE)) == desired
    assert two.ledger_items() == 0
    assert world.notifications() == []

    # The same event at its own service's drainer is taken: the suspect is cordoned, nothing else.
    taken = two.invoke(AGENTS, suspect_event(suspect, world.now, service=AGENTS))
    assert taken["agent_service"] == AGENTS
    assert [(a["resource"], a["action"], a["outcome"]) for a in taken["actions"]] == [
        (suspect, "cordon", "done")
    ]
    assert world.tags(suspect)[STATE_TAG] == "draining"
    assert all(STATE_TAG not in world.tags(task) for task in two.outbound_tasks)


def test_each_drainers_messages_name_its_service_and_undo_through_its_own_drainer(two: TwoServices) -> None:
    world = two.world
    for service, task in ((AGENTS, world.task_ids[0]), (OUTBOUND, two.outbound_tasks[0])):
        report = two.invoke(service, {"action": "drain", "task": task, "dry_run": False})
        assert report["agent_service"] == service
        assert [(a["action"], a["outcome"]) for a in report["actions"]] == [("cordon", "done")]
        (envelope,) = world.received(TOPIC)
        assert envelope["Subject"] == f"[{ENV}/{service}] worker drainer cordoned task {task[:8]}"
        assert envelope["MessageAttributes"]["agent_service"]["Value"] == service
        text = envelope["Message"]
        assert f"worker_drainer · agent service {service}" in text
        drainer = lambda_function_name(ENV, FunctionName.WORKER_DRAINER, service)
        undo = next(line for line in text.splitlines() if "aws lambda invoke" in line)
        assert f"--function-name {drainer} " in undo
        assert json.loads(undo.split("--payload '")[1].split("'")[0])["task"] == task


def test_the_environments_switch_turns_both_drainers_off_and_a_services_switch_only_its_own(
    two: TwoServices,
) -> None:
    world = two.world
    drains = {AGENTS: world.task_ids[2], OUTBOUND: two.outbound_tasks[2]}

    def drain(service: str) -> dict[str, Any]:
        return two.invoke(service, {"action": "drain", "task": drains[service], "dry_run": False})

    world.set_mode("off")
    for service in (AGENTS, OUTBOUND):
        report = drain(service)
        assert (report["mode"], report["actions"]) == ("off", [])
    assert _untouched(two)

    world.set_mode("enforce")
    ssm = boto3.client("ssm")
    ssm.put_parameter(Name=service_mode_parameter_name(ENV, OUTBOUND), Value="off", Overwrite=True)
    off, on = drain(OUTBOUND), drain(AGENTS)
    assert (off["mode"], off["actions"]) == ("off", [])
    assert on["mode"] == "enforce"
    assert [(a["action"], a["outcome"]) for a in on["actions"]] == [("cordon", "done")]
    assert STATE_TAG not in world.tags(drains[OUTBOUND])

    # The drainer's own switch is one for both services' drainers.
    ssm.put_parameter(Name=service_mode_parameter_name(ENV, OUTBOUND), Value="enforce", Overwrite=True)
    ssm.put_parameter(Name=DRAINER_SWITCH, Value="dry-run", Overwrite=True)
    for service in (AGENTS, OUTBOUND):
        assert drain(service)["mode"] == "dry-run"
    assert STATE_TAG not in world.tags(drains[OUTBOUND])
