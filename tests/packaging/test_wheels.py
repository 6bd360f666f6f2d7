"""What `make dist` writes: a remediation wheel that carries the Lambda code and both layers exactly as
the checkout deploys them (with their bytecode for the runtime), an agent wheel that needs only
livekit-agents, and sdists a wheel builds from offline. No wheel installs development code (tools,
bench, devkit, tests)."""

from __future__ import annotations

import ast
import hashlib
import re
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from devkit.installed import DIST, REPO_ROOT, InstalledEnvironment
from fleet_remediation import __version__
from livekit_fleet_remediation.constructs.shared_layers import BYTECODE_TAG

# The Lambda code's own top-level names, which the wheel keeps under livekit_fleet_remediation._runtime.
RUNTIME_PACKAGES = (
    "fleet_remediation",
    "zombie_reaper",
    "worker_drainer",
    "tts_reach_alarm",
    "scheduled_drill",
)
DEVELOPMENT_ONLY = {"tools", "bench", "devkit", "tests"}
ASSETS = "livekit_fleet_remediation/_assets/"
# The checkout folders the wheel's assets must equal, file for file.
ASSET_SOURCES = {
    "functions/zombie_reaper": REPO_ROOT / "functions" / "zombie_reaper",
    "functions/worker_drainer": REPO_ROOT / "functions" / "worker_drainer",
    "functions/tts_reach_alarm": REPO_ROOT / "functions" / "tts_reach_alarm",
    "functions/scheduled_drill": REPO_ROOT / "functions" / "scheduled_drill",
    "layers/shared/python": REPO_ROOT / "layers" / "shared" / "python",
    "layers/deps-arm64/python": REPO_ROOT / "build" / "layers" / "deps-arm64" / "python",
    "layers/deps-x86_64/python": REPO_ROOT / "build" / "layers" / "deps-x86_64" / "python",
}
# The bytecode that ships: the Lambda runtime's, compiled by `make layers` (no other Python's).
RUNTIME_BYTECODE = f".{BYTECODE_TAG}.pyc"


