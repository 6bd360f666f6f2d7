"""Every ``bench`` module's command at its smallest size, each as its own process: it ran and printed
the figures it promises. A smoke, never a timing: no figure's value is judged, only that it is there
(the figures themselves come from ``make bench``).

The commands start together when the module's first test asks for them and run side by side (each
starts its own servers on free loopback ports), so the smoke costs ``make test`` about its slowest
command, not their sum.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench.tts_concentration import SHAPES
from devkit.checkout import checkout_pythonpath
from devkit.lambda_emulator import LOCAL_RUNTIME
from devkit.traffic import FAILURE_FAMILIES, HEALTHY_FAMILIES

REPO_ROOT = Path(__file__).resolve().parents[2]
# A smoke that takes longer than this is stuck, not slow.
SMOKE_TIMEOUT_SECONDS = 240


@dataclass(frozen=True)
class Smoke:
    args: tuple[str, ...]
    # Raises AssertionError when the output lacks a promised figure.
    check: Callable[[str], None]
    # The bench module it runs (default: the smoke's name), for a module with more than one mode.
    module: str | None = None


def json_lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def check_reaper_scale(stdout: str) -> None:
    size, latency = json_lines(stdout)
    assert size["rooms"] == 100
    assert size["store"] == "memory"
    # One group of 1 % over age per run: the reaper deletes exactly that room, with no error.
    assert (size["over_age"], size["reaped"], size["errors"]) == (1, 1, [])
    assert size["livekit_calls"] <= size["livekit_calls_bound"]
    for key in ("wall_seconds", "peak_rss_mib", "report_bytes", "cpu_us_per_room", "cpu_per_room_vs_naive"):
        assert size[key] > 0, key
    assert size["naive"]["rooms_seen"] == 99
    assert size["naive"]["wall_seconds"] > 0
    figures = latency["latency"]
    assert figures["deletions"] == {"reaper": 1, "naive": 1}
    assert figures["reaper_wall_seconds"] > 0
    assert figures["naive_over_reaper"] > 0


def check_cold_imports(stdout: str) -> None:
    (document,) = json_lines(stdout)
    rows = document["rows"]
    assert [row["environment"] for row in rows] == ["tracing off", "tracing on"]
    for row in rows:
        assert row["cpu_ms"] > 0
        assert row["wall_ms"] > 0
    # Left for the first client and the reaper's first LiveKit call: boto3, livekit-api, aiohttp;
    # botocore's client configuration too, unless tracing is on (X-Ray patches botocore at import).
    assert [row["loaded"] for row in rows] == [["pydantic"], ["aws_xray_sdk", "botocore.config", "pydantic"]]


def check_lambda_cold_start(stdout: str) -> None:
    (row,) = json_lines(stdout)
    assert row["function"] == "zombie_reaper"
    assert row["statuses"] == ["ok"]
    assert row["init_ms"]["median"] > 0
    assert row["first_invoke_s"]["median"] > 0


def check_drainer_tick(stdout: str) -> None:
    assert "8-task service:" in stdout
    cordon = next(line for line in stdout.splitlines() if line.startswith("alarm -> cordon"))
    assert "actions: cordon=done" in cordon
    assert " ms  calls {" in cordon
    assert "alarm event -> cordoned task, handler time over 1 rounds: median" in stdout


def check_kill_switch_lag(stdout: str) -> None:
    rows = [line for line in stdout.splitlines() if line.startswith(("0.5 s (cached)", "0 s (uncached)"))]
    assert len(rows) == 2
    for row in rows:
        assert len(row.split()[-3:]) == 3  # min, median, max seconds


def check_tts_concentration(stdout: str) -> None:
    for shape in SHAPES:
        (row,) = [line for line in stdout.splitlines() if line.startswith(shape.name)]
        assert row[len(shape.name) :].split()[0] == "200"  # the window's jobs, then its figures


def check_detection(stdout: str) -> None:
    for family in (*HEALTHY_FAMILIES, *FAILURE_FAMILIES):
        assert str(family) in stdout, family


def check_detection_fleet(stdout: str) -> None:
    """One JSON object per size and family, with the per-task option's latency and false pages."""
    rows = [row for row in json_lines(stdout) if "family" in row]
    assert {row["family"] for row in rows} >= {str(f) for f in (*HEALTHY_FAMILIES, *FAILURE_FAMILIES)}
    assert all({"tasks", "options", "rows"} <= set(row) for row in rows), rows[0]


