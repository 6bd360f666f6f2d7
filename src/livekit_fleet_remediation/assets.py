"""Where the construct finds the code it deploys: inside the installed wheel (``_assets/``, written by
``make dist``) or, in a checkout, the repository's own folders. One place, so synth from a wheel and
synth from the checkout package the same trees."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
PACKAGED_ASSETS = PACKAGE_DIR / "_assets"
REPO_ROOT = PACKAGE_DIR.parents[1]


@dataclass(frozen=True)
class AssetRoots:
    """``functions``: one folder per function; ``shared_layer`` and each dependency layer: layer roots
    (each holds ``python/``, as Lambda unpacks a layer under /opt). The dependency layer holds
    compiled wheels, so there is one per Lambda architecture (``arm64``, ``x86_64``)."""

    functions: Path
    shared_layer: Path
    layers: Path

    def dependency_layer(self, architecture: str) -> Path:
        return self.layers / f"deps-{architecture}"


def asset_roots() -> AssetRoots:
    """The wheel's prebuilt assets when installed, else the checkout's (``make layers`` builds the
    dependency layers into build/layers/deps-<architecture>)."""
    if PACKAGED_ASSETS.is_dir():
        base = PACKAGED_ASSETS
        return AssetRoots(base / "functions", base / "layers" / "shared", base / "layers")
    return AssetRoots(
        REPO_ROOT / "functions", REPO_ROOT / "layers" / "shared", REPO_ROOT / "build" / "layers"
    )
