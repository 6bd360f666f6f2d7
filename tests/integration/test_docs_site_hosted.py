"""The built docs site as a team hosts it: no page links to a file the site lacks or to the server's
root (a root-absolute link breaks under a sub-path and from disk), and, loaded from disk in a real
headless Chromium (Debian's package), the home page requests nothing beyond the disk."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from devkit.headless_chromium import load_page

pytestmark = pytest.mark.chromium

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build"
LINK = re.compile(r"""(?:href|src)="([^"]+)\"""")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = tmp_path_factory.mktemp("docs") / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(built)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return built


def _links(page: Path) -> list[str]:
    return [
        link
        for link in LINK.findall(page.read_text(encoding="utf-8"))
        if not re.match(r"^([a-z][a-z0-9+.-]*:|#|//)", link)
    ]


def test_no_page_links_to_the_servers_root(site: Path) -> None:
    rooted = {
        str(page.relative_to(site)): [link for link in _links(page) if link.startswith("/")]
        for page in site.rglob("*.html")
    }
    assert {page: links for page, links in rooted.items() if links} == {}
    assert "404.html" in rooted


def test_every_link_in_the_site_points_at_a_file_it_has(site: Path) -> None:
    missing = {}
    for page in site.rglob("*.html"):
        for link in _links(page):
            target = (page.parent / link.split("#")[0].split("?")[0]).resolve()
            if link.split("#")[0] and not target.exists():
                missing.setdefault(str(page.relative_to(site)), []).append(link)
    assert missing == {}


@pytest.mark.parametrize("width", [390, 1400])
def test_the_home_page_loads_from_disk_without_the_network(site: Path, width: int) -> None:
    loaded = load_page(
        site / "index.html",
        {"scroll_width": "document.documentElement.scrollWidth", "shim": "typeof window.IFrameWorker"},
        width=width,
        height=844 if width < 600 else 1000,
        log=BUILD / f"chromium-docs-{width}.log",
    )
    BUILD.mkdir(exist_ok=True)
    (BUILD / f"docs-home-{width}px.png").write_bytes(loaded.screenshot)
    assert loaded.exceptions == []
    assert loaded.console_errors == []
    assert [r for r in loaded.requests if not r.startswith(("file://", "data:", "blob:"))] == []
    # The search worker's shim (the offline plugin's) came from the site itself.
    assert loaded.values["shim"] == "function"
    assert loaded.values["scroll_width"] <= width


def test_every_runbook_a_notification_links_is_a_page_of_the_built_site(site: Path) -> None:
    """A team that hosts the built site finds each runbook at runbooks/<name>.html."""
    from fleet_remediation.contract.naming import RUNBOOKS, VAD_RUNBOOK

    for path in [*RUNBOOKS.values(), VAD_RUNBOOK]:
        page = Path(path).relative_to("docs").with_suffix(".html")
        assert (site / page).is_file(), page


def test_the_configuration_reference_has_a_section_per_group_and_no_python_repr(site: Path) -> None:
    from livekit_fleet_remediation.config import EnvironmentConfig

    page = (site / "reference" / "configuration.html").read_text(encoding="utf-8")
    for group in ("reaper", "detection", "tts_reach", "drainer", "scan_budget", "disruption_window"):
        assert f'<h3 id="{group}"' in page, group
        assert group in EnvironmentConfig.model_fields
    assert "&lt;Weekday" not in page
    assert "<Weekday" not in page
    assert "[&quot;mon&quot;, &quot;tue&quot;" in page or '["mon", "tue"' in page
