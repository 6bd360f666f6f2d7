"""The functions' architecture: arm64 unless an environment says x86_64; the layers and the functions
follow it, and the dependency layer deployed is the one built for it (`make layers` builds both, and
their wheels' ``.dist-info/WHEEL`` tags say which is which, as pip wrote them)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest

from livekit_fleet_remediation.assets import AssetRoots, asset_roots
from livekit_fleet_remediation.constructs import shared_layers
from livekit_fleet_remediation.constructs.shared_layers import check_dependency_layer, wheel_architectures
from tests.example_environments import example_context
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


@pytest.mark.parametrize("architecture", ["arm64", "x86_64"])
def test_make_layers_builds_a_dependency_layer_for_each_architecture(architecture: str) -> None:
    built = wheel_architectures(asset_roots().dependency_layer(architecture) / "python")
    assert set(built) == {architecture}, built
    # The extension modules the functions load: pydantic-core's among them.
    assert any(name.startswith("pydantic_core-") for name in built[architecture])


def test_the_functions_run_on_arm64_by_default(staging: Synthesized) -> None:
    assert _architectures(staging) == {"arm64"}


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
        "cp313-cp313-manylinux_2_17_aarch64",
        "cp313-cp313-manylinux2014_aarch64",
    )
    _dist_info(tmp_path, "idna-3.20", "py3-none-any")
    assert wheel_architectures(tmp_path) == {"arm64": {"pydantic_core-2.46.4.dist-info"}}
    check_dependency_layer(tmp_path, "arm64")
    _dist_info(tmp_path, "wrapt-2.5.2", "cp313-cp313-manylinux_2_28_x86_64")
    with pytest.raises(ValueError, match=r"x86_64 \(wrapt-2\.5\.2\.dist-info.*rebuild it with `make layers`"):
        check_dependency_layer(tmp_path, "arm64")


def test_x86_64_functions_get_the_x86_64_layer(synth: Callable[..., Synthesized]) -> None:
    context = copy.deepcopy(example_context())
    context["environments"]["staging"]["lambda_architecture"] = "x86_64"
    assert _architectures(synth("staging", context)) == {"x86_64"}


def test_a_layer_built_for_another_architecture_fails_synth(
    synth: Callable[..., Synthesized], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = asset_roots()
    _dist_info(
        tmp_path / "deps-x86_64" / "python", "pydantic_core-2.46.4", "cp313-cp313-manylinux_2_17_aarch64"
    )
    monkeypatch.setattr(
        shared_layers, "asset_roots", lambda: AssetRoots(real.functions, real.shared_layer, tmp_path)
    )
    context = copy.deepcopy(example_context())
    context["environments"]["staging"]["lambda_architecture"] = "x86_64"
    with pytest.raises(ValueError, match="functions run on x86_64: rebuild it with `make layers`"):
        synth("staging", context)