def _names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def _metadata(wheel: Path) -> dict[str, list[str]]:
    with zipfile.ZipFile(wheel) as archive:
        # The wheel's own, not those of the dependency layer it carries under _assets.
        name = next(n for n in archive.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
        message = Parser().parsestr(archive.read(name).decode())
    return {
        key: message.get_all(key) or []
        for key in ("Name", "Version", "Requires-Dist", "License-Expression", "Project-URL", "Classifier")
    } | {"Description": [message.get_payload()]}


def _top_level(wheel: Path) -> set[str]:
    return {name.split("/", 1)[0] for name in _names(wheel) if ".dist-info/" not in name}


def _tree_digest(files: dict[str, bytes]) -> dict[str, str]:
    return {path: hashlib.sha256(data).hexdigest() for path, data in files.items()}


def _checkout_files(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in root.rglob("*") if _ships(path)}


def _ships(path: Path) -> bool:
    if not path.is_file() or path.name == ".built":
        return False
    if "__pycache__" in path.parts:
        return path.parent.name == "__pycache__" and path.name.endswith(RUNTIME_BYTECODE)
    return path.suffix != ".pyc"


def _wheel_files(wheel: Path, prefix: str) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {
            name.removeprefix(prefix): archive.read(name)
            for name in archive.namelist()
            if name.startswith(prefix)
        }


def test_the_remediation_wheel_installs_only_its_own_packages(wheels: dict[str, Path]) -> None:
    assert _top_level(wheels["livekit_fleet_remediation"]) == {"livekit_fleet_remediation"}


def test_the_agent_wheel_installs_only_the_agent_package(wheels: dict[str, Path]) -> None:
    assert _top_level(wheels["livekit_fleet_agent"]) == {"livekit_fleet_agent"}


@pytest.mark.parametrize("distribution", ["livekit_fleet_remediation", "livekit_fleet_agent"])
def test_each_wheel_carries_the_release_version_and_license(
    wheels: dict[str, Path], distribution: str
) -> None:
    metadata = _metadata(wheels[distribution])
    assert metadata["Version"] == [__version__]
    assert metadata["License-Expression"] == ["Apache-2.0"]
    assert f"-{__version__}-py3-none-any.whl" in wheels[distribution].name


@pytest.mark.parametrize("distribution", ["livekit_fleet_remediation", "livekit_fleet_agent"])
def test_each_wheel_is_typed_with_no_placeholder_home(wheels: dict[str, Path], distribution: str) -> None:
    """The project has no public address to name (pyproject.toml says why): no made-up one."""
    metadata = _metadata(wheels[distribution])
    assert f"{distribution}/py.typed" in _names(wheels[distribution])
    assert "Typing :: Typed" in metadata["Classifier"]
    assert len(metadata["Classifier"]) >= 9
    assert metadata["Project-URL"] == []


def test_the_wheel_carries_the_example_incident_and_configuration(wheels: dict[str, Path]) -> None:
    """``lkfr replay --example`` and ``lkfr backtest --example`` need no checkout."""
    names = set(_names(wheels["livekit_fleet_remediation"]))
    assert "livekit_fleet_remediation/examples/incident-2026-09-15.jsonl" in names
    assert "livekit_fleet_remediation/examples/environments.json" in names
    assert "livekit_fleet_remediation/schema/environments.schema.json" in names


def test_the_long_description_has_no_relative_link(wheels: dict[str, Path]) -> None:
    """The package index shows README.md from the wheel, where a relative link leads nowhere: each
    is its text and the file it names."""
    (description,) = _metadata(wheels["livekit_fleet_remediation"])["Description"]
    targets = re.findall(r"\]\(([^)\s]+)\)", description)
    assert targets, "the description has no link: the scan read nothing"
    assert [t for t in targets if not t.startswith(("https://", "#"))] == []
    assert "[in your own CDK app](docs/construct.md)" in (REPO_ROOT / "README.md").read_text()
    assert "in your own CDK app (`docs/construct.md`)" in description


def test_the_agent_package_depends_on_livekit_agents_alone(wheels: dict[str, Path]) -> None:
    requirements = [Requirement(r) for r in _metadata(wheels["livekit_fleet_agent"])["Requires-Dist"]]
    assert [r.name for r in requirements] == ["livekit-agents"]


def test_the_agent_package_imports_only_the_standard_library_and_livekit(wheels: dict[str, Path]) -> None:
    allowed = set(sys.stdlib_module_names) | {"livekit", "livekit_fleet_agent"}
    imported: dict[str, set[str]] = {}
    for name, source in _wheel_files(wheels["livekit_fleet_agent"], "livekit_fleet_agent/").items():
        if not name.endswith(".py"):
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots = {node.module.split(".")[0]}
            else:
                continue
            imported.setdefault(name, set()).update(roots - allowed)
    assert {name: roots for name, roots in imported.items() if roots} == {}
    assert imported, "no import was read: the scan saw no module"


@pytest.mark.parametrize("asset", sorted(ASSET_SOURCES))
def test_the_wheels_lambda_assets_are_the_checkouts_files(wheels: dict[str, Path], asset: str) -> None:
    packaged = _wheel_files(wheels["livekit_fleet_remediation"], f"{ASSETS}{asset}/")
    assert packaged, f"the wheel has no {ASSETS}{asset}"
    assert _tree_digest(packaged) == _tree_digest(_checkout_files(ASSET_SOURCES[asset]))


def test_no_wheel_ships_development_code_anywhere(wheels: dict[str, Path]) -> None:
    for wheel in wheels.values():
        parts = {part for name in _names(wheel) for part in name.split("/")[:-1]}
        assert not parts & DEVELOPMENT_ONLY, (wheel.name, parts & DEVELOPMENT_ONLY)


def test_a_wheel_built_from_the_sdist_offline_is_the_same_wheel(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    (sdist,) = DIST.glob("livekit_fleet_remediation-*.tar.gz")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            "--wheel-dir",
            str(tmp_path),
            str(sdist),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (rebuilt,) = tmp_path.glob("*.whl")
    assert sorted(_names(rebuilt)) == sorted(_names(wheels["livekit_fleet_remediation"]))


def test_the_installed_package_finds_its_assets_without_loading_the_cdk(
    remediation_installed: InstalledEnvironment, tmp_path: Path
) -> None:
    probe = (
        "import sys, livekit_fleet_remediation as p\n"
        "from livekit_fleet_remediation.assets import asset_roots\n"
        "roots = asset_roots()\n"
        "print(p.__version__, 'aws_cdk' in sys.modules, roots.functions, roots.dependency_layer('arm64'))\n"
    )
    done = remediation_installed.run(
        [str(remediation_installed.python), "-c", probe], cwd=tmp_path, timeout=60
    )
    assert done.returncode == 0, done.stderr
    version, cdk_loaded, functions, dependencies = done.stdout.split()
    assert (version, cdk_loaded) == (__version__, "False")
    for folder in (Path(functions), Path(dependencies)):
        assert folder.is_relative_to(remediation_installed.root), folder
        assert folder.is_dir(), folder


def test_from_the_repositorys_own_folder_the_installed_modules_are_still_the_wheels(
    remediation_installed: InstalledEnvironment,
) -> None:
    """The emulator smoke synthesizes with the installed ``livekit_fleet_remediation.standalone`` from
    the repository's folder (for its cdk.json flags): nothing there may shadow the wheel's packages."""
    probe = (
        "import livekit_fleet_remediation.standalone as s\n"
        "from livekit_fleet_remediation._runtime import fleet_remediation as f\n"
        "print(s.__file__, f.__file__)\n"
    )
    done = remediation_installed.run(
        [str(remediation_installed.python), "-c", probe], cwd=REPO_ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    for module_file in done.stdout.split():
        assert Path(module_file).is_relative_to(remediation_installed.root), module_file


def test_the_installed_wheel_adds_no_generic_top_level_name(
    remediation_installed: InstalledEnvironment, tmp_path: Path
) -> None:
    probe = (
        "import importlib.util as u\n"
        f"print([n for n in {RUNTIME_PACKAGES!r} if u.find_spec(n)])\n"
        "import livekit_fleet_remediation._runtime.worker_drainer.handler as handler\n"
        "print(handler.__name__)\n"
    )
    done = remediation_installed.run(
        [str(remediation_installed.python), "-c", probe], cwd=tmp_path, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[]", "livekit_fleet_remediation._runtime.worker_drainer.handler"]


def test_no_module_in_the_wheel_imports_a_runtime_package_by_its_bare_name(wheels: dict[str, Path]) -> None:
    with zipfile.ZipFile(wheels["livekit_fleet_remediation"]) as archive:
        modules = {
            name: archive.read(name).decode()
            for name in archive.namelist()
            if name.endswith(".py") and not name.startswith(ASSETS)
        }
    bare = {
        name: sorted(roots)
        for name, source in modules.items()
        if (roots := _imported_roots(source) & set(RUNTIME_PACKAGES))
    }
    assert bare == {}
    assert len(modules) > 100, sorted(modules)[:5]


def _imported_roots(source: str) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
    return roots
