"""``lkfr`` as a team gets it: the remediation wheel installed into a fresh venv outside the
repository (no checkout, no PYTHONPATH), its console script on PATH, the incident page's template
shipped as package data, and the replay printing the same figures as in the checkout."""

from __future__ import annotations

from pathlib import Path

from devkit.installed import InstalledEnvironment
from fleet_remediation import __version__

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "incident-2026-09-15.jsonl"
CONFIG = REPO / "examples" / "standalone" / "environments.json"


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
