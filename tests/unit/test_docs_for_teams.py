"""Facts the docs state for a team, checked against the repository: the construct page's example is
the consumer app's code (written out, so it reads on GitHub too, where an include line would show
raw), and the install page's version table is the two lock files the range tests install."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def _pins(lock: Path) -> dict[str, str]:
    """Name (canonical: lower case, dashes) to version."""
    pins = (line.split("==") for line in lock.read_text().splitlines() if line and not line.startswith("#"))
    return {re.sub(r"[-_.]+", "-", name).lower(): version for name, version in pins}


def test_the_construct_page_shows_the_consumer_app_as_it_is() -> None:
    page = (DOCS / "construct.md").read_text()
    app = (REPO / "examples" / "consumer_app" / "app.py").read_text()
    assert f"```python\n{app}```" in page
    assert "--8<--" not in page


def test_the_install_pages_version_table_is_the_tested_ends() -> None:
    page = (DOCS / "install.md").read_text()
    rows = dict(
        (name, (low, high))
        for name, low, high in re.findall(
            r"^\| `([a-z0-9-]+)(?:\[tracer\])?` \| ([\d.]+) \| ([\d.]+) \|", page, re.M
        )
    )
    lowest = _pins(REPO / "requirements" / "wheelhouse-lowest.lock")
    highest = _pins(REPO / "requirements" / "wheelhouse-highest.lock")
    ranges = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {Requirement(r).name for r in ranges} - {"tzdata"}
    assert set(rows) == names
    for name, (low, high) in rows.items():
        assert (low, high) == (lowest[name], highest[name]), name


def test_the_install_page_says_both_architectures_are_built_and_arm64_is_the_default() -> None:
    page = " ".join((DOCS / "install.md").read_text().split())
    assert "arm64 and x86_64" in page
    assert "arm64 by default" in page
    makefile = (REPO / "Makefile").read_text()
    assert "LAMBDA_ARCHITECTURES := arm64 x86_64" in makefile


def test_every_runbook_a_notification_links_is_a_page_of_the_repository() -> None:
    """Notifications link ``runbook_base_url`` + these paths (the repository's view of docs/)."""
    from fleet_remediation.contract.naming import RUNBOOKS, VAD_RUNBOOK

    for path in [*RUNBOOKS.values(), VAD_RUNBOOK]:
        assert (REPO / path).is_file(), path
