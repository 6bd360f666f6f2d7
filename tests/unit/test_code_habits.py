"""The lint steps that keep the code's shape can fail: each is run for real on a copy of the code
with one deliberate fault, and must fail on exactly that fault (and pass on the unchanged copy)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devkit import code_shape

REPO = Path(__file__).resolve().parents[2]
LAYER = REPO / "layers" / "shared" / "python" / "fleet_remediation"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(layer_copy_root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the repository's own .importlinter, the shared layer taken from the copy."""
    path = [layer_copy_root, REPO / "agent", REPO / "functions", REPO / "src", REPO]
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(REPO / ".importlinter")],
        cwd=layer_copy_root,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, path))},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.fixture
def layer_copy(tmp_path: Path) -> Path:
    shutil.copytree(LAYER, tmp_path / "fleet_remediation", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_the_import_contracts_hold_on_an_unchanged_copy(layer_copy: Path) -> None:
    result = lint_imports(layer_copy)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_contract_module_importing_core_breaks_the_layer_order(layer_copy: Path) -> None:
    naming = layer_copy / "fleet_remediation" / "contract" / "naming.py"
    naming.write_text(naming.read_text() + "\nfrom fleet_remediation.core import errors as _errors\n")
    result = lint_imports(layer_copy)
    assert result.returncode == 1
    assert "fleet_remediation.contract is not allowed to import fleet_remediation.core" in result.stdout
    assert "fleet_remediation.contract.naming -> fleet_remediation.core.errors" in result.stdout


def test_a_type_checking_import_counts_like_any_other(layer_copy: Path) -> None:
    rooms = layer_copy / "fleet_remediation" / "domain" / "rooms.py"
    rooms.write_text(
        rooms.read_text()
        + "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
        + "    from fleet_remediation.adapters import livekit_rooms\n"
    )
    result = lint_imports(layer_copy)
    assert result.returncode == 1
    assert "fleet_remediation.domain.rooms -> fleet_remediation.adapters.livekit_rooms" in result.stdout


def test_runtime_code_importing_devkit_breaks_its_contract(layer_copy: Path) -> None:
    (layer_copy / "fleet_remediation" / "core" / "uses_a_fake.py").write_text(
        "from devkit.fakes import livekit\n"
    )
    result = lint_imports(layer_copy)
    assert result.returncode == 1
    assert "Runtime code never imports devkit, tests, tools or bench BROKEN" in result.stdout
    assert "fleet_remediation.core.uses_a_fake -> devkit.fakes.livekit" in result.stdout


def test_the_shape_check_names_a_long_module_and_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(50))
    long_function = f"def too_long() -> None:\n{body}\n"
    filler = "\n".join(f"y{i} = {i}" for i in range(301 - long_function.count("\n")))
    (tmp_path / "functions").mkdir()
    (tmp_path / "functions" / "big.py").write_text(long_function + filler + "\n")
    (tmp_path / "functions" / "small.py").write_text("def fine() -> None:\n    return None\n")
    limits = code_shape.Limits(module_lines=300, function_lines=50, complexity=12, pending=frozenset())

    over = code_shape.over_limits(tmp_path, ("functions",), limits)

    problems = code_shape.check(over, limits.pending)
    assert problems == [
        "modules over 300 lines: functions/big.py (301)",
        "functions over 50 lines: functions/big.py:too_long (51)",
    ]


def test_the_shape_check_names_a_complex_function_and_a_stale_pending_entry(tmp_path: Path) -> None:
    branches = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(13))
    (tmp_path / "functions").mkdir()
    (tmp_path / "functions" / "branchy.py").write_text(
        f"def branchy(x: int) -> int:\n{branches}\n    return -1\n"
    )
    pending = frozenset({"functions/gone.py:shrunk"})
    limits = code_shape.Limits(module_lines=300, function_lines=50, complexity=12, pending=pending)

    problems = code_shape.check(code_shape.over_limits(tmp_path, ("functions",), limits), pending)

    assert problems == [
        "functions over complexity 12 (ruff C901): functions/branchy.py:branchy (14)",
        "pending but no longer over any limit (remove it): functions/gone.py:shrunk",
    ]


def test_the_dead_code_check_names_an_unused_function_beside_a_used_one(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        "def used() -> int:\n    return 1\n\n\ndef never_called() -> int:\n    return 2\n\n\nprint(used())\n"
    )
    vulture = Path(sys.executable).with_name("vulture")
    # Run from the repository, so pyproject.toml's [tool.vulture] settings apply; the path replaces its paths.
    result = subprocess.run(
        [str(vulture), str(module)], cwd=REPO, capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 3
    assert result.stdout.splitlines() == [f"{module}:5: unused function 'never_called' (60% confidence)"]
