"""The remediation wheel at both ends of its dependency ranges: installed into a fresh venv with every
dependency at the lowest version its range allows (requirements/wheelhouse-lowest.lock: aws-cdk-lib a
year older than the newest, cdk-nag 2, pydantic 2.11, boto3 1.40) and into another at the highest
(requirements/wheelhouse-highest.lock: the newest releases the ranges allow, cdk-nag 3 among them),
offline. Each synthesizes examples/consumer_app with the pinned CDK CLI, cdk-nag clean (cdk-nag 2
reads the construct's ``NagSuppressions``, cdk-nag 3 its ``Validations`` acknowledgments), and the
two templates are the same.

What the comparison leaves out, and why:
- the ``CDKMetadata`` resource and its condition (the CDK's own usage report, naming its version);
- each resource's ``Metadata`` (construct paths and asset staging paths, the CDK's bookkeeping; cdk-nag
  2's ``cdk_nag`` suppressions, which cdk-nag 3 does not write);
- ``{"Ref": "AWS::NoValue"}`` list items, and a policy statement's one-item ``Resource`` list beside a
  lone value: CloudFormation drops the first and IAM reads both alike (older aws-cdk-lib writes a
  table grant as ``[arn, NoValue]``, newer as ``arn``).
Logical ids, resource types and every other property are compared as written, asset hashes included.
"""

from __future__ import annotations

import json
import shutil
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from devkit.installed import REPO_ROOT, install, range_end
from tests.packaging.test_consumer_app_installed import CDK_CLI, CONSUMER, OFFLINE, SYNTH_TIMEOUT_SECONDS

ENDS = ("lowest", "highest")
NAG_PROBE = Path(__file__).with_name("nag_probe.py")
NO_VALUE = {"Ref": "AWS::NoValue"}


def _pins(lock: Path) -> dict[str, str]:
    pins = {}
    for line in lock.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[_canonical(name)] = version.strip()
    return pins


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _ranges() -> dict[str, Requirement]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    return {Requirement(r).name: Requirement(r) for r in project["dependencies"]}


def _normalized(node: Any) -> Any:
    if isinstance(node, dict):
        out = {key: _normalized(value) for key, value in node.items()}
        resource = out.get("Resource")
        if "Effect" in out and isinstance(resource, list) and len(resource) == 1:
            out["Resource"] = resource[0]
        return out
    if isinstance(node, list):
        return [_normalized(item) for item in node if item != NO_VALUE]
    return node


def comparable(template: dict[str, Any]) -> dict[str, Any]:
    """The template without what legitimately differs between CDK releases (see the module's text)."""
    resources = {
        logical_id: _normalized({key: value for key, value in resource.items() if key != "Metadata"})
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] != "AWS::CDK::Metadata"
    }
    conditions = {k: v for k, v in template.get("Conditions", {}).items() if k != "CDKMetadataAvailable"}
    return {**template, "Resources": resources, "Conditions": conditions}


# Each end costs a venv and a synth (about a minute and a half on an idle 2-core machine); the
# comparison needs both, so one test may wait for two.
pytestmark = pytest.mark.timeout(900)


def _install_and_synthesize(end: str, wheel: Path, root: Path) -> dict[str, Any]:
    lock, wheelhouse = range_end(end)
    installed = install(root / "venv", wheel, "-r", lock, wheelhouse=wheelhouse)
    app_dir = root / "consumer_app"
    shutil.copytree(CONSUMER, app_dir, ignore=shutil.ignore_patterns("__pycache__", "cdk.out"))
    done = installed.run(
        [str(CDK_CLI), "synth", "--quiet", "--no-notices", "--output", "cdk.out"],
        cwd=app_dir,
        timeout=SYNTH_TIMEOUT_SECONDS,
        **OFFLINE,
    )
    listed = installed.run(
        [str(installed.python), "-m", "pip", "list", "--format=json"], cwd=root, timeout=60
    )
    checked = installed.run([str(installed.python), "-m", "pip", "check"], cwd=root, timeout=60)
    probed = installed.run(
        [str(installed.python), str(NAG_PROBE), str(root / "probe.out")],
        cwd=root,
        timeout=SYNTH_TIMEOUT_SECONDS,
    )
    return {
        "returncode": done.returncode,
        "output": done.stdout + done.stderr,
        "templates": [
            json.loads(t.read_text()) for t in sorted((app_dir / "cdk.out").glob("*.template.json"))
        ],
        "installed": {_canonical(p["name"]): p["version"] for p in json.loads(listed.stdout)},
        "pip_check": checked.stdout + checked.stderr if checked.returncode else "",
        "nag_probe": probed.stdout.strip().splitlines()[-1:] or [probed.stderr[-3000:]],
    }


