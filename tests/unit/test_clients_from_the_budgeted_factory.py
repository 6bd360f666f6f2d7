"""Every AWS client of the runtime code, the tools and the benchmarks comes from the budgeted factory
(``adapters/aws_clients.py``): a client built anywhere else carries botocore's defaults (60 s socket
timeouts, retries after an attempt that may have acted) that no budget counts.

The check reads the source (``ast``): a ``.client(`` or ``.resource(`` call on ``boto3``, on a
``boto3.Session(...)`` or on a session object, and a Powertools ``boto_config=`` (which builds its
own client), anywhere but the factory."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("functions", "layers", "src", "cdk", "agent", "tools", "bench")
FACTORY = ROOT / "layers/shared/python/fleet_remediation/adapters/aws_clients.py"


def _builds_a_client(node: ast.Call) -> bool:
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr not in ("client", "resource"):
        return False
    target = func.value
    if isinstance(target, ast.Name):
        return target.id == "boto3" or "session" in target.id.lower()
    if isinstance(target, ast.Call):  # boto3.Session(...).client(...)
        inner = target.func
        name = inner.attr if isinstance(inner, ast.Attribute) else getattr(inner, "id", "")
        return name == "Session"
    return isinstance(target, ast.Attribute) and "session" in target.attr.lower()


def client_builders(source: str) -> list[int]:
    """Lines that build an AWS client outside the factory."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        if _builds_a_client(node) or any(keyword.arg == "boto_config" for keyword in node.keywords):
            lines.append(node.lineno)
    return lines


def test_no_client_is_built_outside_the_budgeted_factory() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for folder in SCANNED
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != FACTORY and "cdk.out" not in path.parts
        for line in client_builders(path.read_text())
    ]
    assert found == []


@pytest.mark.parametrize(
    "source",
    [
        "import boto3\nboto3.client('ecs')",
        "import boto3\nboto3.resource('dynamodb')",
        "import boto3\nboto3.Session(region_name='eu-west-1').client('sns')",
        "import boto3\nsession = boto3.session.Session()\nsession.client('ssm')",
        "DynamoDBPersistenceLayer(table_name='t', boto_config=None)",
    ],
)
def test_the_check_finds_each_way_of_building_a_client(source: str) -> None:
    assert client_builders(source) != []


def test_the_factory_is_where_clients_are_built() -> None:
    assert client_builders(FACTORY.read_text()) != []
