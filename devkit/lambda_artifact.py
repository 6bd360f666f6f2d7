"""The deploy artifact as CloudFormation would create it, read from a synthesized cloud assembly:
each function's code asset folder, its layers in order, its handler, runtime, memory, timeout,
tracing mode and environment, plus the schedules and alarm rules that invoke it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devkit.installed import InstalledEnvironment

REPO_ROOT = Path(__file__).resolve().parent.parent
# The environments the smoke test and the cold-start bench synthesize (the app's default is yours).
EXAMPLE_CONFIG = REPO_ROOT / "examples" / "standalone" / "environments.json"
SYNTH_TIMEOUT_SECONDS = 180


class ArtifactError(Exception):
    """The cloud assembly is not what a deployment of this project must look like."""


@dataclass(frozen=True)
class LayerAsset:
    logical_id: str
    path: Path


@dataclass(frozen=True)
class FunctionArtifact:
    logical_id: str
    function_name: str
    handler: str
    runtime: str
    memory_mb: int
    timeout_seconds: int
    tracing_mode: str | None
    code_dir: Path
    layers: tuple[LayerAsset, ...]
    # As in the template: values are strings or CloudFormation intrinsics ({"Ref": ...}).
    environment: dict[str, Any]

    @property
    def package(self) -> str:
        """The top-level package of the handler (``zombie_reaper`` for ``zombie_reaper.handler.x``)."""
        return self.handler.split(".", 1)[0]


@dataclass(frozen=True)
class CloudAssembly:
    outdir: Path
    stack_name: str
    template: dict[str, Any]
    asset_dirs: dict[str, Path]  # S3 object key -> asset folder

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        resources: dict[str, dict[str, Any]] = self.template["Resources"]
        return resources

    def resources_of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {key: res for key, res in self.resources.items() if res["Type"] == resource_type}

    def functions(self) -> list[FunctionArtifact]:
        return [
            self._function(key, res) for key, res in self.resources_of_type("AWS::Lambda::Function").items()
        ]

    def schedule_rules(self, function: FunctionArtifact) -> dict[str, dict[str, Any]]:
        """Each EventBridge schedule rule that targets ``function``: logical id -> properties."""
        return {
            key: rule for key, rule in self._rules_targeting(function).items() if "ScheduleExpression" in rule
        }

    def alarm_names(self, function: FunctionArtifact) -> list[str]:
        """The alarms whose state changes EventBridge routes to ``function``."""
        names = []
        for rule in self._rules_targeting(function).values():
            pattern = rule.get("EventPattern", {})
            if pattern.get("detail-type") != ["CloudWatch Alarm State Change"]:
                continue
            for resource in pattern.get("resources", []):
                alarm_id = resource["Fn::GetAtt"][0]
                names.append(str(self.resources[alarm_id]["Properties"]["AlarmName"]))
        return names

    def _rules_targeting(self, function: FunctionArtifact) -> dict[str, dict[str, Any]]:
        rules = {}
        for key, rule in self.resources_of_type("AWS::Events::Rule").items():
            props = rule["Properties"]
            arns = [target["Arn"] for target in props.get("Targets", [])]
            if {"Fn::GetAtt": [function.logical_id, "Arn"]} in arns:
                rules[key] = props
        return rules

    def _asset(self, code: dict[str, Any], owner: str) -> Path:
        key = code.get("S3Key")
        if not isinstance(key, str) or key not in self.asset_dirs:
            raise ArtifactError(f"{owner}: code {code!r} is not a file asset of this assembly")
        return self.asset_dirs[key]

    def _function(self, logical_id: str, resource: dict[str, Any]) -> FunctionArtifact:
        props = resource["Properties"]
        layers = []
        for layer in props.get("Layers", []):
            layer_id = layer.get("Ref") if isinstance(layer, dict) else None
            if layer_id not in self.resources:
                raise ArtifactError(f"{logical_id}: layer {layer!r} is not a layer of this stack")
            layers.append(
                LayerAsset(layer_id, self._asset(self.resources[layer_id]["Properties"]["Content"], layer_id))
            )
        return FunctionArtifact(
            logical_id=logical_id,
            function_name=str(props["FunctionName"]),
            handler=str(props["Handler"]),
            runtime=str(props["Runtime"]),
            # CloudFormation's defaults when the template leaves them out.
            memory_mb=int(props.get("MemorySize", 128)),
            timeout_seconds=int(props.get("Timeout", 3)),
            tracing_mode=props.get("TracingConfig", {}).get("Mode"),
            code_dir=self._asset(props["Code"], logical_id),
            layers=tuple(layers),
            environment=dict(props.get("Environment", {}).get("Variables", {})),
        )


def load_assembly(outdir: Path) -> CloudAssembly:
    """The one stack of a synthesized environment in ``outdir``."""
    templates = sorted(outdir.glob("*.template.json"))
    if len(templates) != 1:
        raise ArtifactError(f"expected one stack template in {outdir}, found {[t.name for t in templates]}")
    stack_name = templates[0].name.removesuffix(".template.json")
    manifest = json.loads((outdir / f"{stack_name}.assets.json").read_text())
    asset_dirs: dict[str, Path] = {}
    for name, asset in manifest.get("files", {}).items():
        source = asset["source"]
        if source.get("packaging") != "zip":
            continue  # a file asset (the template itself), not a folder Lambda unpacks
        for destination in asset["destinations"].values():
            asset_dirs[destination["objectKey"]] = outdir / source["path"]
        if not (outdir / source["path"]).is_dir():
            raise ArtifactError(f"asset {name}: {source['path']} is not a folder in {outdir}")
    return CloudAssembly(outdir, stack_name, json.loads(templates[0].read_text()), asset_dirs)


def synthesize(
    env_name: str, outdir: Path, config: Path = EXAMPLE_CONFIG, installed: InstalledEnvironment | None = None
) -> CloudAssembly:
    """Synthesize ``env_name`` of ``config`` offline exactly as ``make synth`` does
    (``LKFR_CONFIG=CONFIG python cdk/app.py ENV OUTDIR``); with ``installed``, as a team's standalone
    app does from the installed wheel (``python -m livekit_fleet_remediation.standalone``, no checkout
    on the path), so the functions' code and layers are the wheel's own."""
    if installed is None:
        command = [sys.executable, str(REPO_ROOT / "cdk" / "app.py")]
        environ = dict(os.environ)
    else:
        command = [str(installed.python), "-m", "livekit_fleet_remediation.standalone"]
        environ = installed.environ()
    done = subprocess.run(
        [*command, env_name, str(outdir)],
        cwd=REPO_ROOT,
        env={**environ, "LKFR_CONFIG": str(config)},
        capture_output=True,
        text=True,
        timeout=SYNTH_TIMEOUT_SECONDS,
        check=False,
    )
    if done.returncode != 0:
        raise ArtifactError(
            f"{' '.join(command)} {env_name} failed ({done.returncode}):\n{done.stderr[-4000:]}"
        )
    return load_assembly(outdir)
