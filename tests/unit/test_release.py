"""One release version: the shared layer's ``__version__`` is what pyproject.toml and the changelog
say (the stacks' description: tests/unit/test_docs.py, which synthesizes them once); every changelog
version has upgrade notes; ``make diff`` exists."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

import livekit_fleet_agent
from fleet_remediation import __version__

REPO = Path(__file__).resolve().parents[2]
CHANGELOG = (REPO / "CHANGELOG.md").read_text()
VERSION_HEADING = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (Unreleased|\d{4}-\d{2}-\d{2})$", re.MULTILINE)


def test_the_version_is_semantic() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)


@pytest.mark.parametrize("pyproject", ["pyproject.toml", "agent/pyproject.toml"])
def test_both_packages_carry_the_release_version(pyproject: str) -> None:
    project = tomllib.loads((REPO / pyproject).read_text())["project"]
    assert project["version"] == __version__


def test_the_agent_package_says_the_release_version() -> None:
    assert livekit_fleet_agent.__version__ == __version__


def test_the_changelog_lists_the_release_version_first() -> None:
    versions = [match.group(1) for match in VERSION_HEADING.finditer(CHANGELOG)]
    assert versions[0] == __version__
    assert versions == sorted(versions, key=lambda v: tuple(int(p) for p in v.split(".")), reverse=True)


@pytest.mark.parametrize("version", [m.group(1) for m in VERSION_HEADING.finditer(CHANGELOG)])
def test_every_version_has_upgrade_notes(version: str) -> None:
    section = CHANGELOG.split(f"## [{version}]", 1)[1].split("\n## [", 1)[0]
    notes = section.split("### Upgrade notes", 1)
    assert len(notes) == 2, f"{version} has no upgrade notes"
    assert notes[1].strip().startswith("- "), f"{version}'s upgrade notes are empty"


def test_the_license_is_apache_2() -> None:
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text
    assert "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_make_diff_runs_cdk_diff_of_the_chosen_environment() -> None:
    dry = subprocess.run(
        ["make", "-n", "--always-make", "diff", "ENV=prod"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "node_modules/.bin/cdk diff LiveKitFleetRemediation-prod" in dry.stdout
