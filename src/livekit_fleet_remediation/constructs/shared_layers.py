"""The two Lambda layers: our shared code, and the third-party dependencies (built without Docker
by `make layers`: pip installs manylinux wheels for the Lambda runtime, one layer per architecture,
into build/layers/deps-<arch>, and the runtime's Python compiles them; the wheel carries both
prebuilt, see ``livekit_fleet_remediation.assets``).
The functions run on the layers' architecture; a dependency layer built for another one fails synth
(its extension modules would not load)."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from livekit_fleet_remediation.assets import asset_roots
from livekit_fleet_remediation.nag import acknowledge

# The functions' Python, the one the Makefile's LAMBDA_PYTHON builds the layers and the bytecode for
# (docs/decisions/0017-bytecode-for-the-runtime.md).
RUNTIME_PYTHON = "3.13"
# Built from RUNTIME_PYTHON, so the template's runtime and the shipped bytecode's tag cannot disagree.
RUNTIME = lambda_.Runtime(f"python{RUNTIME_PYTHON}", lambda_.RuntimeFamily.PYTHON, supports_inline_code=True)
# ``make layers`` compiles every module for the runtime's Python: that bytecode ships (a cold start
# then compiles nothing); another Python's bytecode, a bytecode file without its source's folder
# and make's .built stamps never do.
BYTECODE_TAG = f"cpython-{RUNTIME_PYTHON.replace('.', '')}"
ASSET_EXCLUDES = ["**/*.pyc", f"!**/__pycache__/*.{BYTECODE_TAG}.pyc", "**/.built"]
OLDER_RUNTIME_REASON = (
    "python3.13, not the newest Python runtime: the functions ship bytecode compiled by the build's "
    "CPython 3.13, so a cold start compiles nothing; Lambda supports python3.13 until 2029-06-30 "
    "(docs/decisions/0017-bytecode-for-the-runtime.md)."
)
# Lambda's architecture names, and the machine each one's manylinux wheels are tagged with.
ARCHITECTURES = {"arm64": lambda_.Architecture.ARM_64, "x86_64": lambda_.Architecture.X86_64}
WHEEL_MACHINES = {"aarch64": "arm64", "x86_64": "x86_64"}


def wheel_architectures(site: Path) -> dict[str, set[str]]:
    """Each architecture the platform wheels installed in ``site`` are built for, with the
    distributions built for it, read from their ``.dist-info/WHEEL`` tags (pure wheels: none)."""
    found: dict[str, set[str]] = {}
    for wheel in sorted(site.glob("*.dist-info/WHEEL")):
        tags = [
            line.split(":", 1)[1].strip()
            for line in wheel.read_text().splitlines()
            if line.startswith("Tag:")
        ]
        for tag in tags:
            platform = tag.rsplit("-", 1)[-1]
            for machine, architecture in WHEEL_MACHINES.items():
                if platform.endswith(f"_{machine}"):
                    found.setdefault(architecture, set()).add(wheel.parent.name)
    return found


def check_dependency_layer(site: Path, architecture: str) -> None:
    """Raise unless every platform wheel in the layer is built for ``architecture``."""
    others = {arch: names for arch, names in wheel_architectures(site).items() if arch != architecture}
    if others:
        built = ", ".join(
            f"{arch} ({', '.join(sorted(names)[:3])}...)" for arch, names in sorted(others.items())
        )
        raise ValueError(
            f"the dependency layer {site} holds wheels for {built}, the functions run on {architecture}: "
            "rebuild it with `make layers`"
        )


def acknowledge_runtime(function: lambda_.Function) -> None:
    """cdk-nag's AwsSolutions-L1 asks for the newest runtime; ours is chosen for its bytecode."""
    acknowledge(function, "AwsSolutions-L1", OLDER_RUNTIME_REASON)


class SharedLayers(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, architecture: str = "arm64") -> None:
        super().__init__(scope, construct_id)
        roots = asset_roots()
        dependency_layer = roots.dependency_layer(architecture)
        if not (dependency_layer / "python").is_dir():
            raise FileNotFoundError(
                f"dependency layer not built: {dependency_layer}/python is missing; run `make layers`"
            )
        check_dependency_layer(dependency_layer / "python", architecture)
        self.architecture = ARCHITECTURES[architecture]
        self.shared = lambda_.LayerVersion(
            self,
            "SharedCode",
            code=lambda_.Code.from_asset(str(roots.shared_layer), exclude=ASSET_EXCLUDES),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[self.architecture],
            description="LiveKit Fleet Remediation shared code (fleet_remediation package)",
        )
        self.dependencies = lambda_.LayerVersion(
            self,
            "Dependencies",
            code=lambda_.Code.from_asset(str(dependency_layer), exclude=ASSET_EXCLUDES),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[self.architecture],
            description="Pinned third-party dependencies (requirements/runtime.lock, boto3 from the runtime)",
        )

    @property
    def all(self) -> list[lambda_.ILayerVersion]:
        return [self.dependencies, self.shared]
