"""Two hatchling hooks, no build plugin to install.

- The long description: README.md with each relative link written as its text and the file it names
  (``docs/construct.md``), since the package index resolves a relative link against nothing and the
  project names no public home (``[project.urls]`` is left out rather than filled with a placeholder).
- The wheel's one top-level package: the construct and console commands (``src/livekit_fleet_remediation``)
  with the shared layer and the functions under ``livekit_fleet_remediation/_runtime/``, their imports
  rewritten to that path, so installing the wheel adds no generic name (``worker_drainer``…) to a
  team's environment. The Lambda assets under ``_assets/`` keep the deployed layout untouched, their
  bytecode included (in the sdist too, so a wheel built from it is the same wheel).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.metadata.plugin.interface import MetadataHookInterface

# A Markdown link whose target has no scheme and is not an in-page anchor: relative to the README.
RELATIVE_LINK = re.compile(r"\[([^\]]+)\]\((?![a-z][a-z0-9+.-]*:|#)(?:\./)?([^)\s]+)\)")

PACKAGE = "livekit_fleet_remediation"
RUNTIME = f"{PACKAGE}._runtime"
# Each runtime package's source folder in the checkout (and in the sdist).
RUNTIME_SOURCES = {
    "fleet_remediation": "layers/shared/python/fleet_remediation",
    "zombie_reaper": "functions/zombie_reaper",
    "worker_drainer": "functions/worker_drainer",
    "tts_reach_alarm": "functions/tts_reach_alarm",
    "scheduled_drill": "functions/scheduled_drill",
}
_NAMES = "|".join(RUNTIME_SOURCES)
# `from worker_drainer.x import y` / `import fleet_remediation.core.z as w`, at any indentation.
FROM_IMPORT = re.compile(rf"^(\s*)from ({_NAMES})(?=[.\s])", re.MULTILINE)
DOTTED_IMPORT = re.compile(rf"^(\s*)import ({_NAMES})(\.[\w.]+\s+as\s)", re.MULTILINE)
# A bare `import worker_drainer` would bind a name the rewrite cannot keep: refused at build time.
BARE_IMPORT = re.compile(rf"^\s*import ({_NAMES})\b(?!\.[\w.]+\s+as\s)", re.MULTILINE)
STAGING = "build/wheel-package"
# The Lambda code and both layers as deployed, staged by `make dist` (pyproject.toml force-includes it).
ASSETS = "build/dist-assets"
SKIPPED = {"__pycache__", ".built"}


def without_relative_links(markdown: str) -> str:
    return RELATIVE_LINK.sub(lambda link: f"{link.group(1)} (`{link.group(2)}`)", markdown)


def namespaced(source: str, path: Path) -> str:
    """The module's text with every import of a runtime package pointed under ``_runtime``."""
    if bare := BARE_IMPORT.search(source):
        name = bare.group(1)
        raise ValueError(f"{path}: write `from {name} import …` (a bare import cannot be namespaced)")
    source = FROM_IMPORT.sub(rf"\1from {RUNTIME}.\2", source)
    return DOTTED_IMPORT.sub(rf"\1import {RUNTIME}.\2\3", source)


def stage_tree(source: Path, target: Path) -> None:
    for path in sorted(source.rglob("*")):
        if SKIPPED & set(path.parts) or path.suffix == ".pyc" or not path.is_file():
            continue
        destination = target / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".py":
            destination.write_text(namespaced(path.read_text(encoding="utf-8"), path), encoding="utf-8")
        else:
            shutil.copyfile(path, destination)


def stage_package(root: Path) -> Path:
    """``build/wheel-package/livekit_fleet_remediation``: the package as the wheel installs it."""
    staged = root / STAGING / PACKAGE
    shutil.rmtree(staged.parent, ignore_errors=True)
    stage_tree(root / "src" / PACKAGE, staged)
    (staged / "_runtime").mkdir()
    (staged / "_runtime" / "__init__.py").write_text(
        '"""The Lambda code, importable by the console commands and the construct (not a public API)."""\n'
    )
    for name, folder in RUNTIME_SOURCES.items():
        stage_tree(root / folder, staged / "_runtime" / name)
    return staged


class CustomMetadataHook(MetadataHookInterface):
    def update(self, metadata: dict[str, Any]) -> None:
        readme = (Path(self.root) / "README.md").read_text(encoding="utf-8")
        metadata["readme"] = {"content-type": "text/markdown", "text": without_relative_links(readme)}


def asset_bytecode(root: Path, target: str) -> dict[str, str]:
    """Each bytecode file of the Lambda assets (``make dist`` keeps only the runtime's), mapped under
    ``target``: hatchling leaves every ``__pycache__`` out of a forced folder, never a forced file."""
    assets = root / ASSETS
    return {
        str(path): f"{target}/{path.relative_to(assets).as_posix()}" for path in sorted(assets.rglob("*.pyc"))
    }


class NamespacedPackageHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        if self.target_name == "sdist":
            build_data["force_include"].update(asset_bytecode(root, ASSETS))
            return
        if self.target_name != "wheel":
            return
        staged = stage_package(root)
        build_data["force_include"][str(staged)] = PACKAGE
        build_data["force_include"].update(asset_bytecode(root, f"{PACKAGE}/_assets"))
