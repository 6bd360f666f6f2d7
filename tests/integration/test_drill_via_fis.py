"""``lkfr drill --via fis`` end to end on moto and an explicit FIS (``devkit.fakes.fis``: moto has no
experiments): the prerequisites are read, the experiment starts from the template tagged for the
environment, service and fault, FIS's one task is watched through the audit until the drainer
answers on it, and the experiment is stopped. StartExperiment is made once: a lost reply is re-read
by listing the template's experiments, never sent again. The refusals start nothing, and a task FIS
picks that a drill may not touch stops the experiment at once."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest

from devkit.fakes.aws_faults import LostReply
from devkit.fakes.fis import Experiment, FakeFis
from fleet_remediation.contract.agent_services import DEFAULT_AGENT_SERVICE
from fleet_remediation.contract.drills import DRILL_TAG
from fleet_remediation.contract.naming import EXCLUDE_TAG
from fleet_remediation.core.report_model import Mode
from livekit_fleet_remediation.cli import drill
from livekit_fleet_remediation.cli.audit_sources import Clients, Progress
from livekit_fleet_remediation.cli.drill_fis import TASK_ROLE_ACTIONS
from livekit_fleet_remediation.cli.drill_fis_run import RESOLVE_WAIT_SECONDS, FisClients
from livekit_fleet_remediation.drill_config import (
    EXPERIMENT_DRILL_TAG,
    TEMPLATE_ENVIRONMENT_TAG,
    TEMPLATE_FAULT_TAG,
    TEMPLATE_SERVICE_TAG,
)
from tests.drilled_fleet import SimulatedClock, drainer_answers
from tests.integration.test_drill import (
    CLUSTER,
    ENV,
    REGION,
    SERVICE,
    environments,
    fleet,
    tags_of,
)
from tests.unit.test_drill_fis import PolicySimulator

__all__ = ["fleet"]  # the fixture, shared with the hook path's tests


def fis_environments(tmp_path: Path) -> Path:
    path = environments(tmp_path)
    config = json.loads(path.read_text())
    config["environments"][ENV]["drills"] = {"enabled": True, "fis": {"minutes": 10}}
    path.write_text(json.dumps(config))
    return path


class FisWorld:
    """The service's task definition ready for FIS (the SSM Agent sidecar, a task role allowed what
    it needs), the construct's cpu-starved template, and the clients the command is given."""

    def __init__(self, ready: bool = True) -> None:
        ecs = boto3.client("ecs", region_name=REGION)
        if ready:
            ecs.register_task_definition(
                family="agent",
                taskRoleArn="arn:aws:iam::123456789012:role/agents",
                containerDefinitions=[
                    {"name": "agent", "image": "agent:1", "memory": 512},
                    {
                        "name": "ssm",
                        "image": "public.ecr.aws/amazon-ssm-agent/amazon-ssm-agent:latest",
                        "memory": 128,
                        "environment": [{"name": "MANAGED_INSTANCE_ROLE_NAME", "value": "fis-managed"}],
                    },
                ],
            )
            ecs.update_service(cluster=CLUSTER, service=SERVICE, taskDefinition="agent:2")
        self.start = boto3.client("fis", region_name=REGION)
        self.read = boto3.client("fis", region_name=REGION)
        self.fis = FakeFis(self.start, ecs)
        self.fis.serve(self.read)
        self.template_id = self.fis.add_template(
            {
                TEMPLATE_ENVIRONMENT_TAG: ENV,
                TEMPLATE_SERVICE_TAG: DEFAULT_AGENT_SERVICE,
                TEMPLATE_FAULT_TAG: "cpu-starved",
            },
            CLUSTER,
            SERVICE,
        )
        self.clients = FisClients(self.start, self.read, PolicySimulator(set(TASK_ROLE_ACTIONS)))

    def run(self, clock: SimulatedClock, argv: list[str]) -> int:
        clients = Clients(
            REGION,
            boto3.client("lambda", region_name=REGION),
            boto3.client("logs", region_name=REGION),
            boto3.client("dynamodb", region_name=REGION),
        )
        ecs = boto3.client("ecs", region_name=REGION)
        runner = drill.Drill(
            ecs, clients, ENV, DEFAULT_AGENT_SERVICE, Progress(lambda _: None), clock.sleep, lambda: clock.now
        )
        return drill.main(
            ["--env", ENV, "--via", "fis", *argv],
            drill=runner,
            ssm=boto3.client("ssm", region_name=REGION),
            fis_clients=self.clients,
        )


