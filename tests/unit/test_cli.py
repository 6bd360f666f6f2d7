"""``lkfr``: the dispatcher, the commands running with only the packages on the path (as after
``pip install``: no checkout, no devkit, no CDK), the missing-config error, and ``lkfr undo``'s reading
of the drainer's answer, through a recording invoker (the invoke itself needs a deployed drainer);
and each command's help, as the console commands page shows it."""

from __future__ import annotations

import argparse
import copy
import importlib
import json
import os
import shlex
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from fleet_remediation import __version__
from fleet_remediation.core import messages
from livekit_fleet_remediation.cli import common, undo
from livekit_fleet_remediation.cli import main as lkfr
from livekit_fleet_remediation.cli.common import (
    Configuration,
    InvalidConfig,
    Target,
    UsageError,
    load_config,
    plain,
    sdk_failure,
    target,
    use_region,
)
from livekit_fleet_remediation.cli.invoke import InvokeResult
from livekit_fleet_remediation.cli.main import COMMANDS
from livekit_fleet_remediation.cli.plan_livekit import PlanFailed, credentials_source, livekit_url
from livekit_fleet_remediation.config import load_config_file

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "incident-2026-09-15.jsonl"
CONFIG = REPO / "examples" / "standalone" / "environments.json"
# What the remediation wheel installs: these packages' roots, and nothing of the checkout.
PACKAGE_ROOTS = ("functions", "layers/shared/python", "src")
DEVELOPMENT_ONLY = ("aws_cdk", "devkit", "tests", "tools", "bench", "livekit_fleet_remediation.stack")


