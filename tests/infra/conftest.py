"""Synthesize each environment once per session (offline, no Docker, no CDK CLI)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import assertions

from livekit_fleet_remediation.stack import FleetRemediationStack
from livekit_fleet_remediation.standalone import build_app, pinned_context
from tests.example_environments import EXAMPLE_CONFIG, REPO, example_context

CONSUMER = REPO / "examples" / "consumer_app"


class Synthesized:
    def __init__(self, stack: FleetRemediationStack, outdir: Path) -> None:
        self.stack = stack
        self.template = assertions.Template.from_stack(stack)
        self.annotations = assertions.Annotations.from_stack(stack)
        self.template_path = outdir / f"{stack.stack_name}.template.json"


def cfn_lint(template_path: Path) -> subprocess.CompletedProcess[str]:
    """cfn-lint on a synthesized template. W3005: CDK adds an explicit DependsOn on the role beside
    the GetAtt; harmless redundancy."""
    command = [
        str(Path(sys.executable).parent / "cfn-lint"),
        "--ignore-checks",
        "W3005",
        "--",
        str(template_path),
    ]
    return subprocess.run(command, capture_output=True, text=True)


def assert_nag_lint_and_service_models_clean(synthesized: Synthesized) -> None:
    """cdk-nag (no AwsSolutions finding), cfn-lint and the service-model and quota checks."""
    from devkit.service_models import check_template
    from devkit.service_quotas import check_quotas

    pattern = assertions.Match.string_like_regexp("AwsSolutions-.*")
    found = synthesized.annotations.find_error("*", pattern) + synthesized.annotations.find_warning(
        "*", pattern
    )
    assert [e.entry.data for e in found] == []
    result = cfn_lint(synthesized.template_path)
    assert result.returncode == 0, result.stdout + result.stderr
    template = synthesized.template.to_json()
    assert check_template(template, "eu-west-1", "123456789012") == []
    assert check_quotas(template, "eu-west-1", "123456789012") == []


def trusted_principal(synthesized: Synthesized, role: dict[str, Any]) -> Any:
    """Who may assume the role a function's ``Role`` (a GetAtt of it) names: its one statement."""
    roles = synthesized.template.find_resources("AWS::IAM::Role")
    (statement,) = roles[role["Fn::GetAtt"][0]]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Action"] == "sts:AssumeRole"
    return statement["Principal"]


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Synthesized]:
    cache: dict[str, Synthesized] = {}

    def _synth(env_name: str = "staging", context: dict[str, Any] | None = None) -> Synthesized:
        if context is None and env_name in cache:
            return cache[env_name]
        outdir = tmp_path_factory.mktemp(f"cdk-{env_name}")
        app, stack = build_app(env_name, context or example_context(), str(outdir))
        app.synth()
        result = Synthesized(stack, outdir)
        if context is None:
            cache[env_name] = result
        return result

    return _synth


def consumer_module() -> ModuleType:
    """examples/consumer_app/app.py, loaded by path, as the CDK CLI runs it from its own folder: it
    needs no path of ours."""
    spec = importlib.util.spec_from_file_location("consumer_app", CONSUMER / "app.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def synth_consumer(outdir: Path, context: dict[str, Any]) -> cdk.Stack:
    app = consumer_module().build(str(outdir), context)
    app.synth()
    (stack,) = [child for child in app.node.children if isinstance(child, cdk.Stack)]
    return stack


@pytest.fixture(scope="session")
def consumer_app(tmp_path_factory: pytest.TempPathFactory) -> cdk.Stack:
    """The consumer app's stack under the feature flags its cdk.json pins, synthesized once."""
    return synth_consumer(tmp_path_factory.mktemp("consumer"), pinned_context(CONSUMER / "cdk.json"))


@pytest.fixture(scope="session")
def stack_templates(
    synth: Callable[..., Synthesized], consumer_app: cdk.Stack
) -> dict[str, tuple[dict[str, Any], str, str]]:
    """Each environment's stack of the example configuration, and the consumer app's: its template,
    region and account."""
    found = {}
    for name in sorted(json.loads(EXAMPLE_CONFIG.read_text())["environments"]):
        synthesized = synth(name)
        found[name] = (
            dict(synthesized.template.to_json()),
            synthesized.stack.region,
            synthesized.stack.account,
        )
    consumer = dict(assertions.Template.from_stack(consumer_app).to_json())
    return {**found, "consumer app": (consumer, consumer_app.region, consumer_app.account)}


@pytest.fixture(scope="session")
def staging(synth: Callable[..., Synthesized]) -> Synthesized:
    return synth("staging")


@pytest.fixture
def cold_start(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """Read a function's settings model the way Lambda starts it: from the environment variables the
    template deploys (tokens, which only CloudFormation resolves, replaced by ``resolved``)."""
    from fleet_remediation.contract.settings import settings_from_environment

    def _cold_start(model: type[Any], function: dict[str, Any], **resolved: str) -> Any:
        variables = function["Properties"]["Environment"]["Variables"]
        plain = {name: value for name, value in variables.items() if isinstance(value, str)}
        unresolved = set(variables) - set(plain) - set(resolved)
        assert not unresolved, f"deployed variables left unresolved by the test: {sorted(unresolved)}"
        for name, value in {**plain, **resolved}.items():
            monkeypatch.setenv(name, value)
        return settings_from_environment(model)

    return _cold_start
