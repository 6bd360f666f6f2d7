"""Synthesize each environment once per session (offline, no Docker, no CDK CLI)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import assertions

from app import build_app, cdk_json_context
from fleet_stack.stack import FleetRemediationStack


class Synthesized:
    def __init__(self, stack: FleetRemediationStack, outdir: Path) -> None:
        self.stack = stack
        self.template = assertions.Template.from_stack(stack)
        self.annotations = assertions.Annotations.from_stack(stack)
        self.template_path = outdir / f"{stack.stack_name}.template.json"


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Synthesized]:
    cache: dict[str, Synthesized] = {}

    def _synth(env_name: str = "staging", context: dict[str, Any] | None = None) -> Synthesized:
        if context is None and env_name in cache:
            return cache[env_name]
        outdir = tmp_path_factory.mktemp(f"cdk-{env_name}")
        app, stack = build_app(env_name, context or cdk_json_context(), str(outdir))
        app.synth()
        result = Synthesized(stack, outdir)
        if context is None:
            cache[env_name] = result
        return result

    return _synth


@pytest.fixture(scope="session")
def staging(synth: Callable[..., Synthesized]) -> Synthesized:
    return synth("staging")
