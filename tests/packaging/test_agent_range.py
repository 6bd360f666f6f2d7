"""The agent package at the lowest end of its livekit-agents range (1.8.0, with the livekit 1.1.17 it
pins): its tests run in a child process whose path puts build/agents-lowest (`make wheelhouse-ranges`,
requirements/agents-lowest.lock) before the dev environment. The highest end, 1.8.9 (the newest 1.x),
is the dev environment's own, which the whole suite runs.

Run at the lowest end: the agent package's unit tests and the ones that drive it in a real
livekit-agents worker in this process (drain-aware load, the drill hook). The signal emitter's worker
tests run the agent wheel in its own environment from build/wheelhouse (1.8.9) and are not repeated
here.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from devkit.checkout import REPO_ROOT, checkout_pythonpath

LOWEST = REPO_ROOT / "build" / "agents-lowest"
AGENT_TESTS = (
    "tests/unit/test_agent_cooperation_load.py",
    "tests/unit/test_agent_lines.py",
    "tests/unit/test_detection_signals.py",
    "tests/integration/test_livekit_fleet_agent_worker.py",
    "tests/integration/test_drill_hook_worker.py",
)
VERSIONS = "import livekit.agents, livekit.rtc; print(livekit.agents.__version__, livekit.rtc.__version__)"

pytestmark = [pytest.mark.livekit, pytest.mark.timeout(600)]


def _at_the_lowest_end(*arguments: str) -> subprocess.CompletedProcess[str]:
    if not (LOWEST / ".built").exists():
        pytest.fail(f"{LOWEST} is not filled: run `make wheelhouse-ranges` (part of `make setup`)")
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(LOWEST), checkout_pythonpath()])},
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )


def test_the_agent_package_passes_its_tests_with_livekit_agents_lowest_release() -> None:
    versions = _at_the_lowest_end("-c", VERSIONS)
    assert versions.stdout.split() == ["1.8.0", "1.1.17"], versions.stderr[-2000:]
    done = _at_the_lowest_end("-m", "pytest", "-p", "no:cacheprovider", "-q", *AGENT_TESTS)
    assert done.returncode == 0, done.stdout[-4000:]
    assert " passed" in done.stdout.splitlines()[-1]