@pytest.fixture(scope="module")
def at_end(
    wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], dict[str, Any]]:
    """One end's venv and synth, made on first use and kept for the module's other tests."""
    made: dict[str, dict[str, Any]] = {}

    def result(end: str) -> dict[str, Any]:
        if end not in made:
            root = tmp_path_factory.mktemp(f"range-{end}")
            made[end] = _install_and_synthesize(end, wheels["livekit_fleet_remediation"], root)
        return made[end]

    return result


def test_each_lowest_pin_is_its_ranges_floor_and_each_highest_pin_is_in_range() -> None:
    lowest, highest = (_pins(range_end(end)[0]) for end in ENDS)
    for name, requirement in _ranges().items():
        floors = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
        assert [Version(lowest[name])] == floors, (name, lowest[name], str(requirement.specifier))
        assert requirement.specifier.contains(highest[name]), (name, highest[name])


def test_the_ends_take_cdk_nag_2_at_the_lowest_and_cdk_nag_3_at_the_highest() -> None:
    lowest, highest = (_pins(range_end(end)[0]) for end in ENDS)
    assert (Version(lowest["cdk-nag"]).major, Version(highest["cdk-nag"]).major) == (2, 3)


@pytest.mark.parametrize("end", ENDS)
def test_the_wheel_installs_at_the_end_of_every_range_with_pip_check_clean(
    at_end: Callable[[str], dict[str, Any]], end: str
) -> None:
    result = at_end(end)
    expected = _pins(range_end(end)[0])
    assert {name: result["installed"].get(name) for name in expected} == expected
    assert result["pip_check"] == ""


@pytest.mark.parametrize("end", ENDS)
def test_the_consumer_app_synthesizes_cdk_nag_clean(
    at_end: Callable[[str], dict[str, Any]], end: str
) -> None:
    result = at_end(end)
    assert result["returncode"] == 0, result["output"][-4000:]
    assert "AwsSolutions-" not in result["output"], result["output"][-4000:]
    assert len(result["templates"]) == 1


@pytest.mark.parametrize(("end", "major"), [("lowest", "2"), ("highest", "3")])
def test_the_checks_run_and_read_the_constructs_acknowledgments_under_each_major(
    at_end: Callable[[str], dict[str, Any]], end: str, major: str
) -> None:
    """tests/packaging/nag_probe.py: the pattern-acknowledged finding passes, the other is reported."""
    (line,) = at_end(end)["nag_probe"]
    probed = json.loads(line)
    assert probed["cdk_nag"].split(".")[0] == major
    assert probed["reported"] == ["AwsSolutions-IAM5[Resource::*]"]


def test_the_template_is_the_same_at_both_ends(at_end: Callable[[str], dict[str, Any]]) -> None:
    (lowest,), (highest,) = (at_end(end)["templates"] for end in ENDS)
    assert sorted(lowest["Resources"]) == sorted(highest["Resources"])
    low, high = comparable(lowest), comparable(highest)
    differing = sorted(k for k in low["Resources"] if low["Resources"][k] != high["Resources"][k])
    assert differing == []
    assert low == high


def test_the_comparison_sees_a_changed_property() -> None:
    """What the normalization keeps: a property changed beside a NoValue item still differs."""
    statement = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": ["arn:a", NO_VALUE]}
    template = {"Resources": {"P": {"Type": "AWS::IAM::Policy", "Properties": {"Statement": [statement]}}}}
    changed = json.loads(json.dumps(template))
    changed["Resources"]["P"]["Properties"]["Statement"][0]["Resource"] = ["arn:b"]
    assert comparable(template)["Resources"]["P"]["Properties"]["Statement"][0]["Resource"] == "arn:a"
    assert comparable(template) != comparable(changed)
