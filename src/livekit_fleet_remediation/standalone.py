"""The standalone CDK app: one stack per environment of your configuration file, named
``LiveKitFleetRemediation-<env>``, each a thin user of the ``FleetRemediation`` construct.

The environments (``{"environments": {...}}``, or a cdk.json with them under ``context``) come from
``-c config=PATH``, else ``$LKFR_CONFIG``, else ``environments.json`` in the current directory (yours:
git-ignored; ``examples/standalone/environments.json`` shows the shape). `cdk ls`, `cdk synth`,
`cdk bootstrap` see every environment; `-c env=NAME` builds only that one.
`python -m livekit_fleet_remediation.standalone [NAME] [OUTDIR]` synthesizes without the CLI (offline,
no Docker), with the feature flags of ./cdk.json; a cdk.json whose ``"app"`` is that command makes it a
CDK app with nothing but the installed package (``cdk/app.py`` is the checkout's).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk

from fleet_remediation import __version__
from fleet_remediation.contract.naming import stack_name
from fleet_remediation.core.errors import ConfigurationError
from livekit_fleet_remediation.config import (
    ConfigError,
    context_from_file,
    environment_names,
    load_environment,
)
from livekit_fleet_remediation.nag import apply_aws_solutions_checks
from livekit_fleet_remediation.stack import FleetRemediationStack

CONFIG_ENV_VAR = "LKFR_CONFIG"
DEFAULT_CONFIG = Path("environments.json")


def config_path(app: cdk.App) -> Path:
    """Where the environments are: ``-c config=PATH``, ``$LKFR_CONFIG``, or ./environments.json."""
    chosen = app.node.try_get_context("config") or os.environ.get(CONFIG_ENV_VAR)
    path = Path(chosen) if chosen else DEFAULT_CONFIG
    if not path.is_file():
        raise ConfigError(
            f"no configuration file {path}: write it, or name yours with -c config=PATH (or "
            f"{CONFIG_ENV_VAR}=PATH, or make ... CONFIG=PATH); examples/standalone/environments.json "
            "shows the shape"
        )
    return path


def build_stacks(
    env_name: str | None, context: dict[str, Any] | None = None, outdir: str | None = None
) -> tuple[cdk.App, dict[str, FleetRemediationStack]]:
    """The app with the chosen environment's stack (``env_name``, else ``-c env``), or every
    environment's when none is chosen, and the cdk-nag AwsSolutions checks applied. The environments
    are the context's ``environments``, else the configuration file's."""
    app = cdk.App(context=context, outdir=outdir)
    given = app.node.try_get_context("environments")
    environments = {"environments": given} if given else context_from_file(config_path(app))
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
    apply_aws_solutions_checks(app)
    return app, stacks


def build_app(
    env_name: str, context: dict[str, Any] | None = None, outdir: str | None = None
) -> tuple[cdk.App, FleetRemediationStack]:
    """The app with one environment's stack."""
    app, stacks = build_stacks(env_name, context, outdir)
    return app, stacks[env_name]


def pinned_context(cdk_json: Path) -> dict[str, Any]:
    """A cdk.json's context (the pinned feature flags), as the CDK CLI would pass it."""
    if not cdk_json.is_file():
        return {}
    context: dict[str, Any] = json.loads(cdk_json.read_text(encoding="utf-8")).get("context", {})
    return context


def main(argv: list[str]) -> None:
    # Under the CDK CLI the context (cdk.json plus -c flags) arrives in CDK_CONTEXT_JSON.
    from_cli = "CDK_CONTEXT_JSON" in os.environ
    env_name = None if from_cli else (argv[1] if len(argv) > 1 else None)
    outdir = None if from_cli else (argv[2] if len(argv) > 2 else "cdk.out")
    try:
        app, _ = build_stacks(env_name, None if from_cli else pinned_context(Path("cdk.json")), outdir)
    except (ConfigError, ConfigurationError) as exc:
        sys.exit(f"cdk synth: {exc}")
    app.synth()


if __name__ == "__main__":
    main(sys.argv)
