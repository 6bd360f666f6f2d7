"""``lkfr plan``: a dry-run plan against the real livekit-server and moto.

The subprocess test runs the CLI as a person would, against moto's server mode (the LiveKit key
read from the Secrets Manager secret cdk.json names, through ``AWS_ENDPOINT_URL``); the others call
``main`` in-process with moto mocked. Whatever the SSM kill switch says, the plan is a dry run.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from livekit import api
from moto import mock_aws
from moto.moto_api import state_manager
from moto.server import ThreadedMotoServer

from devkit.checkout import checkout_pythonpath
from devkit.livekit_clients import create_rooms, room_names
from devkit.livekit_local import LocalLiveKit, free_port
from livekit_fleet_remediation.cli import plan
from livekit_fleet_remediation.cli.plan_livekit import PlanFailed
from livekit_fleet_remediation.cli.render import render_report
from tests.example_environments import EXAMPLE_CONFIG, example_context

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.livekit


@pytest.fixture
def rooms(livekit_server: LocalLiveKit) -> Iterator[Callable[[list[str]], None]]:
    """Creates rooms on the session's livekit-server and deletes them afterwards: the server is
    shared, and another test's reaper must not find this test's rooms."""
    created: list[str] = []

    def create(names: list[str]) -> None:
        asyncio.run(create_rooms(livekit_server, names))
        created.extend(names)

    yield create

    async def delete_all() -> None:
        async with api.LiveKitAPI(
            livekit_server.http_url, livekit_server.api_key, livekit_server.api_secret
        ) as lk:
            for name in created:
                await lk.room.delete_room(api.DeleteRoomRequest(room=name))

    asyncio.run(delete_all())


def write_config(tmp_path: Path, livekit: LocalLiveKit, **staging: Any) -> Path:
    context = copy.deepcopy(example_context())
    context["environments"]["staging"].update(
        {"region": "eu-west-1", "account": "123456789012", "livekit_url": livekit.http_url, **staging}
    )
    path = tmp_path / "cdk.json"
    path.write_text(json.dumps({"context": context}))
    return path


@pytest.fixture
def moto_server() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port())
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def test_the_cli_plans_the_reaper_with_the_key_from_secrets_manager(
    livekit_server: LocalLiveKit, moto_server: str, tmp_path: Path, rooms: Callable[[list[str]], None]
) -> None:
    config = write_config(tmp_path, livekit_server)
    environment = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": checkout_pythonpath(),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ENDPOINT_URL": moto_server,
    }
    aws = {
        "endpoint_url": moto_server,
        "region_name": "eu-west-1",
        **{k.lower(): v for k, v in environment.items() if k.startswith("AWS_") and "KEY" in k},
    }
    secret_name = example_context()["environments"]["staging"]["livekit_secret_name"]
    boto3.client("secretsmanager", **aws).create_secret(
        Name=secret_name,
        SecretString=json.dumps({"api_key": livekit_server.api_key, "api_secret": livekit_server.api_secret}),
    )
    boto3.client("ssm", **aws).put_parameter(
        Name="/livekit-fleet-remediation/staging/mode", Value="enforce", Type="String"
    )
    rooms(["lesson-plan-cli", "test-plan-cli", "lobby"])

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "livekit_fleet_remediation.cli",
            "plan",
            "reaper",
            "--env",
            "staging",
            "--config",
            str(config),
        ],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    print(done.stdout)
    assert done.returncode == 0, done.stderr
    # (PyJWT warns on stderr that the dev server's key "secret" is short; production keys are not.)
    assert "plan failed" not in done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("zombie_reaper [staging]  trigger=manual(invoke)  mode=dry-run  status=ok")
    assert "lesson-plan-cli" in done.stdout
    assert "lobby" in done.stdout  # reported as outside the managed room pattern
    assert {"lesson-plan-cli", "test-plan-cli", "lobby"} <= asyncio.run(room_names(livekit_server))


@pytest.fixture
def livekit_env(livekit_server: LocalLiveKit, monkeypatch: pytest.MonkeyPatch) -> LocalLiveKit:
    monkeypatch.setenv("LIVEKIT_URL", livekit_server.http_url)
    monkeypatch.setenv("LIVEKIT_API_KEY", livekit_server.api_key)
    monkeypatch.setenv("LIVEKIT_API_SECRET", livekit_server.api_secret)
    return livekit_server


def test_json_prints_the_raw_report_and_livekit_comes_from_the_usual_variables(
    livekit_env: LocalLiveKit,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    rooms: Callable[[list[str]], None],
) -> None:
    # No secret exists anywhere (moto is empty): the key can only have come from the environment.
    rooms(["lesson-plan-json"])
    config = write_config(tmp_path, livekit_env, livekit_url="https://livekit.invalid.example.com")
    with mock_aws():
        assert plan.main(["reaper", "--env", "staging", "--json", "--config", str(config)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mode"] == "dry-run"
    assert report["status"] == "ok"
    assert {c["resource"] for c in report["candidates"]} >= {"lesson-plan-json"}
    assert all(c["decision"] != "act" for c in report["candidates"])


@pytest.mark.parametrize(
    "argv",
    [
        ["janitor", "--env", "staging"],
        ["reaper"],
        ["reaper", "--env", "qa"],
        ["reaper", "--env", "staging", "--config", "/nonexistent/cdk.json"],
    ],
)
def test_bad_arguments_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        sys.exit(plan.main(argv))
    assert exited.value.code == 2
    assert "error" in capsys.readouterr().err


def test_a_typed_failure_exits_1_with_the_error_on_one_line(
    livekit_env: LocalLiveKit,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A port nothing listens on: a LiveKit that is not there.
    absent = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("LIVEKIT_URL", absent)
    with mock_aws():
        code = plan.main(["reaper", "--env", "staging", "--config", str(write_config(tmp_path, livekit_env))])
    assert code == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("plan failed: LiveKitUnavailable: ")
    assert absent in line


def test_an_invalid_environment_is_a_typed_failure(
    livekit_env: LocalLiveKit, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, livekit_env, reaper={"schedule_minutes": 0})
    assert plan.main(["reaper", "--env", "staging", "--config", str(config)]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert "environments.staging.reaper.schedule_minutes" in line


def test_the_drainer_plan_reads_the_service_and_its_deployed_ledger(
    livekit_env: LocalLiveKit, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, livekit_env)
    service = example_context()["environments"]["staging"]["agent_services"][0]
    state_manager.set_transition("ecs::task", {"progression": "manual", "times": 1_000_000})
    try:
        with mock_aws():
            ecs = boto3.client("ecs", region_name="eu-west-1")
            ecs.create_cluster(clusterName=service["ecs_cluster"])
            ecs.register_task_definition(
                family="agent",
                containerDefinitions=[{"name": service["ecs_service"], "image": "agent:1", "memory": 512}],
            )
            ecs.create_service(
                cluster=service["ecs_cluster"],
                serviceName=service["ecs_service"],
                taskDefinition="agent",
                desiredCount=2,
            )
            tasks = ecs.run_task(
                cluster=service["ecs_cluster"],
                taskDefinition="agent",
                count=2,
                launchType="FARGATE",
                group=f"service:{service['ecs_service']}",
            )["tasks"]
            boto3.client("dynamodb", region_name="eu-west-1").create_table(
                TableName="deployed-ledger",
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
            boto3.client("logs", region_name="eu-west-1").create_log_group(
                logGroupName=service["agent_log_group"]
            )
            deploy_drainer_config(ledger_table="deployed-ledger")
            code = plan.main(["drainer", "--env", "staging", "--config", str(config)])
            out = capsys.readouterr()
    finally:
        state_manager.unset_transition("ecs::task")
    assert code == 0, out.err
    print(out.out)
    assert out.out.startswith("worker_drainer [staging]  trigger=manual(invoke)  mode=dry-run  status=ok")
    for task in tasks:
        assert task["taskArn"].rsplit("/", 1)[1] in out.out


def test_the_drainer_plan_without_a_deployed_stack_says_what_it_needs(
    livekit_env: LocalLiveKit, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with mock_aws():
        assert (
            plan.main(["drainer", "--env", "staging", "--config", str(write_config(tmp_path, livekit_env))])
            == 1
        )
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("plan failed: ConfigurationError: cannot read lkfr-staging-agents-worker-drainer")
    assert "--ledger-table" in line


def deploy_drainer_config(ledger_table: str) -> None:
    """The drainer function as the stack deploys it, as far as the plan reads it (its variables)."""
    iam = boto3.client("iam", region_name="eu-west-1")
    role = iam.create_role(RoleName="drainer", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    boto3.client("lambda", region_name="eu-west-1").create_function(
        FunctionName="lkfr-staging-agents-worker-drainer",
        Runtime="python3.12",
        Role=role,
        Handler="worker_drainer.handler.lambda_handler",
        Code={"ZipFile": _empty_zip()},
        Environment={"Variables": {"LEDGER_TABLE_NAME": ledger_table}},
    )


def _empty_zip() -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "")
    return buffer.getvalue()


DRAINER = "lkfr-staging-agents-worker-drainer"


class DeployedDrainer:
    """A Lambda client whose configuration read answers ``found`` or raises ``error``."""

    def __init__(self, found: dict[str, Any] | None = None, error: Exception | None = None) -> None:
        self.found, self.error = found, error
        self.asked: list[str] = []

    def get_function_configuration(self, FunctionName: str) -> dict[str, Any]:
        self.asked.append(FunctionName)
        if self.error is not None:
            raise self.error
        return self.found or {}


@pytest.mark.parametrize(
    "found",
    [{}, {"Environment": {}}, {"Environment": {"Variables": {}}}, {"Environment": {"Variables": {"X": "1"}}}],
    ids=["no-environment", "no-variables", "empty-variables", "other-variables"],
)
def test_a_deployed_drainer_without_its_ledger_table_says_to_pass_it(
    found: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    deployed = DeployedDrainer(found)
    monkeypatch.setattr(plan, "aws_client", lambda budget: deployed)
    with pytest.raises(PlanFailed) as failed:
        plan.deployed_ledger_table("staging", "agents")
    assert (failed.value.code, failed.value.message) == (
        "ConfigurationError",
        f"{DRAINER} has no LEDGER_TABLE_NAME: pass --ledger-table",
    )
    assert deployed.asked == [DRAINER]


def test_the_deployed_drainers_ledger_table_is_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    deployed = DeployedDrainer({"Environment": {"Variables": {"LEDGER_TABLE_NAME": "the-ledger"}}})
    monkeypatch.setattr(plan, "aws_client", lambda budget: deployed)
    assert plan.deployed_ledger_table("staging", "agents") == "the-ledger"


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (
            "AccessDeniedException",
            f"cannot read {DRAINER}'s configuration: the AWS credentials are valid but not allowed to call "
            f"GetFunctionConfiguration on {DRAINER} (AccessDeniedException): use a role that allows it, or "
            "ask for that permission",
        ),
        (
            "ResourceNotFoundException",
            f"cannot read {DRAINER}'s configuration for its ledger table (An error occurred "
            "(ResourceNotFoundException) when calling the GetFunctionConfiguration operation: gone); "
            "deploy the stack or pass --ledger-table",
        ),
    ],
    ids=["not-allowed", "not-deployed"],
)
def test_a_drainer_configuration_aws_refuses_says_what_to_do(
    code: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    error = ClientError({"Error": {"Code": code, "Message": "gone"}}, "GetFunctionConfiguration")
    monkeypatch.setattr(plan, "aws_client", lambda budget: DeployedDrainer(error=error))
    with pytest.raises(PlanFailed) as failed:
        plan.deployed_ledger_table("staging", "agents")
    assert (failed.value.code, failed.value.message) == ("ConfigurationError", message)


def test_the_drainer_plan_runs_the_handler_with_the_first_services_own_dependencies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the stack gives the drainer, from the environments file: the first agent service (not
    a default one), its signals, its ECS and ledger adapters with their timeouts, the held notifier."""
    from fleet_remediation.adapters.alarm_state import CloudWatchAlarmStates
    from fleet_remediation.contract.budgets import ecs_call
    from livekit_fleet_remediation.config import load_config_file
    from worker_drainer import handler

    context = copy.deepcopy(example_context())
    staging = context["environments"]["staging"]
    first = staging["agent_services"][0]
    first.update(name="outbound", ecs_service="outbound-agent", agent_log_group="/outbound/agent")
    staging["drainer"].update(ecs_request_timeout_seconds=3.5, livekit_request_timeout_seconds=2.5)
    staging["detection"]["signals"]["first_audio_timeout"]["text"] = "tts_gave_up"
    path = tmp_path / "cdk.json"
    path.write_text(json.dumps({"context": context}))
    config = load_config_file(path, "staging")
    ran: list[tuple[dict[str, Any], Any]] = []
    monkeypatch.setattr(
        handler, "lambda_handler", lambda event, _, dependencies: ran.append((event, dependencies)) or {}
    )
    monkeypatch.setenv("LIVEKIT_API_KEY", "key")
    monkeypatch.setenv("LIVEKIT_API_SECRET", "secret")
    notifier = plan.HeldNotifier()
    plan.plan_drainer("staging", config, notifier, "the-ledger")
    ((event, deps),) = ran
    assert event == {"action": "plan"}
    settings = deps.settings
    assert (settings.agent_service, settings.ecs_cluster, settings.ecs_service, settings.agent_log_group) == (
        "outbound",
        first["ecs_cluster"],
        "outbound-agent",
        "/outbound/agent",
    )
    assert settings.ledger_table_name == "the-ledger"
    assert settings.signals.first_audio_timeout.text == "tts_gave_up"
    assert deps.notifier is notifier
    assert (deps.ecs.cluster, deps.ecs.service) == (first["ecs_cluster"], "outbound-agent")
    assert deps.ecs._client.meta.config.read_timeout == ecs_call(3.5).read_timeout_seconds
    assert (deps.ledger.table_name, deps.ledger.service) == ("the-ledger", "outbound-agent")
    assert deps.worker_logs.log_group == "/outbound/agent"
    assert deps.worker_logs.catalog.first_audio_timeout.text == "tts_gave_up"
    assert isinstance(deps.worker_probe, plan.NoWorkerProbe)
    assert isinstance(deps.alarm_states, CloudWatchAlarmStates)

    async def rooms_timeout() -> float:
        rooms = deps.room_service_factory()
        try:
            return float(rooms.request_timeout_seconds)
        finally:
            await rooms.aclose()

    assert asyncio.run(rooms_timeout()) == 2.5


