"""The incident page (``lkfr replay --html``) in a real headless Chromium (Debian's package), driven
over the DevTools protocol: it must load with no console error, no exception and no network request,
and draw every series and marker the replay produced. The screenshot is kept under build/."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from devkit.headless_chromium import load_page
from livekit_fleet_remediation.cli.replay import replay
from livekit_fleet_remediation.cli.replay_page import page_data, render_page
from livekit_fleet_remediation.offline.replay_model import ReplayResult

pytestmark = pytest.mark.chromium

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "incident-2026-09-15.jsonl"
BUILD = REPO / "build"
SCREENSHOT = BUILD / "replay-incident.png"
# Reading the page on a phone and on a desktop: what the screen shows, measured in the browser.
LAYOUT = {
    "scroll_width": "document.documentElement.scrollWidth",
    "inner_width": "window.innerWidth",
    # The smallest chart label as drawn on screen: its font size times the SVG's scale.
    "smallest_label_px": "Math.min.apply(null, Array.from(document.querySelectorAll('#chart text'))"
    ".map(function (t) { return parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a; }))",
    "legend_colors": "JSON.stringify(Array.from(document.querySelectorAll('#legend span'))"
    ".map(function (s) { return s.getAttribute('data-color'); }))",
    "title": "document.title + ' | ' + document.getElementById('title').textContent",
    "clipped_ids": "Array.from(document.querySelectorAll('#timeline .id'))"
    ".filter(function (s) { return s.title.length > s.textContent.length; }).length",
    "id_tap": "(function () { var s = document.querySelector('#timeline .id'); s.click();"
    " return s.textContent === s.title; })()",
    "wide_cells": "Array.from(document.querySelectorAll('#timeline td'))"
    ".filter(function (td) { return td.scrollWidth > td.clientWidth + 1; }).length",
}
EXPRESSIONS = {
    "check": "document.getElementById('self-check').textContent",
    "action_markers": "document.querySelectorAll('#chart .action-marker').length",
    "spared_markers": "document.querySelectorAll('#chart .lesson-marker[fill=\"#27ae60\"]').length",
    "alarm_bands": "document.querySelectorAll('#chart .alarm-band').length",
    "timeline_rows": "document.querySelectorAll('#timeline tbody tr').length",
    "summary": "document.getElementById('summary').textContent",
}


@pytest.fixture(scope="module")
def incident() -> ReplayResult:
    return replay(FIXTURE, "prod", REPO / "examples" / "standalone" / "environments.json")


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_incident_page_renders_every_series_and_marker(incident: ReplayResult) -> None:
    BUILD.mkdir(exist_ok=True)
    page = BUILD / "replay-incident.html"
    page.write_text(render_page(incident), encoding="utf-8")
    loaded = load_page(page, EXPRESSIONS, log=BUILD / "chromium-replay.log")
    SCREENSHOT.write_bytes(loaded.screenshot)

    assert loaded.exceptions == []
    assert loaded.console_errors == []
    assert loaded.requests == [page.resolve().as_uri()], "the page must need nothing from the network"
    check = json.loads(loaded.values["check"])
    assert check["ok"] is True
    assert check["errors"] == []

    data = page_data(incident)
    series = data["series"]
    assert incident.lessons is not None
    assert check["reachPoints"] == sum(1 for r in series["responses"] if r) > 0
    assert check["vadSeries"] == len(series["vad"]) > 0
    alarms = sum(1 for change in incident.alarms if change.state == "ALARM")
    assert check["bands"] == loaded.values["alarm_bands"] == alarms > 0
    assert check["actionMarkers"] == loaded.values["action_markers"] == len(incident.actions) > 0
    assert check["verdictMarkers"] == len(incident.verdicts) > 0
    assert check["lessonMarkers"] == len(incident.lessons.failed)
    assert loaded.values["spared_markers"] == len(incident.lessons.spared) > 0
    assert loaded.values["timeline_rows"] == len(incident.actions) + len(incident.verdicts) + alarms
    assert f"{len(incident.lessons.spared)} spared" in loaded.values["summary"]
    width, height = _png_size(loaded.screenshot)
    assert width == 1400
    assert height > 800


def test_a_broken_page_is_caught(tmp_path: Path, incident: ReplayResult) -> None:
    """The checks above can fail: a page whose data lacks its series throws, and the test sees it."""
    page = tmp_path / "broken.html"
    page.write_text(render_page(incident).replace('"series":{', '"series_missing":{', 1), encoding="utf-8")
    loaded = load_page(page, EXPRESSIONS)
    assert loaded.exceptions, "the script error must be reported"
    assert "TypeError" in loaded.exceptions[0]
    assert loaded.values["check"] == ""


@pytest.mark.parametrize("width", [390, 1400])
def test_the_page_reads_on_a_phone_and_on_a_desktop(incident: ReplayResult, width: int) -> None:
    BUILD.mkdir(exist_ok=True)
    page = BUILD / "replay-incident.html"
    page.write_text(render_page(incident), encoding="utf-8")
    loaded = load_page(page, LAYOUT, width=width, height=844 if width < 600 else 1000)
    (BUILD / f"replay-incident-{width}px.png").write_bytes(loaded.screenshot)
    assert loaded.exceptions == []
    values = loaded.values
    assert values["scroll_width"] <= values["inner_width"] == width, "no sideways scroll"
    assert values["smallest_label_px"] >= 11
    colors = json.loads(values["legend_colors"])
    assert len(colors) == len(set(colors)) > 5, "one colour per kind"
    assert values["title"].startswith("Incident of 2026-09-15, ")
    assert "sessions failed on worker " in values["title"]
    assert "jsonl" not in values["title"]
    assert values["clipped_ids"] > 0
    assert values["id_tap"] is True, "a tap shows the whole id"
    assert values["wide_cells"] == 0, "every cell wraps inside its column"
    assert _png_size(loaded.screenshot)[0] == width