def check_cost(stdout: str) -> None:
    (row,) = json_lines(stdout)
    assert row["monthly_usd"] > 0
    assert row["components"]["insights_functions"] > 0
    incident = row["with_incident"]
    assert incident["monthly_usd"] >= row["monthly_usd"]
    assert incident["one_hour_without_backoff_insights_usd"] > 0


SMOKES: dict[str, Smoke] = {
    "reaper_scale": Smoke(
        (
            "--rooms",
            "100",
            "--repeat",
            "1",
            "--latency",
            "--latency-rooms",
            "100",
            "--delay-ms",
            "1",
            "--json",
        ),
        check_reaper_scale,
    ),
    "cold_imports": Smoke(
        ("--repeat", "1", "--module", "zombie_reaper.handler", "--checkout", "--json"), check_cold_imports
    ),
    "lambda_cold_start": Smoke(
        ("--repeat", "1", "--function", "zombie_reaper", "--json"), check_lambda_cold_start
    ),
    "drainer_tick": Smoke(("--tasks", "8", "--rounds", "1"), check_drainer_tick),
    "cost": Smoke(
        ("--tasks", "50", "--responses-per-minute", "2000", "--incident-hours", "0.5", "--json"), check_cost
    ),
    "kill_switch_lag": Smoke(("--runs", "1", "--max-age", "0.5", "--step-ms", "10"), check_kill_switch_lag),
    "tts_concentration": Smoke(("--jobs", "200", "--cap", "1"), check_tts_concentration),
    "detection": Smoke(("--volumes", "35", "--days", "0.05", "--seeds", "1"), check_detection),
    "detection_fleet": Smoke(
        ("--tasks", "60", "--volumes", "2000", "--days", "0.1", "--seeds", "1", "--json"),
        check_detection_fleet,
        module="detection",
    ),
}


def bench_modules() -> list[str]:
    return sorted(p.stem for p in (REPO_ROOT / "bench").glob("*.py") if not p.stem.startswith("_"))


@pytest.fixture(scope="module")
def running() -> Iterator[dict[str, subprocess.Popen[str]]]:
    """Every smoke started at once; each test waits for its own."""
    if not (LOCAL_RUNTIME / "bin" / "python").exists():
        pytest.fail(f"{LOCAL_RUNTIME} is missing: run `make lambda-runtime` (part of `make setup`)")
    pythonpath = checkout_pythonpath()
    env = {**os.environ, "PYTHONPATH": pythonpath}
    processes = {
        name: subprocess.Popen(
            [sys.executable, "-m", f"bench.{smoke.module or name}", *smoke.args],
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, smoke in SMOKES.items()
    }
    yield processes
    for process in processes.values():
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_every_bench_module_has_a_smoke() -> None:
    assert sorted({smoke.module or name for name, smoke in SMOKES.items()}) == bench_modules()


@pytest.mark.livekit
@pytest.mark.parametrize("name", sorted(SMOKES))
def test_bench_command_runs_and_prints_its_figures(
    name: str, running: dict[str, subprocess.Popen[str]]
) -> None:
    stdout, stderr = running[name].communicate(timeout=SMOKE_TIMEOUT_SECONDS)
    assert running[name].returncode == 0, f"python -m bench.{name} failed:\n{stderr[-3000:]}"
    SMOKES[name].check(stdout)