def installed_python(code_or_module: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(str(REPO / root) for root in PACKAGE_ROOTS)}
    return subprocess.run(
        [sys.executable, *code_or_module],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_version_and_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert lkfr.main(["--version"]) == 0
    assert capsys.readouterr().out == f"lkfr {__version__}\n"
    assert lkfr.main(["--help"]) == 0
    assert "lkfr audit --env NAME --hours N" in capsys.readouterr().out
    assert lkfr.main([]) == 2
    assert lkfr.main(["janitor"]) == 2
    assert "unknown command 'janitor'" in capsys.readouterr().err


def test_a_commands_own_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert lkfr.main(["audit", "--env", "prod"]) == 2
    assert "--hours" in capsys.readouterr().err
    assert lkfr.main(["audit", "--env", "prod", "--hours", "0", "--region", "eu-west-1"]) == 2


def test_no_command_loads_the_cdk_or_the_development_tree(tmp_path: Path) -> None:
    code = (
        "import importlib, sys\n"
        "from livekit_fleet_remediation.cli.main import COMMANDS\n"
        "for module in COMMANDS.values(): importlib.import_module(module)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {DEVELOPMENT_ONLY!r} "
        f"or m in {DEVELOPMENT_ONLY!r}))\n"
    )
    done = installed_python(["-c", code], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"


def test_the_replay_runs_with_only_the_packages_on_the_path(tmp_path: Path) -> None:
    command = ["replay", "--log", str(FIXTURE), "--env", "prod", "--config", str(CONFIG)]
    done = installed_python(["-m", "livekit_fleet_remediation.cli", *command], tmp_path)
    assert done.returncode == 0, done.stderr
    assert (
        "24 failed in the log (responses, no first audio); 2 would still have failed; 22 spared."
        in done.stdout
    )


def test_without_a_configuration_here_the_error_says_what_to_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LKFR_CONFIG", raising=False)
    # A cdk.json with no environments (the feature flags only) is not taken for one.
    (tmp_path / "cdk.json").write_text('{"context": {"@aws-cdk/core:checkSecretUsage": true}}')
    assert lkfr.main(["plan", "reaper", "--env", "staging"]) == 2
    (line,) = capsys.readouterr().err.splitlines()[-1:]
    assert line == (
        f"lkfr plan: error: no environments.json in {tmp_path}: pass --config PATH (your environments file "
        "or cdk.json) or set LKFR_CONFIG; with the construct in your own CDK app, pass --stack NAME (your "
        'deployed stack) or --app "python app.py" (lkfr validate --schema prints the file\'s JSON Schema)'
    )
    assert lkfr.main(["backtest", "--log", str(FIXTURE), "--env", "prod"]) == 2
    assert "pass --config PATH" in capsys.readouterr().err


@dataclass
class RecordingInvoker:
    """Stands in for the deployed drainer's invoke: records each event, answers ``result``."""

    result: InvokeResult
    events: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, event: dict[str, Any]) -> InvokeResult:
        self.events.append(event)
        return self.result


def drainer_report(status: str, outcome: str = "done") -> dict[str, Any]:
    return {
        "function": "worker_drainer",
        "environment": "prod",
        "trigger": {"kind": "manual", "source": "invoke"},
        "mode": "enforce",
        "status": status,
        "candidates": [{"resource": "2789d238", "decision": "act", "reason": "undo: asked by an operator"}],
        "actions": [{"resource": "2789d238", "action": "undo", "outcome": outcome}],
        "errors": [] if status == "ok" else [{"code": "EcsApiError", "message": "UntagResource refused"}],
        "summary": {},
    }


def test_undo_sends_the_drainers_manual_event_and_prints_its_report(
    capsys: pytest.CaptureFixture[str],
) -> None:
    invoker = RecordingInvoker(InvokeResult(report=drainer_report("ok")))
    argv = ["--env", "prod", "--task", "2789d238", "--region", "eu-west-1"]
    assert undo.main(argv, invoker=invoker) == 0
    assert invoker.events == [{"action": "undrain", "task": "2789d238", "dry_run": False}]
    assert "-> undo 2789d238: done" in capsys.readouterr().out
    assert undo.main([*argv, "--drain", "--dry-run"], invoker=invoker) == 0
    assert invoker.events[-1] == {"action": "drain", "task": "2789d238", "dry_run": True}


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (InvokeResult(error="reply lost: read timeout", unknown=True), "undo failed: OutcomeUnknown: "),
        (
            InvokeResult(error="not sent: connect timeout"),
            "undo failed: InvokeError: lkfr-prod-agents-worker-drainer",
        ),
        (InvokeResult(report=drainer_report("failed", "failed")), "undo failed: EcsApiError: UntagResource"),
        (
            InvokeResult(),
            "undo failed: InvokeError: lkfr-prod-agents-worker-drainer: no report came back",
        ),
    ],
)
def test_undo_that_did_not_happen_or_may_have_exits_1(
    result: InvokeResult, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--env", "prod", "--task", "2789d238", "--region", "eu-west-1"]
    assert undo.main(argv, invoker=RecordingInvoker(result)) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(expected)


@pytest.mark.parametrize("action", ["undrain", "drain"])
def test_the_messages_short_undo_sends_the_same_event_as_their_aws_line(action: str) -> None:
    line = messages.drainer_undo("End the drain", "prod", "outbound", action, "2789d238", "eu-west-1")
    assert line.short is not None
    words = shlex.split(line.short)
    assert words[:2] == ["lkfr", "undo"]
    args = undo.parser().parse_args(words[2:])
    command = shlex.split(line.command)
    sent = json.loads(command[command.index("--payload") + 1])
    assert undo.manual_event(args.task, args.drain, args.dry_run) == sent
    assert args.region == "eu-west-1"
    assert args.env == "prod"
    # The short line asks the same service's drainer as the aws line.
    assert args.service == "outbound"
    assert command[command.index("--function-name") + 1] == "lkfr-prod-outbound-worker-drainer"


def test_the_configuration_is_the_flag_then_lkfr_config_then_the_file_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LKFR_CONFIG", str(CONFIG))
    argv = ["backtest", "--log", str(FIXTURE), "--env", "prod"]
    assert lkfr.main(argv) == 0
    monkeypatch.delenv("LKFR_CONFIG")
    (tmp_path / "environments.json").write_text(CONFIG.read_text())
    assert lkfr.main(argv) == 0
    assert lkfr.main([*argv, "--config", str(tmp_path / "other.json")]) == 2
    assert "other.json: no such file" in capsys.readouterr().err


class ConfigurationOnly:
    """A Lambda client that answers the configuration read with ``found``."""

    def __init__(self, found: dict[str, Any]) -> None:
        self.found = found
        self.asked: list[str] = []

    def get_function_configuration(self, FunctionName: str) -> dict[str, Any]:
        self.asked.append(FunctionName)
        return self.found


def test_the_undo_waits_out_the_drainers_own_timeout_else_lambdas_longest() -> None:
    name = "lkfr-prod-agents-worker-drainer"
    client = ConfigurationOnly({"FunctionName": name, "Timeout": 120})
    assert undo.drainer_timeout(client, name) == 120
    assert client.asked == [name]
    assert undo.drainer_timeout(ConfigurationOnly({"FunctionName": name}), name) == 900


def test_help_text_is_the_docstring_without_its_code_quotes() -> None:
    assert (
        plain("run ``lkfr undo`` or `lkfr audit`: ``--env`` `NAME`")
        == "run lkfr undo or lkfr audit: --env NAME"
    )


@pytest.mark.parametrize(
    ("variables", "from_variables"),
    [
        ({"LIVEKIT_API_KEY": "key", "LIVEKIT_API_SECRET": "secret"}, True),
        ({"LIVEKIT_API_KEY": "key"}, False),
        ({"LIVEKIT_API_SECRET": "secret"}, False),
        ({}, False),
    ],
    ids=["both", "key-only", "secret-only", "neither"],
)
def test_the_livekit_key_comes_from_the_variables_only_when_both_are_set(
    variables: dict[str, str], from_variables: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("LIVEKIT_API_KEY", "LIVEKIT_API_SECRET"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    config = load_config_file(CONFIG, "prod")
    said = credentials_source("prod", config, "environments.json")
    if from_variables:
        assert said == (
            "the key and secret came from LIVEKIT_API_KEY and LIVEKIT_API_SECRET (environment variables)"
        )
    else:
        assert said == (
            f"the key and secret came from the secret {config.livekit_secret_name} "
            "(environments.json: environments.prod.livekit_secret_name)"
        )


@pytest.mark.parametrize(
    ("given", "api"),
    [
        ("wss://livekit.example.com", "https://livekit.example.com"),
        ("WSS://livekit.example.com/", "https://livekit.example.com/"),
        ("ws://livekit.internal:7880", "http://livekit.internal:7880"),
        ("https://livekit.example.com", "https://livekit.example.com"),
        ("http://livekit.internal:7880", "http://livekit.internal:7880"),
        # The scheme is what comes before the first "://", whatever the rest holds.
        ("wss://livekit.example.com/?next=https://x", "https://livekit.example.com/?next=https://x"),
        # A one-label host is a host, whatever its letters.
        ("wss://X", "https://X"),
    ],
)
def test_livekit_url_from_the_variable_is_the_api_url_of_its_scheme(
    given: str, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIVEKIT_URL", given)
    assert livekit_url(load_config_file(CONFIG, "prod")) == api


@pytest.mark.parametrize("unset", [None, ""])
def test_livekit_url_unset_or_empty_is_the_configurations(
    unset: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if unset is None:
        monkeypatch.delenv("LIVEKIT_URL", raising=False)
    else:
        monkeypatch.setenv("LIVEKIT_URL", unset)
    config = load_config_file(CONFIG, "prod")
    assert livekit_url(config) == str(config.livekit_url)


@pytest.mark.parametrize(
    "malformed",
    ["livekit.example.com", "wss:/livekit.example.com", "ftp://livekit.example.com", "wss://", "https:///"],
)
def test_livekit_url_in_every_malformed_form_is_refused_by_name(
    malformed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIVEKIT_URL", malformed)
    with pytest.raises(PlanFailed) as refused:
        livekit_url(load_config_file(CONFIG, "prod"))
    assert refused.value.code == "ConfigurationError"
    assert refused.value.message.startswith(f"LIVEKIT_URL (environment variable) {malformed!r} is not a")


def test_load_config_reads_the_named_environment_and_names_each_wrong_one(tmp_path: Path) -> None:
    assert load_config(CONFIG, "prod") == load_config_file(CONFIG, "prod")
    with pytest.raises(UsageError, match="nowhere"):
        load_config(CONFIG, "nowhere")
    broken = json.loads(CONFIG.read_text())
    broken["environments"]["prod"]["log_retention_days"] = "a fortnight"
    path = tmp_path / "environments.json"
    path.write_text(json.dumps(broken))
    # prod exists but does not validate; staging, untouched, still loads from the same file.
    with pytest.raises(InvalidConfig, match="log_retention_days"):
        load_config(path, "prod")
    assert load_config(path, "staging") == load_config_file(CONFIG, "staging")


def test_the_plan_holds_each_notification_in_the_order_published() -> None:
    from livekit_fleet_remediation.cli.plan import HeldNotifier

    notifier = HeldNotifier()
    assert notifier.publish("first subject", "first text") == "held-1"
    assert notifier.publish("second subject", "second text", {"kind": "x"}) == "held-2"
    assert notifier.held == [("first subject", "first text"), ("second subject", "second text")]


def test_a_refused_key_names_the_file_that_names_its_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    from livekit_fleet_remediation.cli.plan import failure_line

    monkeypatch.delenv("LIVEKIT_API_KEY", raising=False)
    config = load_config_file(CONFIG, "prod")
    refused = {"errors": [{"code": "LiveKitApiError", "message": "LiveKit ListRooms failed: HTTP 401: no"}]}
    line = failure_line(refused, "prod", config, "environments.json")
    assert line.endswith(
        f"(the key and secret came from the secret {config.livekit_secret_name} "
        "(environments.json: environments.prod.livekit_secret_name))"
    )


def test_the_plan_shows_its_summary_without_the_preview_it_renders_apart() -> None:
    from livekit_fleet_remediation.cli.plan import render

    would = {"subject": "[staging] would drain", "text": "drain x"}
    report = {
        "function": "worker_drainer",
        "status": "ok",
        "candidates": [],
        "actions": [],
        "errors": [],
        "summary": {"rooms": 3, "would_notify": would},
    }
    shown = render(report, []).splitlines()
    assert "  summary: rooms=3" in shown
    assert not [line for line in shown if "would_notify" in line]
    assert shown[-3:] == ["notification it would send:", "Subject: [staging] would drain", "drain x"]


def test_a_plan_setting_that_does_not_validate_is_named_under_its_environment() -> None:
    from fleet_remediation.contract.errors import ConfigurationError
    from fleet_remediation.contract.settings import ReaperSettings
    from livekit_fleet_remediation.cli.plan import settings

    config = load_config_file(CONFIG, "prod")
    with pytest.raises(ConfigurationError) as refused:
        settings(
            ReaperSettings,
            "prod",
            config,
            reaper=config.reaper,
            agent_services=config.service_identities,
            runbook_base_url="not a url",
        )
    assert str(refused.value).startswith("environments.prod.runbook_base_url: ")


def test_the_region_is_the_option_else_the_shells_default_else_the_environments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = load_config_file(CONFIG, "prod")
    assert config.region != "eu-central-1"
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    # --region outranks the shell's default and becomes boto3's default.
    assert use_region("eu-central-1", config) == "eu-central-1"
    assert os.environ["AWS_DEFAULT_REGION"] == "eu-central-1"
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    assert use_region(None, config) == "us-west-2"
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    assert use_region(None, config) == config.region
    assert os.environ["AWS_DEFAULT_REGION"] == config.region


@pytest.mark.parametrize(
    ("stack", "app", "where"),
    [("lkfr-prod", None, "stack lkfr-prod"), (None, "python3 app.py", "your CDK app ('python3 app.py')")],
)
def test_a_named_stack_or_app_is_read_instead_of_the_file(
    stack: str | None, app: str | None, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from livekit_fleet_remediation.cli import deployed_config as deployed

    read: list[tuple[object, ...]] = []
    functions = ["the deployed functions"]
    monkeypatch.setattr(deployed, "lambda_reader", lambda region: ("cloudformation", f"lambda {region}"))
    monkeypatch.setattr(
        deployed, "from_stack", lambda name, *clients: read.append((name, *clients)) or functions
    )
    monkeypatch.setattr(deployed, "from_app", lambda command, cwd: read.append((command, cwd)) or functions)
    monkeypatch.setattr(
        deployed, "environment_config", lambda given, env, said: (env, {"where": said, "from": given})
    )
    args = argparse.Namespace(stack=stack, app=app, config=CONFIG, env="prod", region="eu-west-1")
    found = common.configuration(args)
    assert (found.where, found.path) == (where, None)
    assert found.environments == {"prod": {"where": where, "from": functions}}
    assert read == ([(stack, "cloudformation", "lambda eu-west-1")] if stack else [(app, Path.cwd())])


def test_a_stack_that_cannot_be_read_is_a_usage_error_or_the_sdks_typed_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from livekit_fleet_remediation.cli import deployed_config as deployed

    def unreadable(*_: object) -> Any:
        raise deployed.DeployedConfigError("stack lkfr-prod has no remediation functions")

    monkeypatch.setattr(deployed, "lambda_reader", lambda region: (None, None))
    monkeypatch.setattr(deployed, "from_stack", unreadable)
    args = argparse.Namespace(stack="lkfr-prod", app=None, config=None, env="prod", region=None)
    with pytest.raises(UsageError) as unusable:
        common.configuration(args)
    assert str(unusable.value) == "stack lkfr-prod has no remediation functions"

    def refused(*_: object) -> Any:
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "DescribeStacks")

    monkeypatch.setattr(deployed, "from_stack", refused)
    with pytest.raises(common.CommandFailed) as failed:
        common.configuration(args)
    assert (failed.value.code, failed.value.message) == ("AccessDenied", "reading stack lkfr-prod: no")


def test_a_command_without_stack_or_app_options_reads_the_file() -> None:
    found = common.configuration(argparse.Namespace(config=CONFIG))
    assert (found.where, found.path) == (str(CONFIG), CONFIG)
    assert "prod" in found.environments


def test_lkfr_plan_takes_only_a_function_it_can_plan(capsys: pytest.CaptureFixture[str]) -> None:
    from livekit_fleet_remediation.cli import plan

    command = plan.parser()
    assert command.parse_args(["reaper", "--env", "prod"]).function == "reaper"
    assert command.parse_args(["drainer", "--env", "prod"]).function == "drainer"
    with pytest.raises(SystemExit) as refused:
        command.parse_args(["janitor", "--env", "prod"])
    assert refused.value.code == 2
    assert "invalid choice: 'janitor'" in capsys.readouterr().err
    # Its help opens with the module's first paragraph, and only that.
    assert command.description == plan.__doc__.split("\n\n")[0]


def test_a_plan_environment_that_does_not_validate_is_a_configuration_error(tmp_path: Path) -> None:
    from livekit_fleet_remediation.cli.plan import load_plan_config

    broken = json.loads(CONFIG.read_text())
    broken["environments"]["prod"]["log_retention_days"] = "a fortnight"
    path = tmp_path / "environments.json"
    path.write_text(json.dumps(broken))
    with pytest.raises(PlanFailed) as refused:
        load_plan_config(argparse.Namespace(config=path, env="prod"))
    assert refused.value.code == "ConfigurationError"
    assert "log_retention_days" in refused.value.message
    name, config, where = load_plan_config(argparse.Namespace(config=path, env="staging"))
    assert (name, config, where) == ("staging", load_config_file(CONFIG, "staging"), str(path))


def _namespace(**given: Any) -> argparse.Namespace:
    return argparse.Namespace(
        **{"config": None, "stack": None, "app": None, "env": None, "region": None, **given}
    )


def two_services_config(tmp_path: Path) -> Path:
    """The example environments with a second agent service in prod."""
    document = json.loads(CONFIG.read_text())
    services = document["environments"]["prod"]["agent_services"]
    outbound = copy.deepcopy(services[0])
    outbound.update(name="outbound", ecs_service="outbound-agent", agent_log_group="/outbound/agent")
    services.append(outbound)
    path = tmp_path / "environments.json"
    path.write_text(json.dumps(document))
    return path


def test_the_target_comes_from_the_configuration_with_every_agent_service(tmp_path: Path) -> None:
    path = two_services_config(tmp_path)
    assert target(_namespace(config=path, env="prod")) == Target(
        "prod", "ap-northeast-2", ("agents", "outbound"), str(path)
    )
    # --region outranks the environment's own.
    assert target(_namespace(config=path, env="prod", region="eu-west-1")).region == "eu-west-1"
    # --env is needed where the file holds two environments.
    with pytest.raises(UsageError, match="holds 2 environments: pass --env prod or staging"):
        target(_namespace(config=path))


@pytest.mark.parametrize(
    ("service", "services"),
    [(None, ("agents",)), ("outbound", ("outbound",)), (["agents", "outbound"], ("agents", "outbound"))],
    ids=["default", "one-named", "two-named"],
)
def test_env_and_region_name_the_functions_without_reading_any_file(
    service: Any, services: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no configuration here: none is read
    monkeypatch.delenv("LKFR_CONFIG", raising=False)
    found = target(_namespace(env="prod", region="eu-west-1", service=service))
    assert found == Target("prod", "eu-west-1", services, "environment prod")


@pytest.mark.parametrize(
    "given",
    [{"env": "prod"}, {"region": "eu-west-1"}, {"env": "prod", "region": "eu-west-1", "stack": "app-stack"}],
    ids=["env-only", "region-only", "stack"],
)
def test_without_both_env_and_region_or_with_a_stack_the_configuration_is_read(
    given: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[argparse.Namespace] = []

    def configuration(args: argparse.Namespace) -> Configuration:
        read.append(args)
        prod = json.loads(CONFIG.read_text())["environments"]["prod"]
        return Configuration("stack app-stack", {"prod": prod})

    monkeypatch.setattr(common, "configuration", configuration)
    args = _namespace(**given)
    found = target(args)
    assert read == [args]
    assert found.env == "prod"
    assert found.where == "stack app-stack"
    assert found.services == ("agents",)
    assert found.region == given.get("region", "ap-northeast-2")


def test_the_agent_service_is_the_only_one_or_the_one_named() -> None:
    one = Target("prod", "eu-west-1", ("agents",), "environments.json")
    assert one.service(None) == "agents"
    assert one.service("agents") == "agents"
    with pytest.raises(UsageError) as refused:
        one.service("outbound")
    assert str(refused.value) == "environments.json: pass --service agents (not 'outbound')"
    two = Target("prod", "eu-west-1", ("agents", "outbound"), "environments.json")
    assert two.service("outbound") == "outbound"
    assert two.service("agents") == "agents"
    with pytest.raises(UsageError) as unnamed:
        two.service(None)
    assert str(unnamed.value) == "environments.json: pass --service agents or outbound"
    with pytest.raises(UsageError) as unknown:
        two.service("billing")
    assert str(unknown.value) == "environments.json: pass --service agents or outbound (not 'billing')"


@pytest.mark.parametrize("command", sorted(lkfr.COMMANDS))
def test_every_option_of_every_command_says_what_it_does(command: str) -> None:
    """``lkfr COMMAND --help``: the command's name, its docstring, a line for every option."""
    module = importlib.import_module(lkfr.COMMANDS[command])
    found = module.parser()
    assert found.prog == f"lkfr {command}"
    assert found.description
    assert found.description.split("\n")[0] == (module.__doc__ or "").split("\n")[0]
    # The help as a terminal shows it: without the docstring's code quotes.
    assert "`" not in found.format_help()
    for action in found._actions:
        assert action.help, f"lkfr {command} {'/'.join(action.option_strings) or action.dest} has no help"


def test_undo_without_a_task_is_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        undo.main(["--env", "prod", "--region", "eu-west-1"], invoker=RecordingInvoker(InvokeResult()))
    assert exited.value.code == 2
    assert "the following arguments are required: --task" in capsys.readouterr().err


def test_undo_asks_the_named_services_drainer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = two_services_config(tmp_path)
    lost = RecordingInvoker(InvokeResult(error="reply lost: read timeout", unknown=True))
    argv = ["--config", str(config), "--env", "prod", "--task", "2789d238"]
    assert undo.main([*argv, "--service", "outbound"], invoker=lost) == 1
    assert capsys.readouterr().err.startswith(
        "undo failed: OutcomeUnknown: lkfr-prod-outbound-worker-drainer's reply was lost"
    )
    # Two services and none named: bad arguments, the choices on one line on stderr, nothing sent.
    unsent = RecordingInvoker(InvokeResult(report=drainer_report("ok")))
    assert undo.main(argv, invoker=unsent) == 2
    captured = capsys.readouterr()
    assert captured.err == f"lkfr undo: error: {config}: pass --service agents or outbound\n"
    assert captured.out == ""
    assert unsent.events == []


def test_undo_json_prints_the_drainers_report_as_it_came(capsys: pytest.CaptureFixture[str]) -> None:
    report = drainer_report("ok")
    argv = ["--env", "prod", "--task", "2789d238", "--region", "eu-west-1", "--json"]
    assert undo.main(argv, invoker=RecordingInvoker(InvokeResult(report=report))) == 0
    assert capsys.readouterr().out == json.dumps(report, indent=2) + "\n"
    # A report without candidates is printed as it came, without --json too.
    bare = {"status": "ok", "actions": []}
    assert undo.main(argv[:-1], invoker=RecordingInvoker(InvokeResult(report=bare))) == 0
    assert capsys.readouterr().out == json.dumps(bare, indent=2) + "\n"


def test_a_failed_report_without_errors_says_its_status(capsys: pytest.CaptureFixture[str]) -> None:
    report = {**drainer_report("failed"), "errors": []}
    argv = ["--env", "prod", "--task", "2789d238", "--region", "eu-west-1"]
    assert undo.main(argv, invoker=RecordingInvoker(InvokeResult(report=report))) == 1
    assert capsys.readouterr().err == "undo failed: failed: see the report\n"


LIST_QUEUES = "when calling the ListQueues operation: Unknown"


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (
            ClientError({"Error": {"Code": "AccessDenied", "Message": "not  allowed\n here"}}, "ListQueues"),
            "AccessDenied: reading q: not allowed here",
        ),
        (ClientError({"Error": {"Message": "refused"}}, "ListQueues"), "ClientError: reading q: refused"),
        (
            ClientError({"Error": {"Code": "Throttling"}}, "ListQueues"),
            f"Throttling: reading q: An error occurred (Throttling) {LIST_QUEUES}",
        ),
        (
            ClientError({}, "ListQueues"),  # type: ignore[typeddict-item]
            f"ClientError: reading q: An error occurred (Unknown) {LIST_QUEUES}",
        ),
        (
            ReadTimeoutError(endpoint_url="https://sqs"),
            'ReadTimeoutError: reading q: Read timeout on endpoint URL: "https://sqs"',
        ),
    ],
    ids=["code-and-message", "no-code", "no-message", "no-error", "botocore"],
)
def test_an_sdk_failure_is_one_typed_line(error: Exception, line: str) -> None:
    assert str(sdk_failure(error, "reading q")) == line  # type: ignore[arg-type]


@pytest.mark.parametrize("command", sorted(lkfr.COMMANDS))
def test_every_commands_help_keeps_its_docstrings_lines_as_written(command: str) -> None:
    """The description is not re-wrapped to the terminal: its usage lines stay on lines of their own."""
    found = importlib.import_module(lkfr.COMMANDS[command]).parser()
    shown = found.format_help().splitlines()
    assert found.description
    opening = [line.rstrip() for line in found.description.split("\n")[:2]]
    start = shown.index(opening[0])
    assert shown[start : start + len(opening)] == opening


COMMANDS_PAGE = REPO / "docs" / "operations" / "commands.md"
# Every command: the page shows its --help under its section.
HELP_SHOWN = (
    "plan",
    "audit",
    "undo",
    "redrive",
    "drill",
    "replay",
    "backtest",
    "cost",
    "validate",
    "completion",
)


def test_the_commands_page_shows_the_help_of_every_command() -> None:
    assert sorted(HELP_SHOWN) == sorted(COMMANDS)


@pytest.mark.parametrize("command", HELP_SHOWN)
def test_the_commands_page_shows_each_commands_help_as_it_prints(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/operations/commands.md holds ``lkfr COMMAND --help`` exactly as an 80-column terminal shows
    it: the page and the command cannot drift apart."""
    # argparse wraps the options' help to $COLUMNS.
    monkeypatch.setenv("COLUMNS", "80")
    assert lkfr.main([command, "--help"]) == 0
    block = f"```console\n$ lkfr {command} --help\n{capsys.readouterr().out}```\n"
    shown = textwrap.indent(block, "    ")
    assert shown in COMMANDS_PAGE.read_text(), (
        f"{COMMANDS_PAGE.relative_to(REPO)}: show this instead\n{shown}"
    )


def test_an_environment_the_configuration_lacks_is_named_with_the_ones_it_has() -> None:
    prod = json.loads(CONFIG.read_text())["environments"]["prod"]
    found = Configuration("team.json", {"staging": prod, "prod": prod, "eu": prod})
    with pytest.raises(UsageError) as refused:
        found.choose("qa")
    assert str(refused.value) == "team.json: environment 'qa' is not there (have: eu, prod, staging)"
    assert found.choose("eu") == "eu"


def test_an_undo_whose_reply_was_lost_says_to_read_the_audit_before_trying_again(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lost = RecordingInvoker(InvokeResult(error="reply lost: read timeout", unknown=True))
    assert undo.main(["--env", "prod", "--task", "2789d238", "--region", "eu-west-1"], invoker=lost) == 1
    assert capsys.readouterr().err == (
        "undo failed: OutcomeUnknown: lkfr-prod-agents-worker-drainer's reply was lost (reply lost: read "
        "timeout): it may have acted; see lkfr audit before trying again\n"
    )
