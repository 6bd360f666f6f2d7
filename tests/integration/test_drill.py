"""``lkfr drill`` end to end on moto: the marker goes on one running task of the service, the
product's own record (the functions' reports in their log groups, read as ``lkfr audit`` reads them)
is watched until the drainer answers on that task, the marker comes off, and the verdict and its
timeline are printed; the refusals (an environment not named for drills, remediation off, an excluded
or unknown task, a second drill) change nothing. The waits run on a simulated clock: the drainer's
report appears on the watch's second look, as the deployed drainer would log it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
from aws_cdk import assertions

from fleet_remediation.contract.action_events import ActionEvent
from fleet_remediation.contract.agent_services import DEFAULT_AGENT_SERVICE
from fleet_remediation.contract.drills import DRILL_TAG, DrillFault, DrillMarker
from fleet_remediation.contract.naming import (
    EXCLUDE_TAG,
    mode_parameter_name,
    service_mode_parameter_name,
)
from fleet_remediation.core.announce import Announced
from fleet_remediation.core.report_model import Mode
from livekit_fleet_remediation.cli import drill
from livekit_fleet_remediation.cli.audit_sources import Clients, Progress
from tests.drilled_fleet import CLUSTER, SERVICE, SimulatedClock, drainer_answers, running_fleet

ENV = "drills"
REGION = "eu-west-1"
TABLE = "drills-drainer-ledger"


def environments(tmp_path: Path, *, enabled: bool = True) -> Path:
    config = {
        ENV: {
            "region": REGION,
            "agent_services": [
                {
                    "name": DEFAULT_AGENT_SERVICE,
                    "ecs_cluster": CLUSTER,
                    "ecs_service": SERVICE,
                    "agent_log_group": "/agents/drills",
                }
            ],
            "livekit_url": "https://livekit.example.com",
            "livekit_secret_name": "livekit/drills",
            "runbook_base_url": "https://docs.example.com",
            "drills": {"enabled": enabled},
        }
    }
    path = tmp_path / "environments.json"
    path.write_text(json.dumps({"environments": config}))
    return path


@pytest.fixture
def fleet() -> Iterator[list[str]]:
    with running_fleet(ENV, TABLE) as tasks:
        yield tasks


class RecordedEvents:
    """The drill's action-event sink: records each put and answers as told."""

    def __init__(self, answer: Callable[[int], Announced] = lambda n: Announced(sent=n)) -> None:
        self.puts: list[list[ActionEvent]] = []
        self.answer = answer

    def put(self, events: list[ActionEvent]) -> Announced:
        self.puts.append(events)
        return self.answer(len(events))


def run_drill(
    clock: SimulatedClock,
    argv: list[str],
    events: RecordedEvents | None = None,
    said: Callable[[str], None] = lambda _: None,
) -> int:
    ecs = boto3.client("ecs", region_name=REGION)
    clients = Clients(
        REGION,
        boto3.client("lambda", region_name=REGION),
        boto3.client("logs", region_name=REGION),
        boto3.client("dynamodb", region_name=REGION),
    )
    runner = drill.Drill(
        ecs, clients, ENV, DEFAULT_AGENT_SERVICE, Progress(said), clock.sleep, lambda: clock.now, events
    )
    return drill.main(["--env", ENV, *argv], drill=runner, ssm=boto3.client("ssm", region_name=REGION))


def tags_of(task_arn: str) -> dict[str, str]:
    listed = boto3.client("ecs").list_tags_for_resource(resourceArn=task_arn)["tags"]
    return {tag["key"]: tag["value"] for tag in listed}


