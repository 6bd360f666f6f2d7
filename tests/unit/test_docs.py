"""The commands in README.md, CHANGELOG.md and docs/ paste and work against the stacks this repository
deploys, and no page or docstring points at a file outside the repository.

Every ``aws …`` command (in a code block, continuation lines joined, or in inline code) must name a
real AWS CLI operation (from botocore's service models); SSM parameter names and Lambda function
names must exist in the synthesized stacks (``<env>`` stands for each example environment,
``<service>`` for their agent service);
``lambda invoke`` must carry ``--cli-binary-format raw-in-base64-out``, exactly one ``--payload``
with valid JSON and an output file; ``cdk`` commands must name stacks the app has; ``aws ssm``
commands run on moto against the stacks' parameters; ``make`` commands name Makefile targets and
``python -m`` modules exist. In a ``console`` block (a terminal session) only the lines after a
``$ `` prompt are commands; the rest is what they print. The docs must not
carry the example company's names, which belong in the example cdk.json only. (The dead-letter
runbook's steps are also run, on moto: tests/integration/test_dead_letter_redrive.py.)
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import botocore.session
import pytest
from aws_cdk import assertions
from moto import mock_aws

from fleet_remediation import __version__
from livekit_fleet_remediation.standalone import build_stacks
from tests.aws_cli import AwsCli
from tests.example_environments import example_context

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").rglob("*.md"))]
ENVIRONMENTS = sorted(example_context()["environments"])
# The example company's names: fine in the example cdk.json, never in the docs.
COMPANY_SPECIFIC = re.compile(r"/ppi/|\bppi[-/]|\blessons?\b|\bchild(ren)?\b|typecast|핑퐁", re.IGNORECASE)
# The replay's --json document keeps the key its contract names: "lessons".
CONTRACT_KEYS = re.compile(r'"lessons"')


@dataclass(frozen=True)
class Command:
    where: str
    text: str
    words: list[str]


def _code_blocks(text: str) -> Iterator[tuple[int, str]]:
    for match in re.finditer(r"^(\s*)```([^\n]*)\n(.*?)^\s*```", text, re.MULTILINE | re.DOTALL):
        block = match.group(3)
        if match.group(2).strip() == "console":
            # A terminal session: the lines after its "$ " prompts are commands, the rest is their output.
            block = "".join(
                line for line in block.splitlines(keepends=True) if line.lstrip().startswith("$ ")
            )
        yield text.count("\n", 0, match.start()) + 2, block


def _logical_lines(block: str) -> Iterator[str]:
    pending = ""
    for raw in block.splitlines():
        line = raw.strip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        yield (pending + line).strip()
        pending = ""


def commands(program: str) -> list[Command]:
    found = []
    for document in DOCUMENTS:
        text = document.read_text()
        name = document.relative_to(REPO)
        candidates = [
            (line, f"{name}:{start}") for start, block in _code_blocks(text) for line in _logical_lines(block)
        ]
        # Inline code is a command to paste when it carries options; "`aws lambda invoke` calls" is prose.
        candidates += [
            (span, f"{name} (inline)")
            for span in re.findall(r"(?<!`)`([^`\n]+)`(?!`)", text)
            if " --" in span
        ]
        for line, where in candidates:
            # A command starts its line: "aws ...", "$ aws ...", "npx cdk ...", "node_modules/.bin/cdk ...".
            line = re.sub(r"^(\$ )?(npx |node_modules/\.bin/)?", "", line)
            words = shlex.split(line, comments=True) if line.startswith(f"{program} ") else []
            # Two words at least after the program: prose like "every `aws …` command" is no command.
            if len(words) >= 3:
                found.append(Command(where, line, words))
    return found


def option(words: list[str], name: str) -> list[str]:
    """Every value given to ``--name``."""
    return [words[i + 1] for i, word in enumerate(words[:-1]) if word == name]


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    _, built = build_stacks(None, example_context(), str(tmp_path_factory.mktemp("docs-cdk")))
    return {env: assertions.Template.from_stack(stack).to_json() for env, stack in built.items()}


def resource_names(stacks: dict[str, dict[str, Any]], kind: str, field: str) -> set[str]:
    return {
        resource["Properties"][field]
        for template in stacks.values()
        for resource in template["Resources"].values()
        if resource["Type"] == kind and isinstance(resource["Properties"].get(field), str)
    }


# The example environments' one agent service, for names written with ``<service>``.
EXAMPLE_SERVICE = "agents"


def expand(value: str) -> list[str]:
    """A name with ``<env>`` in it, for every environment (``<service>``: the example environments'
    agent service); other placeholders stay."""
    value = value.replace("<service>", EXAMPLE_SERVICE)
    return [value.replace("<env>", env) for env in ENVIRONMENTS] if "<env>" in value else [value]


AWS_COMMANDS = commands("aws")


def test_the_docs_have_aws_commands_to_check() -> None:
    assert len(AWS_COMMANDS) >= 20
    assert any(c.words[1:3] == ["lambda", "invoke"] for c in AWS_COMMANDS)


@pytest.mark.parametrize("command", AWS_COMMANDS, ids=lambda c: f"{c.where} {' '.join(c.words[1:3])}")
def test_every_aws_command_is_a_real_operation(command: Command) -> None:
    session = botocore.session.get_session()
    service, operation = command.words[1], command.words[2]
    model = session.get_service_model(service)
    cli_names = {re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower() for name in model.operation_names}
    assert operation in cli_names, f"{command.where}: aws {service} {operation} is no operation"


@pytest.mark.parametrize(
    "command", [c for c in AWS_COMMANDS if c.words[1] == "ssm"], ids=lambda c: f"{c.where} {c.words[2]}"
)
def test_ssm_parameter_names_exist_in_the_stacks(command: Command, stacks: dict[str, dict[str, Any]]) -> None:
    known = resource_names(stacks, "AWS::SSM::Parameter", "Name")
    names = option(command.words, "--name")
    if "--names" in command.words:
        start = command.words.index("--names") + 1
        names += [w for w in command.words[start:] if not w.startswith("--")][: len(command.words)]
        names = [n for n in names if n.startswith("/")]
    assert names, f"{command.where}: no parameter name in {command.text}"
    for name in names:
        for concrete in expand(name):
            assert concrete in known, f"{command.where}: {concrete} is not a parameter of the stacks"


def test_every_stack_description_carries_the_release_version(stacks: dict[str, dict[str, Any]]) -> None:
    """The docs tell an operator to read the version there (the upgrade notes)."""
    assert {env: t["Description"] for env, t in stacks.items()} == {
        env: f"LiveKit Fleet Remediation {__version__} ({env})" for env in ENVIRONMENTS
    }


def test_the_kill_switch_commands_run_on_moto(stacks: dict[str, dict[str, Any]]) -> None:
    """Every ``aws ssm`` line of the docs, for every environment, run on moto against the stacks' own
    parameters: a put leaves its parameter at the value it names, a get returns every parameter."""
    parameters = {
        resource["Properties"]["Name"]: str(resource["Properties"]["Value"])
        for template in stacks.values()
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::SSM::Parameter"
    }
    commands = [c for c in AWS_COMMANDS if c.words[1] == "ssm"]
    assert {c.words[2] for c in commands} == {"put-parameter", "get-parameters"}
    with mock_aws():
        session = boto3.session.Session(region_name="eu-west-1")
        ssm = session.client("ssm")
        for name, value in parameters.items():
            ssm.put_parameter(Name=name, Value=value, Type="String")
        cli = AwsCli(session)
        for command in commands:
            for env in ENVIRONMENTS:
                words = [word.replace("<env>", env) for word in command.words]
                output = cli.run(words)
                if words[2] == "put-parameter":
                    ((name,), (value,)) = option(words, "--name"), option(words, "--value")
                    assert ssm.get_parameter(Name=name)["Parameter"]["Value"] == value, command.where
                else:
                    assert all(name in output for name in words if name.startswith("/")), command.where


LAMBDA_INVOKES = [c for c in AWS_COMMANDS if c.words[1:3] == ["lambda", "invoke"]]


@pytest.mark.parametrize("command", LAMBDA_INVOKES, ids=lambda c: c.where)
def test_lambda_invokes_paste(command: Command, stacks: dict[str, dict[str, Any]]) -> None:
    words = command.words
    assert option(words, "--cli-binary-format") == ["raw-in-base64-out"], f"{command.where}: {command.text}"
    (payload,) = option(words, "--payload")
    json.loads(payload)
    (function,) = option(words, "--function-name")
    known = resource_names(stacks, "AWS::Lambda::Function", "FunctionName")
    for concrete in expand(function):
        assert concrete in known, f"{command.where}: no function {concrete} in the stacks"
    positional = [
        w for i, w in enumerate(words[3:], 3) if not w.startswith("--") and not words[i - 1].startswith("--")
    ]
    assert positional, f"{command.where}: no output file"


CDK_COMMANDS = [
    c for c in commands("cdk") if len(c.words) > 2 and c.words[1] in ("deploy", "destroy", "diff")
]


@pytest.mark.parametrize("command", CDK_COMMANDS, ids=lambda c: f"{c.where} {c.words[1]}")
def test_cdk_commands_name_stacks_the_app_has(command: Command) -> None:
    stacks = {f"LiveKitFleetRemediation-{env}" for env in ENVIRONMENTS}
    named = [w for w in command.words[2:] if not w.startswith("-")]
    assert named, command.text
    for stack in named:
        for concrete in expand(stack.replace("<env>", "<env>")):
            assert concrete in stacks, f"{command.where}: no stack {concrete}"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: str(d.relative_to(REPO)))
def test_no_option_line_dangles_without_its_command(document: Path) -> None:
    """A line starting with ``--`` that no backslash joins to a command (three ``--payload`` lines
    under one ``aws lambda invoke``) does not paste: the shell runs it as a command of its own."""
    dangling = [
        f"{document.relative_to(REPO)}:{start}: {line}"
        for start, block in _code_blocks(document.read_text())
        for line in _logical_lines(block)
        # A snippet include ("--8<-- FILE") is the site's, not a shell line.
        if line.startswith("--") and not line.startswith("--8<--")
    ]
    assert dangling == []


def test_the_kill_switch_is_named_as_the_stack_names_it() -> None:
    texts = "\n".join(d.read_text() for d in DOCUMENTS)
    assert "/lkfr/" not in texts


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: str(d.relative_to(REPO)))
def test_the_docs_carry_no_company_specific_names(document: Path) -> None:
    found = [
        f"{document.relative_to(REPO)}:{number}: {line.strip()}"
        for number, line in enumerate(document.read_text().splitlines(), 1)
        if COMPANY_SPECIFIC.search(CONTRACT_KEYS.sub('"..."', line))
    ]
    assert found == []


# What lies outside the repository: the design notes and the source material beside it.
OUTSIDE = re.compile(r"DESIGN\.md|\.\./shared\b|shared/seeds|\bseeds/")
SOURCE_DIRS = ("agent", "bench", "cdk", "src", "devkit", "functions", "layers", "tests", "tools", "docs")


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: str(d.relative_to(REPO)))
def test_no_page_points_outside_the_repository(document: Path) -> None:
    text = document.read_text()
    found = [m.group(0) for m in OUTSIDE.finditer(text)]
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" in target or target.startswith("mailto:"):
            continue
        resolved = (document.parent / target).resolve()
        if not resolved.is_relative_to(REPO) or not resolved.exists():
            found.append(target)
    assert found == []


def test_no_docstring_or_comment_points_outside_the_repository() -> None:
    found = [
        f"{path.relative_to(REPO)}:{number}"
        for folder in SOURCE_DIRS
        for path in sorted((REPO / folder).rglob("*.py"))
        if path != Path(__file__)
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert found == []


def test_the_readme_is_a_short_entry_page() -> None:
    """A newcomer reads it in minutes; the rest is in the docs site."""
    assert len((REPO / "README.md").read_text().splitlines()) <= 150


MAKE_TARGETS = set(re.findall(r"^([a-z][a-z-]*):", (REPO / "Makefile").read_text(), re.MULTILINE))


@pytest.mark.parametrize("command", commands("make"), ids=lambda c: f"{c.where} {c.words[1]}")
def test_every_make_command_names_a_target(command: Command) -> None:
    targets = [w for w in command.words[1:] if "=" not in w and not w.startswith("-")]
    assert set(targets) <= MAKE_TARGETS, f"{command.where}: {command.text}"


# "python -m tools.plan", never "python -m bench.…" (prose for any of them).
PYTHON_MODULE = re.compile(r"python3? -m ([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*)(?![\w.…])")


def _python_modules() -> list[tuple[str, str]]:
    found = []
    for document in DOCUMENTS:
        modules = PYTHON_MODULE.findall(document.read_text())
        found += [(str(document.relative_to(REPO)), module) for module in modules]
    return found


@pytest.mark.parametrize(("where", "module"), _python_modules(), ids=lambda v: v)
def test_every_python_module_the_docs_run_exists(where: str, module: str) -> None:
    path = REPO / Path(*module.split("."))
    ours = path.with_suffix(".py").is_file() or (path / "__main__.py").is_file()
    installed = not (REPO / module.split(".")[0]).exists() and importlib.util.find_spec(module) is not None
    assert ours or installed, f"{where}: python -m {module}"


# A file or folder of this repository named in backticks: `tools/redrive.py`, `docs/runbooks/`.
REPO_PATH = re.compile(
    r"`((?:agent|bench|cdk|devkit|docs|functions|layers|requirements|src|tests|tools)/[\w./-]*)`"
)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: str(d.relative_to(REPO)))
def test_every_repository_path_the_docs_name_exists(document: Path) -> None:
    missing = [path for path in REPO_PATH.findall(document.read_text()) if not (REPO / path).exists()]
    assert missing == []


LKFR_COMMANDS = commands("lkfr")


def test_the_docs_show_every_console_command() -> None:
    from livekit_fleet_remediation.cli.main import COMMANDS

    assert {c.words[1] for c in LKFR_COMMANDS} == set(COMMANDS)


def _without_optional(words: list[str]) -> list[str]:
    """A synopsis's ``[--json]`` and ``[--max N]`` are optional: left out of the parse."""
    kept, depth = [], 0
    for word in words:
        depth += word.count("[")
        if depth == 0:
            kept.append(word)
        depth -= word.count("]")
    return kept


