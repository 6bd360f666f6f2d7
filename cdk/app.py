"""CDK entry point: one stack per environment in cdk.json, named ``LiveKitFleetRemediation-<env>``.

`cdk ls`, `cdk synth`, `cdk bootstrap` see every environment; `cdk deploy LiveKitFleetRemediation-prod`
deploys one. `-c env=NAME` is a shortcut that builds only that environment's stack.
`python cdk/app.py [NAME] [OUTDIR]` synthesizes without the CLI (offline, no Docker).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

# The app imports the shared layer's configuration models, so synth validates what Lambda will read.
REPO_ROOT = Path(__file__).resolve().parent.parent
for path in (REPO_ROOT / "cdk", REPO_ROOT / "layers" / "shared" / "python", REPO_ROOT / "functions"):
    sys.path.insert(0, str(path))

import aws_cdk as cdk  # noqa: E402
from cdk_nag import AwsSolutionsChecks  # noqa: E402

from fleet_remediation import __version__  # noqa: E402
from fleet_remediation.contract.naming import stack_name  # noqa: E402
from fleet_remediation.core.errors import ConfigurationError  # noqa: E402
from livekit_fleet_remediation.config import ConfigError, environment_names, load_environment  # noqa: E402
from livekit_fleet_remediation.stack import FleetRemediationStack  # noqa: E402


def build_stacks(
    env_name: str | None, context: dict[str, Any] | None = None, outdir: str | None = None
) -> tuple[cdk.App, dict[str, FleetRemediationStack]]:
    """The app with the chosen environment's stack (``env_name``, else ``-c env``), or every
    environment's when none is chosen, and the cdk-nag AwsSolutions checks applied."""
    app = cdk.App(context=context, outdir=outdir)
    environments = {"environments": app.node.try_get_context("environments")}
    chosen = env_name or app.node.try_get_context("env")
    stacks = {}
    for name in [chosen] if chosen else environment_names(environments):
        config = load_environment(environments, name)
        stacks[name] = FleetRemediationStack(
            app,
            stack_name(name),
            env_name=name,
            config=config,
            env=cdk.Environment(account=config.account, region=config.region),
            description=f"LiveKit Fleet Remediation {__version__} ({name})",
        )
    cdk.Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    return app, stacks


def build_app(
    env_name: str, context: dict[str, Any] | None = None, outdir: str | None = None
) -> tuple[cdk.App, FleetRemediationStack]:
    """The app with one environment's stack."""
    app, stacks = build_stacks(env_name, context, outdir)
    return app, stacks[env_name]


def cdk_json_context() -> dict[str, Any]:
    context: dict[str, Any] = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
    return context


def main(argv: list[str]) -> None:
    # Under the CDK CLI the context (cdk.json plus -c flags) arrives in CDK_CONTEXT_JSON.
    from_cli = "CDK_CONTEXT_JSON" in os.environ
    env_name = None if from_cli else (argv[1] if len(argv) > 1 else None)
    outdir = None if from_cli else (argv[2] if len(argv) > 2 else "cdk.out")
    try:
        app, _ = build_stacks(env_name, None if from_cli else cdk_json_context(), outdir)
    except (ConfigError, ConfigurationError) as exc:
        sys.exit(f"cdk synth: {exc}")
    app.synth()


if __name__ == "__main__":
    main(sys.argv)
