"""Both packages carry ``py.typed``: mypy, run as a team's CI runs it against the environment the
wheel is installed in (``--python-executable``, nothing of the checkout on its path), reads the
packages' own annotations, so a wrong use is an error rather than ``Any``. The CDK, boto3 and pydantic
are not followed (``follow_imports = skip``): their own types are not under test, and reading the
CDK's takes minutes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from devkit.installed import InstalledEnvironment

MYPY_TIMEOUT_SECONDS = 600
MYPY_CONFIG = """[mypy]
strict = True

[mypy-aws_cdk.*,constructs.*,cdk_nag.*,jsii.*,boto3.*,botocore.*,pydantic.*,livekit.*]
follow_imports = skip
"""
# A misuse each package's annotations catch: assigning a typed result to an int.
MISUSES = {
    "remediation": (
        "from livekit_fleet_remediation.assets import AssetRoots, asset_roots\n"
        "roots: AssetRoots = asset_roots()\n"
        "wrong: int = roots.functions\n",
        'Incompatible types in assignment (expression has type "Path", variable has type "int")',
    ),
    "agent": (
        "from livekit_fleet_agent.load import TaskTagReader\nwrong: int = TaskTagReader()\n",
        'Incompatible types in assignment (expression has type "TaskTagReader", variable has type "int")',
    ),
}


def _mypy(installed: InstalledEnvironment, source: str, folder: Path) -> subprocess.CompletedProcess[str]:
    consumer = folder / "consumer.py"
    consumer.write_text(source)
    config = folder / "mypy.ini"
    config.write_text(MYPY_CONFIG)
    return installed.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-incremental",
            "--config-file",
            str(config),
            "--python-executable",
            str(installed.python),
            str(consumer),
        ],
        cwd=folder,
        timeout=MYPY_TIMEOUT_SECONDS,
        MYPYPATH="",
    )


@pytest.mark.parametrize("package", sorted(MISUSES))
def test_mypy_reads_the_installed_packages_types(
    package: str,
    remediation_installed: InstalledEnvironment,
    agent_installed: InstalledEnvironment,
    tmp_path: Path,
) -> None:
    installed = remediation_installed if package == "remediation" else agent_installed
    source, expected = MISUSES[package]
    done = _mypy(installed, source, tmp_path)
    output = done.stdout + done.stderr
    assert "missing library stubs or py.typed marker" not in output, output
    assert expected in output, output
    assert done.returncode == 1, output
