"""The two Lambda layers: our shared code, and the third-party dependencies (built without Docker
by `make layers`: pip installs manylinux wheels for the Lambda runtime into build/layers/deps; the
wheel carries both prebuilt, see ``livekit_fleet_remediation.assets``)."""

from __future__ import annotations

from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from livekit_fleet_remediation.assets import asset_roots

RUNTIME = lambda_.Runtime.PYTHON_3_14
# Build stamps (make's .built) and bytecode are not code: they never ship.
ASSET_EXCLUDES = ["**/__pycache__", "**/*.pyc", "**/.built"]


class SharedLayers(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        roots = asset_roots()
        if not (roots.dependency_layer / "python").is_dir():
            raise FileNotFoundError(
                f"dependency layer not built: {roots.dependency_layer}/python is missing; run `make layers`"
            )
        self.shared = lambda_.LayerVersion(
            self,
            "SharedCode",
            code=lambda_.Code.from_asset(str(roots.shared_layer), exclude=ASSET_EXCLUDES),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[lambda_.Architecture.X86_64],
            description="LiveKit Fleet Remediation shared code (fleet_remediation package)",
        )
        self.dependencies = lambda_.LayerVersion(
            self,
            "Dependencies",
            code=lambda_.Code.from_asset(str(roots.dependency_layer), exclude=ASSET_EXCLUDES),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[lambda_.Architecture.X86_64],
            description="Pinned third-party dependencies (requirements/runtime.lock, boto3 from the runtime)",
        )

    @property
    def all(self) -> list[lambda_.ILayerVersion]:
        return [self.dependencies, self.shared]