def test_a_drill_marks_one_task_watches_the_audit_until_the_drainer_answers_and_unmarks_it(
    fleet: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = SimulatedClock()
    target = fleet[1]
    marked: list[dict[str, str]] = []

    def drainer_acts_on_the_second_look(sleeps: int) -> None:
        marked.append(tags_of(target))
        if sleeps == 1:
            drainer_answers(ENV, target, Mode.ENFORCE)

    clock.on_sleep = drainer_acts_on_the_second_look
    argv = [
        "--config",
        str(environments(tmp_path)),
        "--fault",
        "tts-silence",
        "--task",
        target.rsplit("/", 1)[1],
    ]
    events = RecordedEvents()
    assert run_drill(clock, [*argv, "--minutes", "10", "--json"], events) == 0, capsys.readouterr().err
    document = json.loads(capsys.readouterr().out)
    # Recorded like any action: one event as the fault took effect, one with the verdict, each sent once.
    assert [len(put) for put in events.puts] == [1, 1]
    start, verdict = (put[0] for put in events.puts)
    assert (start.action, start.outcome, verdict.action, verdict.outcome) == (
        "drill-start",
        "started",
        "drill-verdict",
        "pass",
    )
    assert {start.resource, verdict.resource} == {target}
    assert (verdict.function, verdict.environment, verdict.agent_service, verdict.mode) == (
        "lkfr drill",
        ENV,
        DEFAULT_AGENT_SERVICE,
        "enforce",
    )
    assert verdict.invocation_id == document["drill_id"]
    assert start.id != verdict.id
    # While the drill ran, the task carried a current marker of the fault; afterwards it does not.
    marker = DrillMarker.parse(marked[0][DRILL_TAG], clock.now.timestamp())
    assert marker is not None
    assert marker.fault is DrillFault.TTS_SILENCE
    assert DRILL_TAG not in tags_of(target)
    assert all(DRILL_TAG not in tags_of(task) for task in fleet if task != target)
    assert (document["verdict"], document["marker_removed"]) == ("pass", True)
    assert (document["task"], document["mode"]) == (target, "enforce")
    assert [(e["function"], e["kind"], e["action"]) for e in document["timeline"]] == [
        ("worker_drainer", "acted", "cordon")
    ]
    assert clock.slept == [20.0]


def test_a_drill_nobody_answers_fails_at_its_deadline_and_still_unmarks_the_task(
    fleet: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = SimulatedClock()
    argv = ["--config", str(environments(tmp_path)), "--fault", "cpu-starved", "--minutes", "2"]
    events = RecordedEvents()
    assert run_drill(clock, argv, events) == 1
    assert [(put[0].action, put[0].outcome) for put in events.puts] == [
        ("drill-start", "started"),
        ("drill-verdict", "fail"),
    ]
    out = capsys.readouterr().out
    assert "FAIL" in out
    assert "no answer by" in out
    assert "marker removed" in out
    assert sum(clock.slept) == pytest.approx(120, abs=1)
    assert all(DRILL_TAG not in tags_of(task) for task in fleet)


def test_in_dry_run_the_verdict_is_on_what_the_drainer_would_have_done(
    fleet: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    boto3.client("ssm").put_parameter(
        Name=mode_parameter_name(ENV), Value="dry-run", Overwrite=True, Type="String"
    )
    clock = SimulatedClock()
    target = fleet[0]
    clock.on_sleep = lambda sleeps: drainer_answers(ENV, target, Mode.DRY_RUN) if sleeps == 1 else None
    argv = ["--config", str(environments(tmp_path)), "--fault", "tts-silence", "--task", target, "--json"]
    assert run_drill(clock, argv) == 0, capsys.readouterr().err
    document = json.loads(capsys.readouterr().out)
    assert document["mode"] == "dry-run"
    assert [(e["kind"], e["action"]) for e in document["timeline"]] == [("would-act", "cordon")]


@pytest.mark.parametrize(
    ("setup", "argv", "said"),
    [
        ("not-enabled", [], "DrillNotAllowed: environment drills is not named for drills"),
        ("off", [], "DrillNotAllowed: remediation is off in drills/agents"),
        ("excluded", ["--task", "TASK"], "TaskNotDrillable: task TASK is excluded"),
        ("unknown", ["--task", "0123456789abcdef"], "UnknownTask: 0123456789abcdef is not a running task"),
        ("second", [], "DrillRunning"),
    ],
)
def test_a_drill_it_cannot_run_is_refused_with_its_reason_and_marks_nothing(
    fleet: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    setup: str,
    argv: list[str],
    said: str,
) -> None:
    ecs, task_id = boto3.client("ecs"), fleet[2].rsplit("/", 1)[1]
    if setup == "off":
        boto3.client("ssm").put_parameter(
            Name=service_mode_parameter_name(ENV, DEFAULT_AGENT_SERVICE),
            Value="off",
            Overwrite=True,
            Type="String",
        )
    if setup == "excluded":
        ecs.tag_resource(resourceArn=fleet[2], tags=[{"key": EXCLUDE_TAG, "value": "true"}])
    if setup == "second":
        running = DrillMarker(DrillFault.CPU_STARVED, int(datetime.now(UTC).timestamp()) + 600, "other-drill")
        ecs.tag_resource(resourceArn=fleet[2], tags=[{"key": DRILL_TAG, "value": running.value()}])
    before = {task: tags_of(task) for task in fleet}
    config = environments(tmp_path, enabled=setup != "not-enabled")
    argv = [word.replace("TASK", task_id) for word in argv]
    assert run_drill(SimulatedClock(), ["--config", str(config), "--fault", "tts-silence", *argv]) == 1
    assert said.replace("TASK", task_id) in capsys.readouterr().err
    assert {task: tags_of(task) for task in fleet} == before


@pytest.mark.parametrize(
    ("value", "now", "expected"),
    [
        ("tts-silence:1000600:drill-1", 1_000_000, DrillMarker(DrillFault.TTS_SILENCE, 1_000_600, "drill-1")),
        ("tts-silence:1000000:drill-1", 1_000_000, None),  # ended
        ("tts-silence:1003601:drill-1", 1_000_000, None),  # more than an hour ahead
        ("tts-silence:1003600:drill-1", 1_000_000, DrillMarker(DrillFault.TTS_SILENCE, 1_003_600, "drill-1")),
        ("melt-down:1000600:drill-1", 1_000_000, None),
        ("tts-silence:1000600:DRILL", 1_000_000, None),
        ("tts-silence:1000600", 1_000_000, None),
        ('tts-silence:1000600:d","x', 1_000_000, None),
    ],
)
def test_a_marker_is_a_drill_only_when_well_formed_and_current(
    value: str, now: int, expected: DrillMarker | None
) -> None:
    assert DrillMarker.parse(value, now) == expected


def test_the_agent_package_reads_the_same_marker_as_the_command_writes() -> None:
    repo = Path(__file__).resolve().parents[2]
    shared = repo / "layers/shared/python/fleet_remediation/contract/drills.py"
    mirrored = repo / "agent/livekit_fleet_agent/drill_contract.py"
    assert mirrored.read_text() == shared.read_text(), "copy contract/drills.py to the agent package"


def test_lkfr_drill_is_a_console_command(capsys: pytest.CaptureFixture[str]) -> None:
    from livekit_fleet_remediation.cli.main import main

    assert main(["drill", "--help"]) == 0
    assert "--fault" in capsys.readouterr().out


def test_a_stack_named_for_drills_carries_the_opt_in_back_to_lkfr_and_the_marker_policies(
    tmp_path: Path,
) -> None:
    """With the construct, the configuration is code: ``lkfr drill --stack/--app`` reads it back from
    the functions, so the environment-wide function carries ``drills.enabled`` (and nothing when it is
    off: the stacks of environments not named for drills are unchanged). Named for drills without
    ``drills.fis``, the stack holds the two marker policies and nothing of AWS FIS."""
    from livekit_fleet_remediation.cli import deployed_config
    from livekit_fleet_remediation.standalone import build_stacks

    context = json.loads(environments(tmp_path).read_text())
    context["environments"]["undrilled"] = dict(context["environments"][ENV], drills={"enabled": False})
    _, stacks = build_stacks(None, context, str(tmp_path / "out"))
    templates = [assertions.Template.from_stack(stack).to_json() for stack in stacks.values()]
    functions = deployed_config.from_templates(templates)
    _, drilled = deployed_config.environment_config(functions, ENV, "the app")
    _, undrilled = deployed_config.environment_config(functions, "undrilled", "the app")
    assert drilled["drills"] == {"enabled": True}
    assert "drills" not in undrilled
    by_env = {name: assertions.Template.from_stack(stack) for name, stack in stacks.items()}
    policies = by_env[ENV].find_resources("AWS::IAM::ManagedPolicy")
    assert sum("DrillsAgentTaskRolePolicy" in k or "DrillsOperatorPolicy" in k for k in policies) == 2
    assert by_env["undrilled"].find_resources("AWS::IAM::ManagedPolicy") == {}
    for template in by_env.values():
        assert template.find_resources("AWS::FIS::ExperimentTemplate") == {}


def test_a_drill_event_whose_reply_was_lost_is_said_and_never_sent_again(
    fleet: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = SimulatedClock()
    target = fleet[0]
    clock.on_sleep = lambda sleeps: drainer_answers(ENV, target, Mode.ENFORCE) if sleeps == 1 else None
    lost = RecordedEvents(lambda n: Announced(unknown=n, problems=["may have landed (no reply): timeout"]))
    said: list[str] = []
    argv = ["--config", str(environments(tmp_path)), "--fault", "tts-silence", "--task", target]
    assert run_drill(clock, argv, lost, said.append) == 0, capsys.readouterr().err
    assert [put[0].action for put in lost.puts] == ["drill-start", "drill-verdict"]
    unsure = [line for line in said if "not surely delivered" in line]
    assert len(unsure) == 2
    assert "may have landed (no reply): timeout" in unsure[0]
