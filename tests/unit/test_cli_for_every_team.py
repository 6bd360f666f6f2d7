"""``lkfr`` for every team: ``--json`` and a help without code quotes on every command, ``lkfr validate``
naming a wrong field, the JSON Schema shipped beside the code and generated from the same model,
shell completion from the commands' own parsers, and errors that name the user's things."""

from __future__ import annotations

import importlib
import json
import subprocess
from pathlib import Path

import pytest

from livekit_fleet_remediation.cli import backtest, completion, main, validate
from livekit_fleet_remediation.cli.common import UsageError, config_file
from tests.example_environments import EXAMPLE_CONFIG

COMMANDS = {name: module for name, module in main.COMMANDS.items() if name != "completion"}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_takes_json(name: str) -> None:
    parser = importlib.import_module(COMMANDS[name]).parser()
    assert "--json" in completion._words(parser)


@pytest.mark.parametrize("name", sorted(main.COMMANDS))
def test_every_commands_help_has_no_code_quotes(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main([name, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: lkfr {name}")
    assert "`" not in out


def test_the_commands_list_has_no_code_quotes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "lkfr validate" in out
    assert "`" not in out


def _environments(tmp_path: Path, **changes: object) -> Path:
    document = json.loads(EXAMPLE_CONFIG.read_text())
    for env in document["environments"].values():
        env.update(changes)
    path = tmp_path / "team-environments.json"
    path.write_text(json.dumps(document))
    return path


def test_validate_passes_a_good_file_and_names_its_environments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _environments(tmp_path)
    assert validate.main(["--config", str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["valid"] is True
    assert document["source"] == str(path)
    assert document["environments"] == sorted(json.loads(EXAMPLE_CONFIG.read_text())["environments"])


def test_validate_names_a_wrong_field_and_the_users_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _environments(tmp_path, log_retention_dayz=30)
    assert validate.main(["--config", str(path), "--env", "prod"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"invalid: {path}: ")
    assert "environments.prod.log_retention_dayz" in line
    assert "Extra inputs are not permitted" in line


def test_validate_names_a_value_out_of_range(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _environments(tmp_path, lambda_architecture="sparc")
    assert validate.main(["--config", str(path), "--env", "staging"]) == 1
    err = capsys.readouterr().err
    assert "environments.staging.lambda_architecture" in err
    assert "'arm64' or 'x86_64'" in err


def test_the_shipped_schema_is_the_models(capsys: pytest.CaptureFixture[str]) -> None:
    """Generated from EnvironmentConfig: regenerate it when the model changes (the message says how)."""
    generated = json.dumps(validate.environments_schema(), indent=2, sort_keys=True) + "\n"
    assert validate.SCHEMA_FILE.read_text() == generated, (
        "regenerate: python -c 'import json; from livekit_fleet_remediation.cli.validate import *; "
        'SCHEMA_FILE.write_text(json.dumps(environments_schema(), indent=2, sort_keys=True) + "\\n")\''
    )
    assert validate.main(["--schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    environment = schema["properties"]["environments"]["additionalProperties"]
    assert environment["additionalProperties"] is False
    assert "log_retention_days" in environment["properties"]


def test_no_configuration_here_says_what_a_team_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LKFR_CONFIG", raising=False)
    with pytest.raises(UsageError) as raised:
        config_file(None)
    message = str(raised.value)
    assert "--stack NAME" in message
    assert "--app" in message
    assert "examples/" not in message
    assert "tests/" not in message


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["lkfr", "va"], ["validate"]),
        (["lkfr", "plan", "--st"], ["--stack"]),
        (["lkfr", "plan", "dr"], ["drainer"]),
        (["lkfr", "completion", "z"], ["zsh"]),
    ],
)
def test_bash_completes_commands_options_and_choices(words: list[str], expected: list[str]) -> None:
    script = completion.bash_script()
    probe = (
        f"{script}\nCOMP_WORDS=({' '.join(words)}); COMP_CWORD={len(words) - 1}; _lkfr; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30, check=True)
    assert done.stdout.split() == expected


def test_the_zsh_script_runs_the_same_completion_through_bashcompinit() -> None:
    script = completion.zsh_script()
    assert script.startswith("#compdef lkfr\n")
    assert "bashcompinit" in script
    assert completion.bash_script() in script


def test_backtest_example_runs_the_shipped_incident_without_any_file_of_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LKFR_CONFIG", raising=False)
    assert backtest.main(["--example", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert {"alarm": "tts_reach", "state": "ALARM", "at": "2026-09-15T17:37:00+00:00"} in document[
        "transitions"
    ]
    assert document["failing_sessions"] == 24
