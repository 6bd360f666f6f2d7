"""``lkfr``: the dispatcher, the commands running with only the packages on the path (as after
``pip install``: no checkout, no devkit, no CDK), the missing-config error, and ``lkfr undo``'s reading
of the drainer's answer, through a recording invoker (the invoke itself needs a deployed drainer)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fleet_remediation import __version__
from fleet_remediation.core import messages
from livekit_fleet_remediation.cli import main as lkfr
from livekit_fleet_remediation.cli import undo
from livekit_fleet_remediation.cli.invoke import InvokeResult

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
    assert f"no environments.json in {tmp_path}: pass --config PATH" in line
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