def _args(tmp_path: Path, *more: str) -> list[str]:
    return ["--config", str(fis_environments(tmp_path)), "--fault", "cpu-starved", *more]


def test_a_fis_drill_starts_the_template_watches_fis_s_task_and_stops_the_experiment(
    fleet: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world, clock = FisWorld(), SimulatedClock()
    chosen = min(fleet)  # the fake's COUNT(1) picks the smallest ARN
    clock.on_sleep = lambda sleeps: drainer_answers(ENV, chosen, Mode.ENFORCE) if sleeps == 1 else None
    assert world.run(clock, _args(tmp_path, "--minutes", "10", "--json")) == 0, capsys.readouterr().err
    document = json.loads(capsys.readouterr().out)
    (experiment,) = world.fis.experiments.values()
    assert experiment.template_id == world.template_id
    assert experiment.tags == {EXPERIMENT_DRILL_TAG: document["drill_id"]}
    assert experiment.status == "stopping"
    assert (document["verdict"], document["task"]) == ("pass", chosen)
    assert (document["experiment_id"], document["experiment_stopped"]) == (experiment.id, True)
    assert [(e["function"], e["action"]) for e in document["timeline"]] == [("worker_drainer", "cordon")]
    assert world.fis.calls.count("StartExperiment") == 1
    # The experiment initiates before its target resolves: the command waited one read for it.
    assert world.fis.calls.count("ListExperimentResolvedTargets") == 2
    assert clock.slept[0] == RESOLVE_WAIT_SECONDS
    # FIS, not the hook, carries the fault: no marker on any task.
    assert all(DRILL_TAG not in tags_of(task) for task in fleet)


def test_a_lost_start_reply_is_recorded_unknown_and_re_read_never_sent_again(
    fleet: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world, clock = FisWorld(), SimulatedClock()
    lost = LostReply(world.start, "fis.StartExperiment")
    assert world.run(clock, _args(tmp_path, "--minutes", "1", "--json")) == 1
    out, err = capsys.readouterr()
    assert lost.fired == 1
    assert world.fis.calls.count("StartExperiment") == 1
    (experiment,) = world.fis.experiments.values()
    document = json.loads(out)
    # The experiment the lost reply hid was found by its drill id, watched, and stopped.
    assert document["experiment_id"] == experiment.id
    assert (document["verdict"], document["experiment_stopped"]) == ("fail", True)
    assert experiment.status == "stopping"
    assert "drill failed" not in err


def test_an_ambiguous_start_with_no_experiment_behind_it_stops_without_starting_another(
    fleet: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = FisWorld()
    world.fis.start_error = (500, "InternalServerException")
    assert world.run(SimulatedClock(), _args(tmp_path)) == 1
    assert "DrillStartUnknown" in capsys.readouterr().err
    assert world.fis.calls.count("StartExperiment") == 1


@pytest.mark.parametrize(
    ("setup", "said"),
    [
        ("not-ready", "FisNotReady"),
        ("no-template", "NoTemplate"),
        ("active", "DrillRunning: AWS FIS experiment"),
        ("marker", "DrillRunning: task"),
    ],
)
def test_a_fis_drill_it_cannot_run_starts_no_experiment(
    fleet: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], setup: str, said: str
) -> None:
    world = FisWorld(ready=setup != "not-ready")
    if setup == "no-template":
        world.fis.templates.clear()
    if setup == "active":
        world.fis.experiments["EXP-other"] = Experiment("EXP-other", world.template_id, {}, None)
    if setup == "marker":
        boto3.client("ecs").tag_resource(resourceArn=fleet[0], tags=[{"key": DRILL_TAG, "value": "x"}])
    before = dict(world.fis.experiments)
    assert world.run(SimulatedClock(), _args(tmp_path)) == 1
    assert said in capsys.readouterr().err
    assert world.fis.experiments == before
    assert "StartExperiment" not in world.fis.calls


def test_a_task_fis_picks_that_a_drill_may_not_touch_stops_the_experiment_at_once(
    fleet: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = FisWorld()
    boto3.client("ecs").tag_resource(resourceArn=min(fleet), tags=[{"key": EXCLUDE_TAG, "value": "true"}])
    assert world.run(SimulatedClock(), _args(tmp_path)) == 1
    assert "TaskNotDrillable" in capsys.readouterr().err
    (experiment,) = world.fis.experiments.values()
    assert experiment.status == "stopping"
