"""The world a drill runs in on moto, for ``lkfr drill``'s tests and the scheduled drill's: three
running tasks of the agents' service, the environment's functions and switches deployed, the
drainer's ledger; a simulated clock for the waits; and the drainer answering with a report of a
cordon, logged into its log group as the deployed drainer would log it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import boto3
from moto import mock_aws
from moto.moto_api import state_manager

from devkit import moto_deployment
from fleet_remediation.contract.agent_services import DEFAULT_AGENT_SERVICE
from fleet_remediation.contract.naming import FunctionName, mode_parameter_name, service_mode_parameter_name
from fleet_remediation.core.invocation import run_reported
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Decision, Mode, Outcome

CLUSTER, SERVICE = "agents", "agents-service"


@contextmanager
def running_fleet(env: str, ledger_table: str) -> Iterator[list[str]]:
    """The three tasks' ARNs. moto moves a described task one lifecycle step per DescribeTasks by
    default: these stay RUNNING."""
    state_manager.set_transition("ecs::task", {"progression": "manual", "times": 1_000_000})
    with mock_aws():
        boto3.client("dynamodb").create_table(
            TableName=ledger_table,
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        moto_deployment.deploy(env, ledger_table)
        ssm = boto3.client("ssm")
        for name in (mode_parameter_name(env), service_mode_parameter_name(env, DEFAULT_AGENT_SERVICE)):
            ssm.put_parameter(Name=name, Value="enforce", Type="String")
        ecs = boto3.client("ecs")
        ecs.create_cluster(clusterName=CLUSTER)
        ecs.register_task_definition(
            family="agent", containerDefinitions=[{"name": "agent", "image": "agent:1", "memory": 512}]
        )
        ecs.create_service(cluster=CLUSTER, serviceName=SERVICE, taskDefinition="agent", desiredCount=3)
        tasks = ecs.run_task(
            cluster=CLUSTER, taskDefinition="agent", count=3, launchType="FARGATE", group=f"service:{SERVICE}"
        )["tasks"]
        yield [task["taskArn"] for task in tasks]
    state_manager.unset_transition("ecs::task")


def drainer_answers(env: str, task_arn: str, mode: Mode) -> None:
    """The deployed drainer's report of a cordon of ``task_arn`` (in a dry run: that it would)."""
    task_id = task_arn.rsplit("/", 1)[1]

    def body(report: ReportBuilder) -> None:
        report.environment, report.mode = env, mode
        report.agent_service = DEFAULT_AGENT_SERVICE
        decision = Decision.ACT if mode is Mode.ENFORCE else Decision.WOULD_ACT
        report.candidate(task_id, decision, "cordon: 5 of 5 responses timed out")
        if mode is Mode.ENFORCE:
            report.action(task_id, "cordon", Outcome.DONE)

    with moto_deployment.logged(env, FunctionName.WORKER_DRAINER):
        run_reported(FunctionName.WORKER_DRAINER.value, f"drainer-{task_id}", body)


class SimulatedClock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)
        self.slept: list[float] = []
        self.on_sleep: Callable[[int], None] = lambda sleeps: None

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += timedelta(seconds=seconds)
        self.on_sleep(len(self.slept))
