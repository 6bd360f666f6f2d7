"""The built docs site as a team hosts it: no page links to a file the site lacks or to the server's
root (a root-absolute link breaks under a sub-path and from disk), and in a real headless Chromium
(Debian's package) a reader's search is answered, from disk with no request beyond it (390 and
1,400 px, screenshots in build/) and served under a sub-path."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from devkit.headless_chromium import PageLoad, load_page
from fleet_remediation.contract.naming import VAD_RUNBOOK, FunctionName, RunbookLinks, runbook_url
from fleet_remediation.contract.settings import FunctionSettings
from livekit_fleet_remediation.constructs.dashboard import INVESTIGATION_RUNBOOK

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


# What a reader does: open the search (on file:// Material starts its search worker only then), type.
# Material reads the box on keyup, on focus and when its worker is ready: without the keyup a query
# typed after an index that loaded first (quick over HTTP) is never searched.
QUERY = "drainer"
SEARCH = (
    'document.querySelector("label[for=__search]").click()',
    '(() => { const box = document.querySelector("[data-md-component=search-query]"); box.focus();'
    f' box.value = "{QUERY}"; box.dispatchEvent(new Event("input", {{bubbles: true}}));'
    ' box.dispatchEvent(new KeyboardEvent("keyup", {bubbles: true, key: "r"})); })()',
)
RESULTS = {
    "results": 'document.querySelectorAll(".md-search-result__item").length',
    "first": 'document.querySelector(".md-search-result__link").href',
    "scroll_width": "document.documentElement.scrollWidth",
    "shim": "typeof window.IFrameWorker",
}
ANSWERED = 'document.querySelectorAll(".md-search-result__item").length > 0'


def _search(page: Path | str, width: int, log: Path) -> PageLoad:
    return load_page(
        page,
        RESULTS,
        width=width,
        height=844 if width < 600 else 1000,
        log=log,
        actions=SEARCH,
        wait_for=ANSWERED,
        timeout=45,
    )


@pytest.mark.parametrize("width", [390, 1400])
def test_search_answers_from_disk_without_the_network(site: Path, width: int) -> None:
    loaded = _search(site / "index.html", width, BUILD / f"chromium-docs-{width}.log")
    BUILD.mkdir(exist_ok=True)
    (BUILD / f"docs-search-{width}px.png").write_bytes(loaded.screenshot)
    assert loaded.exceptions == []
    assert loaded.console_errors == []
    assert [r for r in loaded.requests if not r.startswith(("file://", "data:", "blob:"))] == []
    # The index came from the script the offline plugin writes, the worker's shim from the site.
    assert (site / "search" / "search_index.js").as_uri() in loaded.requests
    assert loaded.values["shim"] == "function"
    assert loaded.values["results"] > 0
    first = unquote(urlsplit(loaded.values["first"]).path)
    assert Path(first).is_relative_to(site), first
    assert Path(first).is_file(), first
    assert loaded.values["scroll_width"] <= width


@pytest.fixture
def served_under_a_sub_path(site: Path, tmp_path: Path) -> Iterator[str]:
    """The site copied to /voice/fleet-remediation/ of a local HTTP server, as a team might host it."""
    shutil.copytree(site, tmp_path / "voice" / "fleet-remediation")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/voice/fleet-remediation/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_search_answers_under_a_sub_path(served_under_a_sub_path: str) -> None:
    loaded = _search(served_under_a_sub_path + "index.html", 1400, BUILD / "chromium-docs-sub-path.log")
    (BUILD / "docs-search-sub-path.png").write_bytes(loaded.screenshot)
    assert loaded.exceptions == []
    assert loaded.console_errors == []
    assert [r for r in loaded.requests if not r.startswith((served_under_a_sub_path, "data:", "blob:"))] == []
    assert served_under_a_sub_path + "search/search_index.json" in loaded.requests
    assert loaded.values["results"] > 0
    assert loaded.values["first"].startswith(served_under_a_sub_path)


HOSTED_AT = "https://docs.example.com/voice/fleet-remediation/"


def _runbook_links(links: RunbookLinks) -> list[str]:
    """Every runbook link the functions' messages (through their settings) and the dashboard write."""
    settings = FunctionSettings.model_construct(runbook_base_url=HOSTED_AT, runbook_links=links)
    written = [settings.runbook(function) for function in FunctionName]
    others = [VAD_RUNBOOK, INVESTIGATION_RUNBOOK]
    return written + [runbook_url(HOSTED_AT, path, links) for path in others]


def test_every_runbook_link_resolves_to_a_page_of_the_hosted_site(site: Path) -> None:
    links = _runbook_links("site")
    assert all(link.startswith(HOSTED_AT + "runbooks/") for link in links), links
    assert [link for link in links if not (site / link.removeprefix(HOSTED_AT)).is_file()] == []


def test_runbook_links_into_the_repository_name_its_files() -> None:
    links = _runbook_links("repository")
    assert all(link.startswith(HOSTED_AT + "docs/runbooks/") for link in links), links
    assert [link for link in links if not (REPO / link.removeprefix(HOSTED_AT)).is_file()] == []


def test_the_configuration_reference_has_a_section_per_group_and_no_python_repr(site: Path) -> None:
    from livekit_fleet_remediation.config import EnvironmentConfig

    page = (site / "reference" / "configuration.html").read_text(encoding="utf-8")
    for group in ("reaper", "detection", "tts_reach", "drainer", "scan_budget", "disruption_window"):
        assert f'<h3 id="{group}"' in page, group
        assert group in EnvironmentConfig.model_fields
    assert "&lt;Weekday" not in page
    assert "<Weekday" not in page
    assert "[&quot;mon&quot;, &quot;tue&quot;" in page or '["mon", "tue"' in page


def test_the_configuration_reference_fits_a_phone(site: Path) -> None:
    """At 390 px each settings group's table is one block per field: none is wider than the screen."""
    loaded = load_page(
        site / "reference" / "configuration.html",
        {
            "tables": 'document.querySelectorAll(".settings-fields table").length',
            "overflow": 'Math.max(...[...document.querySelectorAll(".settings-fields table")]'
            ".map(t => t.scrollWidth - t.clientWidth))",
            "scroll_width": "document.documentElement.scrollWidth",
        },
        width=390,
        height=844,
        log=BUILD / "chromium-docs-configuration.log",
    )
    assert loaded.exceptions == []
    page = (site / "reference" / "configuration.html").read_text(encoding="utf-8")
    assert loaded.values["tables"] == page.count('<div class="settings-fields">') > 10
    assert loaded.values["overflow"] == 0
    assert loaded.values["scroll_width"] <= 390
