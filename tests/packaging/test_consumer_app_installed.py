"""examples/consumer_app as a team runs it: copied out of the repository, with the remediation wheel
installed in a fresh venv and nothing of the checkout on the path, synthesized by the pinned CDK CLI
(`cdk synth`, which reads the app's cdk.json and its feature flags). Two instances under two prefixes,
cdk-nag clean, their functions' code taken from the wheel."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from typing import Any

import pytest

from devkit.installed import REPO_ROOT, InstalledEnvironment

CONSUMER = REPO_ROOT / "examples" / "consumer_app"
CDK_CLI = REPO_ROOT / "node_modules" / ".bin" / "cdk"
SYNTH_TIMEOUT_SECONDS = 300
# The CLI's own calls home: off, so the synth is offline as it must be.
OFFLINE = {
    "CDK_DISABLE_VERSION_CHECK": "true",
    "CDK_DISABLE_CLI_TELEMETRY": "true",
    "JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION": "1",
    "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION": "1",
}


@pytest.fixture(scope="module")
def synthesized(
    remediation_installed: InstalledEnvironment, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    app_dir = tmp_path_factory.mktemp("team") / "consumer_app"
    shutil.copytree(CONSUMER, app_dir, ignore=shutil.ignore_patterns("__pycache__", "cdk.out"))
    done = remediation_installed.run(
        [str(CDK_CLI), "synth", "--quiet", "--no-notices", "--output", "cdk.out"],
        cwd=app_dir,
        timeout=SYNTH_TIMEOUT_SECONDS,
        **OFFLINE,
    )
    templates = sorted((app_dir / "cdk.out").glob("*.template.json"))
    return {
        "returncode": done.returncode,
        "output": done.stdout + done.stderr,
        "templates": [json.loads(t.read_text()) for t in templates],
        "out": app_dir / "cdk.out",
    }


def test_the_cli_synthesizes_the_consumer_app_from_the_wheel(synthesized: dict[str, Any]) -> None:
    assert synthesized["returncode"] == 0, synthesized["output"][-4000:]
    assert len(synthesized["templates"]) == 1


def test_no_cdk_nag_finding_is_left_unsuppressed(synthesized: dict[str, Any]) -> None:
    assert "AwsSolutions-" not in synthesized["output"], synthesized["output"][-4000:]


def test_two_prefixes_make_two_sets_of_functions_that_name_nothing_alike(synthesized: dict[str, Any]) -> None:
    (template,) = synthesized["templates"]
    functions = [
        r["Properties"]["FunctionName"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function" and isinstance(r["Properties"].get("FunctionName"), str)
    ]
    prefixes = Counter(name.split("-")[1] for name in functions)
    # "calls" covers two agent services (a responder and a drainer each), "tutor" one.
    assert prefixes == {"calls": 5, "tutor": 3}, functions
    assert len(set(functions)) == len(functions)


def test_the_functions_code_is_the_wheels(
    synthesized: dict[str, Any], remediation_installed: InstalledEnvironment
) -> None:
    """The synthesized code assets hold what the installed wheel's _assets hold, file for file."""
    (packaged,) = remediation_installed.root.glob(
        "lib/python*/site-packages/livekit_fleet_remediation/_assets"
    )
    handlers = sorted(
        p.relative_to(synthesized["out"]).parts[1] for p in synthesized["out"].glob("asset.*/*/handler.py")
    )
    assert handlers == ["tts_reach_alarm", "worker_drainer", "zombie_reaper"]
    for handler in synthesized["out"].glob("asset.*/*/handler.py"):
        assert (
            handler.read_bytes() == (packaged / "functions" / handler.parent.name / "handler.py").read_bytes()
        )