def test_the_reaper_plan_runs_the_handler_as_a_dry_run_with_every_agent_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fleet_remediation.contract.naming import function_mode_parameter_name, mode_parameter_name
    from fleet_remediation.contract.settings import ReaperSettings
    from livekit_fleet_remediation.config import load_config_file
    from zombie_reaper import handler

    context = copy.deepcopy(example_context())
    staging = context["environments"]["staging"]
    second = copy.deepcopy(staging["agent_services"][0])
    second.update(name="outbound", ecs_service="outbound-agent", agent_log_group="/outbound/agent")
    staging["agent_services"].append(second)
    staging["reaper"]["livekit_request_timeout_seconds"] = 2.5
    path = tmp_path / "cdk.json"
    path.write_text(json.dumps({"context": context}))
    config = load_config_file(path, "staging")
    ran: list[tuple[dict[str, Any], Any]] = []
    monkeypatch.setattr(
        handler, "lambda_handler", lambda event, _, dependencies: ran.append((event, dependencies)) or {}
    )
    monkeypatch.setenv("LIVEKIT_API_KEY", "key")
    monkeypatch.setenv("LIVEKIT_API_SECRET", "secret")
    notifier = plan.HeldNotifier()
    plan.plan_reaper("staging", config, notifier)
    ((event, deps),) = ran
    assert event == {"dry_run": True}
    assert deps.notifier is notifier
    assert [service.name for service in deps.settings.agent_services] == ["agents", "outbound"]
    assert deps.settings.mode_parameter_name == mode_parameter_name("staging")
    assert deps.settings.function_mode_parameter_name == function_mode_parameter_name(
        "staging", ReaperSettings.function
    )

    async def rooms_timeout() -> float:
        rooms = deps.room_service_factory()
        try:
            return float(rooms.request_timeout_seconds)
        finally:
            await rooms.aclose()

    assert asyncio.run(rooms_timeout()) == 2.5


