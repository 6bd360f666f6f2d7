"""The incident of 2026-09-15 and an example configuration, for ``lkfr replay --example`` and
``lkfr backtest --example``: inside the installed package (``livekit_fleet_remediation/examples/``,
put there by the wheel's build), else, in a checkout, where the repository keeps them."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

PACKAGED = Path(__file__).resolve().parent.parent / "examples"
REPO_ROOT = Path(__file__).resolve().parents[3]
INCIDENT_LOG = "incident-2026-09-15.jsonl"
ENVIRONMENTS = "environments.json"
# The example configuration's environment the incident ran in.
ENVIRONMENT = "prod"


@dataclass(frozen=True)
class Example:
    log: Path
    config: Path
    env: str = ENVIRONMENT


def example() -> Example:
    if (PACKAGED / INCIDENT_LOG).is_file():
        return Example(PACKAGED / INCIDENT_LOG, PACKAGED / ENVIRONMENTS)
    return Example(
        REPO_ROOT / "tests" / "fixtures" / INCIDENT_LOG, REPO_ROOT / "examples" / "standalone" / ENVIRONMENTS
    )


def add_example(parser: argparse.ArgumentParser) -> None:
    """``--log FILE`` or ``--example`` (the incident, with the example configuration's prod)."""
    given = parser.add_mutually_exclusive_group(required=True)
    given.add_argument("--log", type=Path, help="exported events (JSON lines or document)")
    given.add_argument(
        "--example",
        action="store_true",
        help=f"the incident of 2026-09-15 shipped with the package, with its example configuration "
        f"(environment {ENVIRONMENT} unless --env says otherwise)",
    )


def use_example(args: argparse.Namespace) -> None:
    """``--example`` fills the log, the configuration and the environment the user left out."""
    if args.example:
        found = example()
        args.log = found.log
        if not (args.config or getattr(args, "stack", None) or getattr(args, "app", None)):
            args.config = found.config
            args.env = args.env or found.env
