"""What every command shares: the exit statuses, the ``--config``/``--env``/``--region`` flags and one
way to read the environment, so a wrong file or name reads the same from every command."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from fleet_remediation.contract.agent_services import DEFAULT_AGENT_SERVICE
from livekit_fleet_remediation.config import (
    ConfigError,
    EnvironmentConfig,
    context_from_file,
    environment_names,
    load_config_file,
    load_environment,
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


def sdk_failure(exc: ClientError | BotoCoreError, doing: str) -> CommandFailed:
    """An AWS SDK error as the one typed line every command prints (``code: message``, exit 1)."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code, message = str(error.get("Code") or "ClientError"), str(error.get("Message") or exc)
    else:
        code, message = type(exc).__name__, str(exc)
    return CommandFailed(code, f"{doing}: {' '.join(message.split())}")


class InvalidConfig(Exception):
    """The environment exists but does not validate (the message names the field)."""


def plain(text: str) -> str:
    """Docstring text for a terminal: without reStructuredText's and Markdown's code quotes."""
    return text.replace("``", "").replace("`", "")


class PlainHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """``--help`` as written in the module's docstring (its line breaks kept), quotes removed."""

    def format_help(self) -> str:
        return plain(super().format_help())


def add_common(parser: argparse.ArgumentParser) -> None:
    """``--config``, ``--stack`` or ``--app`` (where the configuration is), ``--env`` (optional where
    that holds one environment) and ``--region``; and the help without code quotes."""
    parser.formatter_class = PlainHelpFormatter
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--config",
        type=Path,
        help="an environments file or a cdk.json (default: $LKFR_CONFIG, else ./environments.json, "
        "else ./cdk.json)",
    )
    source.add_argument(
        "--stack",
        metavar="NAME",
        help="your deployed CloudFormation stack that holds the FleetRemediation construct: the "
        "configuration is read from its functions",
    )
    source.add_argument(
        "--app",
        metavar="COMMAND",
        help='your CDK app (e.g. "python app.py", run here): synthesized, the configuration is read '
        "from its template",
    )
    parser.add_argument(
        "--env",
        help="the environment's name in that file, or the construct's name_prefix in the stack or app "
        "(default there: the only one)",
    )
    parser.add_argument("--region", help="AWS region (default: the environment's)")


@dataclass(frozen=True)
class Configuration:
    """Where the configuration was read from (``where``, for messages: the user's file, stack or app)
    and the environments it holds, each as the raw object ``EnvironmentConfig`` validates."""

    where: str
    environments: dict[str, Any]
    path: Path | None = None

    def choose(self, env: str | None) -> str:
        if env:
            if env not in self.environments:
                known = ", ".join(sorted(self.environments))
                raise UsageError(f"{self.where}: environment {env!r} is not there (have: {known})")
            return env
        if len(self.environments) == 1:
            return next(iter(self.environments))
        known = " or ".join(sorted(self.environments))
        raise UsageError(f"{self.where} holds {len(self.environments)} environments: pass --env {known}")

    def load(self, env: str | None) -> tuple[str, EnvironmentConfig]:
        """One environment, validated: UsageError for a wrong name, InvalidConfig (naming the field
        and where it was read from) for a value that does not validate."""
        name = self.choose(env)
        try:
            return name, load_environment(self.environments_context(), name)
        except ConfigError as exc:
            raise InvalidConfig(f"{self.where}: {exc}") from None

    def environments_context(self) -> dict[str, Any]:
        return {"environments": self.environments}


def configuration(args: argparse.Namespace) -> Configuration:
    """The one way every command reads its configuration: ``--stack``, ``--app`` or the file."""
    from livekit_fleet_remediation.cli import deployed_config as deployed

    stack, app = getattr(args, "stack", None), getattr(args, "app", None)
    if stack is None and app is None:
        chosen = config_file(args.config)
        return Configuration(str(chosen), load_context(chosen)["environments"], chosen)
    where = f"stack {stack}" if stack else f"your CDK app ({app!r})"
    try:
        if stack:
            functions = deployed.from_stack(stack, *deployed.lambda_reader(args.region))
        else:
            functions = deployed.from_app(str(app), Path.cwd())
        name, raw = deployed.environment_config(functions, args.env, where)
    except deployed.DeployedConfigError as exc:
        raise UsageError(str(exc)) from None
    except (BotoCoreError, ClientError) as exc:
        raise sdk_failure(exc, f"reading {where}") from None
    return Configuration(where, {name: raw})


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
        f"cdk.json) or set {CONFIG_ENV_VAR}; with the construct in your own CDK app, pass --stack NAME "
        '(your deployed stack) or --app "python app.py" (lkfr validate --schema prints the file\'s '
        "JSON Schema)"
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


@dataclass(frozen=True)
class Target:
    """What a command that calls the deployed functions acts on: the environment (the functions'
    name prefix), the region, and the agent services the configuration names."""

    env: str
    region: str
    services: tuple[str, ...]
    where: str

    def service(self, given: str | None) -> str:
        """``--service``, else the only agent service; a name the configuration lacks is a UsageError."""
        if given is None and len(self.services) == 1:
            return self.services[0]
        if given is None or given not in self.services:
            choices = " or ".join(self.services)
            raise UsageError(
                f"{self.where}: pass --service {choices}" + (f" (not {given!r})" if given else "")
            )
        return given


def target(args: argparse.Namespace) -> Target:
    """``--env`` with ``--region`` names deployed functions without reading any file (the agent
    services are then whatever ``--service`` says); otherwise the configuration (file, stack or app)
    gives the environment, its region and its agent services."""
    if args.region and args.env and not (args.stack or args.app):
        given = getattr(args, "service", None)
        named = tuple(given) if isinstance(given, list) else (given or DEFAULT_AGENT_SERVICE,)
        return Target(args.env, args.region, named, f"environment {args.env}")
    source = configuration(args)
    env, config = source.load(args.env)
    return Target(
        env, args.region or config.region, tuple(s.name for s in config.agent_services), source.where
    )


def use_region(region: str | None, config: EnvironmentConfig) -> str:
    """The region the AWS clients use: ``--region``, else an AWS_DEFAULT_REGION already set, else the
    environment's; set as boto3's default, so every client of the budgeted factory picks it up."""
    if region:
        os.environ["AWS_DEFAULT_REGION"] = region
    return os.environ.setdefault("AWS_DEFAULT_REGION", config.region)
