"""The wheel's one top-level package: hatch_build.py's rewrite of the runtime packages' imports."""

from __future__ import annotations

from pathlib import Path

import pytest

from hatch_build import RUNTIME_SOURCES, namespaced


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "from fleet_remediation.core import report\n",
            "from livekit_fleet_remediation._runtime.fleet_remediation.core import report\n",
        ),
        (
            "    from worker_drainer.adapters.ledger import Ledger\n",
            "    from livekit_fleet_remediation._runtime.worker_drainer.adapters.ledger import Ledger\n",
        ),
        (
            "from zombie_reaper import handler\n",
            "from livekit_fleet_remediation._runtime.zombie_reaper import handler\n",
        ),
        (
            "import tts_reach_alarm.transition as transition\n",
            "import livekit_fleet_remediation._runtime.tts_reach_alarm.transition as transition\n",
        ),
    ],
)
def test_each_import_of_a_runtime_package_is_pointed_under_runtime(source: str, expected: str) -> None:
    assert namespaced(source, Path("m.py")) == expected


@pytest.mark.parametrize(
    "source",
    [
        "from fleet_remediation_extra import x\n",
        "from livekit_fleet_remediation.cli import main\n",
        'NAME = "worker_drainer"  # a function label, not a module\n',
        "from . import stages\n",
    ],
)
def test_names_that_only_look_alike_are_left_alone(source: str) -> None:
    assert namespaced(source, Path("m.py")) == source


@pytest.mark.parametrize("name", sorted(RUNTIME_SOURCES))
def test_a_bare_import_is_refused_naming_the_file_and_the_fix(name: str) -> None:
    with pytest.raises(ValueError, match=rf"m\.py: write `from {name} import …`"):
        namespaced(f"import {name}\n", Path("m.py"))


def test_no_runtime_module_in_the_checkout_imports_a_runtime_package_bare() -> None:
    root = Path(__file__).resolve().parents[2]
    for folder in [*RUNTIME_SOURCES.values(), "src/livekit_fleet_remediation"]:
        for path in (root / folder).rglob("*.py"):
            namespaced(path.read_text(encoding="utf-8"), path)
