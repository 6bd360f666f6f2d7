"""The functions' architecture: arm64 unless an environment says x86_64, the layers and the functions
follow it, and the dependency layer's wheels are built for it (read from their ``.dist-info/WHEEL``
tags, as pip wrote them into the built layer)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest

from app import cdk_json_context
from livekit_fleet_remediation.constructs import shared_layers
from livekit_fleet_remediation.constructs.shared_layers import (
    DEPENDENCY_LAYER_DIR,
    check_dependency_layer,
    wheel_architectures,
)
from tests.infra.conftest import Synthesized


def _architectures(synthesized: Synthesized) -> set[str]:
    resources = synthesized.template.to_json()["Resources"].values()
    functions = {
        a for r in resources if r["Type"] == "AWS::Lambda::Function" for a in r["Properties"]["Architectures"]
    }
    layers = {
        a
        for r in resources
        if r["Type"] == "AWS::Lambda::LayerVersion"
        for a in r["Properties"]["CompatibleArchitectures"]
    }
    assert functions == layers, "the layers are built for the functions' architecture"
    return functions


def test_the_functions_run_on_arm64_with_a_dependency_layer_built_for_it(staging: Synthesized) -> None:
    assert _architectures(staging) == {"arm64"}
    built = wheel_architectures(DEPENDENCY_LAYER_DIR / "python")
    assert set(built) == {"arm64"}, f"`make layers` builds for arm64 by default: {built}"
    # The extension modules the functions load: pydantic-core's among them.
    assert any(name.startswith("pydantic_core-") for name in built["arm64"])


def _dist_info(site: Path, name: str, *tags: str) -> None:
    folder = site / f"{name}.dist-info"
    folder.mkdir(parents=True)
    (folder / "WHEEL").write_text(
        "Wheel-Version: 1.0\nRoot-Is-Purelib: false\n" + "".join(f"Tag: {t}\n" for t in tags)
    )


def test_the_wheel_tags_say_the_architecture_and_a_mixed_layer_is_refused(tmp_path: Path) -> None:
    _dist_info(
        tmp_path,
        "pydantic_core-2.46.4",
        "cp314-cp314-manylinux_2_17_aarch64",
        "cp314-cp314-manylinux2014_aarch64",
    )
    _dist_info(tmp_path, "idna-3.20", "py3-none-any")
    assert wheel_architectures(tmp_path) == {"arm64": {"pydantic_core-2.46.4.dist-info"}}
    check_dependency_layer(tmp_path, "arm64")
    _dist_info(tmp_path, "wrapt-2.5.2", "cp314-cp314-manylinux_2_28_x86_64")
    with pytest.raises(
        ValueError, match=r"x86_64 \(wrapt-2\.5\.2\.dist-info.*run `make layers LAMBDA_ARCH=arm64`"
    ):
        check_dependency_layer(tmp_path, "arm64")


def test_x86_64_stays_possible_with_a_layer_built_for_it(
    synth: Callable[..., Synthesized], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = copy.deepcopy(cdk_json_context())
    context["environments"]["staging"]["lambda_architecture"] = "x86_64"
    # The arm64 layer this checkout builds cannot serve x86_64 functions: synth says how to fix it.
    with pytest.raises(ValueError, match="run `make layers LAMBDA_ARCH=x86_64`"):
        synth("staging", context)
    x86 = tmp_path / "deps"
    _dist_info(x86 / "python", "pydantic_core-2.46.4", "cp314-cp314-manylinux_2_17_x86_64")
    monkeypatch.setattr(shared_layers, "DEPENDENCY_LAYER_DIR", x86)
    assert _architectures(synth("staging", context)) == {"x86_64"}