@pytest.mark.parametrize("command", LKFR_COMMANDS, ids=lambda c: f"{c.where} {c.words[1]}")
def test_every_console_command_the_docs_show_parses(command: Command) -> None:
    """Each ``lkfr ...`` line, placeholders filled, is accepted by that command's own parser."""
    from livekit_fleet_remediation.cli.main import COMMANDS

    assert command.words[1] in COMMANDS, f"{command.where}: no command {command.words[1]}"
    module = importlib.import_module(COMMANDS[command.words[1]])
    words = [
        expand(w.replace("<env>", ENVIRONMENTS[0]))[0].replace("<task-id>", "2789d238") for w in command.words
    ]
    if "--help" in words:
        # What it prints is pinned apart (tests/unit/test_cli.py); here, only that the command takes it.
        with pytest.raises(SystemExit) as helped:
            module.parser().parse_args(words[2:])
        assert helped.value.code == 0, f"{command.where}: {command.text}"
        return
    args = module.parser().parse_args(_without_optional(words[2:]))
    assert "<" not in " ".join(str(v) for v in vars(args).values()), f"{command.where}: {command.text}"


WHEEL_FILES = {
    f"dist/{name}-{__version__}-py3-none-any.whl"
    for name in ("livekit_fleet_remediation", "livekit_fleet_agent")
}


OUR_PIP_INSTALLS = [c for c in commands("pip") if any(w.startswith("dist/") for w in c.words)]


def test_the_docs_install_our_wheels_somewhere() -> None:
    assert len(OUR_PIP_INSTALLS) >= 2


@pytest.mark.parametrize("command", OUR_PIP_INSTALLS, ids=lambda c: c.where)
def test_every_pip_install_of_ours_names_a_wheel_make_dist_writes(command: Command) -> None:
    """tests/packaging/test_wheels.py asserts `make dist` writes exactly these names."""
    assert command.words[1] == "install", command.text
    ours = {word for word in command.words[2:] if word.startswith("dist/")}
    assert ours <= WHEEL_FILES, f"{command.where}: {command.text}"
