"""What every command shares: the exit statuses, the ``--config``/``--env``/``--region`` flags and one
way to read the environment, so a wrong file or name reads the same from every command."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from livekit_fleet_remediation.config import (
    ConfigError,
    EnvironmentConfig,
    context_from_file,
    environment_names,
    load_config_file,
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
# The file the standalone app reads: $LKFR_CONFIG, else ./environments.json (or a cdk.json that holds
# them, as older checkouts do).
CONFIG_ENV_VAR = "LKFR_CONFIG"
DEFAULT_CONFIGS = (Path("environments.json"), Path("cdk.json"))


class UsageError(Exception):
    """Bad arguments or input the operator must fix (a missing file, an unknown environment): exit 2."""


class CommandFailed(Exception):
    """A typed failure after the arguments were good (``code: message``): exit 1."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message = code, message


class InvalidConfig(Exception):
    """The environment exists but does not validate (the message names the field)."""


def add_common(parser: argparse.ArgumentParser, *, env_required: bool = True) -> None:
    parser.add_argument(
        "--config",
        type=Path,
        help="an environments file or a cdk.json (default: $LKFR_CONFIG, else ./environments.json, "
        "else ./cdk.json)",
    )
    parser.add_argument("--env", required=env_required, help="the environment's name in that file")
    parser.add_argument("--region", help="AWS region (default: the environment's)")


def config_file(path: Path | None) -> Path:
    """``--config``, else ``$LKFR_CONFIG``, else the first default file here that exists."""
    if path is not None:
        return path
    if os.environ.get(CONFIG_ENV_VAR):
        return Path(os.environ[CONFIG_ENV_VAR])
    for candidate in DEFAULT_CONFIGS:
        if candidate.is_file() and _holds_environments(candidate):
            return candidate
    raise UsageError(
        f"no environments.json in {Path.cwd()}: pass --config PATH (your environments file or "
        f"cdk.json) or set {CONFIG_ENV_VAR}; examples/standalone/environments.json shows the shape"
    )


def _holds_environments(path: Path) -> bool:
    try:
        context_from_file(path)
    except ConfigError:
        return False
    return True


def load_context(path: Path | None) -> dict[str, Any]:
    """The file's ``environments`` context; a missing or unreadable file is a UsageError that says
    what to pass."""
    try:
        context = context_from_file(config_file(path))
        environment_names(context)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    return context


def load_config(path: Path | None, env: str) -> EnvironmentConfig:
    """One environment from ``path`` (or the default file): UsageError when the file or the name is
    wrong, InvalidConfig when the environment does not validate."""
    chosen = config_file(path)
    known = environment_names(load_context(chosen))
    try:
        return load_config_file(chosen, env)
    except ConfigError as exc:
        raise (InvalidConfig if env in known else UsageError)(str(exc)) from None


def use_region(region: str | None, config: EnvironmentConfig) -> str:
    """The region the AWS clients use: ``--region``, else an AWS_DEFAULT_REGION already set, else the
    environment's; set as boto3's default, so every client of the budgeted factory picks it up."""
    if region:
        os.environ["AWS_DEFAULT_REGION"] = region
    return os.environ.setdefault("AWS_DEFAULT_REGION", config.region)


def region_for(path: Path | None, env: str, region: str | None) -> str:
    """``--region`` as given (the functions' names follow from ``env``: no file is read), else the
    environment's region from the configuration file."""
    return region or load_config(path, env).region