@pytest.mark.parametrize(
    ("variables", "from_variables"),
    [({"LIVEKIT_API_KEY": "k", "LIVEKIT_API_SECRET": "s"}, True), ({"LIVEKIT_API_KEY": "k"}, False)],
    ids=["both", "key-only"],
)
def test_the_plans_livekit_key_is_the_variables_only_when_both_are_set(
    variables: dict[str, str], from_variables: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fleet_remediation.adapters import livekit_rooms
    from livekit_fleet_remediation.cli import plan_livekit

    for name in ("LIVEKIT_API_KEY", "LIVEKIT_API_SECRET"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    factories: list[tuple[str, str, float]] = []
    monkeypatch.setattr(
        plan_livekit,
        "room_service_factory",
        lambda url, secret, timeout: factories.append((url, secret, timeout)) or livekit_rooms.RoomService,
    )
    settings = SimpleNamespace(livekit_url="http://livekit.internal:7880", livekit_secret_id="it/livekit")
    made = plan_livekit.rooms_factory(settings, 4.5)  # type: ignore[arg-type]
    if from_variables:
        assert factories == []

        async def built() -> tuple[str, float]:
            rooms = made()
            try:
                return rooms.url, rooms.request_timeout_seconds  # type: ignore[attr-defined]
            finally:
                await rooms.aclose()  # type: ignore[attr-defined]

        assert asyncio.run(built()) == ("http://livekit.internal:7880", 4.5)
    else:
        assert factories == [("http://livekit.internal:7880", "it/livekit", 4.5)]


LINK = "- This run's report (Logs Insights): https://console.aws.amazon.com/..."


def test_the_plan_shows_the_notification_it_would_send_without_a_report_link() -> None:
    report = {
        "function": "zombie_reaper",
        "environment": "staging",
        "trigger": {"kind": "manual", "source": "invoke"},
        "mode": "dry-run",
        "status": "ok",
        "candidates": [],
        "actions": [],
        "errors": [],
        "summary": {"rooms": 3},
    }
    held = plan.render(report, [("[staging] 2 rooms", f"two rooms\n{LINK}\nend")])
    lines = held.splitlines()
    assert lines[-5:] == ["", "notification it would send:", "Subject: [staging] 2 rooms", "two rooms", "end"]
    assert held.startswith(render_report(report) + "\n")
    # A summary's own preview (a dry run of the drainer) outranks what was held, and is not shown as
    # a summary field.
    would = {"subject": "[staging] would drain", "text": f"drain x\n{LINK}"}
    shown = plan.render({**report, "summary": {"would_notify": would}}, [("held", "held text")])
    assert shown.splitlines()[-4:] == [
        "",
        "notification it would send:",
        "Subject: [staging] would drain",
        "drain x",
    ]
    assert shown.startswith(render_report({**report, "summary": {}}) + "\n")
    assert "held text" not in shown
    assert plan.render({**report, "summary": None}, []) == plan.render({**report, "summary": {}}, [])


@pytest.mark.parametrize(
    ("code", "message", "explained"),
    [
        ("LiveKitApiError", "LiveKit ListRooms failed: HTTP 401: refused", True),
        ("LiveKitApiError", "LiveKit ListRooms failed: HTTP 404 not_found: x", False),
        ("SecretError", "HTTP 401 somewhere", False),
    ],
    ids=["401", "404", "not-livekit"],
)
def test_only_livekit_refusing_the_key_says_where_the_key_came_from(
    code: str, message: str, explained: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from livekit_fleet_remediation.config import load_config_file

    monkeypatch.delenv("LIVEKIT_API_KEY", raising=False)
    config = load_config_file(EXAMPLE_CONFIG, "staging")
    line = plan.failure_line({"errors": [{"code": code, "message": message}]}, "staging", config, "env.json")
    assert line.startswith(f"plan failed: {code}: {message}")
    assert ("the key and secret came from the secret" in line) is explained
