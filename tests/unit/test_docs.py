"""The commands in README.md and docs/ paste and work against the stacks this repository deploys.

Every ``aws …`` command (in a code block, continuation lines joined, or in inline code) must name a
real AWS CLI operation (from botocore's service models); SSM parameter names and Lambda function
names must exist in the synthesized stacks (``<env>`` stands for each environment in cdk.json);
``lambda invoke`` must carry ``--cli-binary-format raw-in-base64-out``, exactly one ``--payload``
with valid JSON and an output file; ``cdk`` commands must name stacks the app has. The docs must not
carry the example company's names, which belong in the example cdk.json only.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from aws_cdk import assertions

from app import build_stacks, cdk_json_context

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
ENVIRONMENTS = sorted(cdk_json_context()["environments"])
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
    for match in re.finditer(r"^(\s*)```[^\n]*\n(.*?)^\s*```", text, re.MULTILINE | re.DOTALL):
        yield text.count("\n", 0, match.start()) + 2, match.group(2)


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
    _, built = build_stacks(None, cdk_json_context(), str(tmp_path_factory.mktemp("docs-cdk")))
    return {env: assertions.Template.from_stack(stack).to_json() for env, stack in built.items()}


def resource_names(stacks: dict[str, dict[str, Any]], kind: str, field: str) -> set[str]:
    return {
        resource["Properties"][field]
        for template in stacks.values()
        for resource in template["Resources"].values()
        if resource["Type"] == kind and isinstance(resource["Properties"].get(field), str)
    }


def expand(value: str) -> list[str]:
    """A name with ``<env>`` in it, for every environment; other placeholders stay."""
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
        if line.startswith("--")
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
