"""Every resource of the example environments keeps its logical ID and type: a refactor that renames
one replaces it on deploy, and a replaced ledger table loses its data. The expected IDs are
``tests/fixtures/logical_ids.json``; a change that means to add or replace resources rewrites it with
``python -m tests.infra.test_logical_ids`` and says so in the CHANGELOG's upgrade notes."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from livekit_fleet_remediation.standalone import build_app
from tests.example_environments import REPO, example_context

EXPECTED = REPO / "tests" / "fixtures" / "logical_ids.json"
ENVIRONMENTS = ("staging", "prod")


def resource_types(template: dict[str, Any]) -> dict[str, str]:
    return {logical_id: resource["Type"] for logical_id, resource in sorted(template["Resources"].items())}


def synthesized_types(env_name: str, outdir: Path) -> dict[str, str]:
    app, stack = build_app(env_name, example_context(), str(outdir))
    app.synth()
    return resource_types(json.loads((outdir / f"{stack.stack_name}.template.json").read_text()))


@pytest.mark.parametrize("env_name", ENVIRONMENTS)
def test_every_resource_keeps_its_logical_id_and_type(env_name: str, synth: Callable[..., Any]) -> None:
    template = json.loads(synth(env_name).template_path.read_text())
    expected = json.loads(EXPECTED.read_text())[env_name]
    actual = resource_types(template)
    assert {key: actual.get(key) for key in expected if actual.get(key) != expected[key]} == {}
    assert sorted(set(actual) - set(expected)) == []


def main() -> int:
    with tempfile.TemporaryDirectory() as out:
        found = {env: synthesized_types(env, Path(out) / env) for env in ENVIRONMENTS}
    EXPECTED.write_text(json.dumps(found, indent=2, sort_keys=True) + "\n")
    print(f"wrote {EXPECTED}: " + ", ".join(f"{env} {len(ids)}" for env, ids in found.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
