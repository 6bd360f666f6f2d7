"""``lkfr`` as a team gets it: the remediation wheel installed into a fresh venv outside the
repository (no checkout, no PYTHONPATH), its console script on PATH, the incident page's template
shipped as package data, the replay printing the same figures as in the checkout, and the plan
listing the rooms it would delete on the real local livekit-server."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from livekit import api

from devkit.installed import InstalledEnvironment
from devkit.livekit_clients import create_rooms, room_names
from devkit.livekit_local import LocalLiveKit
from fleet_remediation import __version__

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "incident-2026-09-15.jsonl"
CONFIG = REPO / "examples" / "standalone" / "environments.json"
# The policy's lowest max age: the plan's rooms are past it when the plan runs.
PLAN_MAX_AGE_MINUTES = 1


async def delete_rooms(server: LocalLiveKit, names: list[str]) -> None:
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as lk:
        for name in names:
            await lk.room.delete_room(api.DeleteRoomRequest(room=name))


def test_the_console_script_runs_outside_the_checkout(
    remediation_installed: InstalledEnvironment, tmp_path: Path
) -> None:
    lkfr = str(remediation_installed.bin("lkfr"))
    done = remediation_installed.run([lkfr, "--version"], cwd=tmp_path, timeout=60)
    assert (done.returncode, done.stdout) == (0, f"lkfr {__version__}\n"), done.stderr
    page = tmp_path / "incident.html"
    command = [lkfr, "replay", "--log", str(FIXTURE), "--env", "prod", "--config", str(CONFIG)]
    done = remediation_installed.run([*command, "--html", str(page)], cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (
        "24 failed in the log (responses, no first audio); 2 would still have failed; 22 spared."
        in done.stdout
    )
    text = page.read_text()
    assert "Incident of 2026-09-15" in text
    assert "__DATA__" not in text


def test_the_audit_says_what_to_pass_without_a_configuration(
    remediation_installed: InstalledEnvironment, tmp_path: Path
) -> None:
    done = remediation_installed.run(
        [str(remediation_installed.bin("lkfr")), "audit", "--env", "prod", "--hours", "1"],
        cwd=tmp_path,
        timeout=60,
        LKFR_CONFIG="",
    )
    assert done.returncode == 2
    assert f"no environments.json in {tmp_path}: pass --config PATH" in done.stderr


@pytest.fixture(scope="module")
def aged_rooms(livekit_server: LocalLiveKit) -> Iterator[tuple[list[str], float]]:
    """Two rooms on the real livekit-server, created as the module starts so that they are past a
    one-minute max age by the time the plan runs; deleted at the end."""
    names = [f"lesson-wheel-plan-{uuid.uuid4().hex[:6]}", f"test-wheel-plan-{uuid.uuid4().hex[:6]}"]
    asyncio.run(create_rooms(livekit_server, names))
    yield names, time.monotonic()
    asyncio.run(delete_rooms(livekit_server, names))


def test_plan_lists_the_rooms_it_would_delete_on_the_local_livekit_server(
    remediation_installed: InstalledEnvironment,
    livekit_server: LocalLiveKit,
    aged_rooms: tuple[list[str], float],
    tmp_path: Path,
) -> None:
    names, created = aged_rooms
    environments = json.loads(CONFIG.read_text())
    staging = environments["environments"]["staging"]
    staging["reaper"]["policy"].update({"max_age_minutes": PLAN_MAX_AGE_MINUTES, "rules": []})
    config = tmp_path / "environments.json"
    config.write_text(json.dumps(environments))
    time.sleep(max(0.0, created + PLAN_MAX_AGE_MINUTES * 60 + 1 - time.monotonic()))
    done = remediation_installed.run(
        [
            str(remediation_installed.bin("lkfr")),
            "plan",
            "reaper",
            "--env",
            "staging",
            "--config",
            str(config),
            "--json",
        ],
        cwd=tmp_path,
        timeout=120,
        LIVEKIT_URL=livekit_server.http_url,
        LIVEKIT_API_KEY=livekit_server.api_key,
        LIVEKIT_API_SECRET=livekit_server.api_secret,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        # Nothing answers here: the plan reads AWS only for the agent service's deployments.
        AWS_ENDPOINT_URL="http://127.0.0.1:9",
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    decided = {c["resource"]: c["decision"] for c in report["candidates"]}
    assert report["mode"] == "dry-run"
    assert {decided[name] for name in names} == {"would-act"}, report["candidates"]
    assert report["actions"] == []
    assert set(names) <= asyncio.run(room_names(livekit_server))
