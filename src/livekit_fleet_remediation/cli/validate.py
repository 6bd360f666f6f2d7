"""Check a configuration before a synth or a deploy: every environment (or --env NAME) of your
environments file, or the instance your stack or CDK app holds, against the settings model; a wrong
field is named with the path to it.

    lkfr validate --config environments.json
    lkfr validate --stack VoiceAgents --env calls
    lkfr validate --schema             print the JSON Schema of an environments file (for an editor)

The schema ships in the package (livekit_fleet_remediation/schema/environments.schema.json) and is
generated from the same model the check uses.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from livekit_fleet_remediation.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CommandFailed,
    InvalidConfig,
    UsageError,
    add_common,
    configuration,
)

SCHEMA_FILE = Path(__file__).resolve().parent.parent / "schema" / "environments.schema.json"


def environments_schema() -> dict[str, Any]:
    """The JSON Schema of an environments file, from ``EnvironmentConfig`` (the model synth validates)."""
    from livekit_fleet_remediation.config import ENVIRONMENT_NAME_PATTERN, EnvironmentConfig

    environment = EnvironmentConfig.model_json_schema()
    definitions = environment.pop("$defs", {})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "LiveKit Fleet Remediation environments",
        "description": "An environments file (or a cdk.json's context): one object per environment.",
        "type": "object",
        "properties": {
            "environments": {
                "type": "object",
                "propertyNames": {"pattern": ENVIRONMENT_NAME_PATTERN},
                "additionalProperties": environment,
                "minProperties": 1,
            }
        },
        "required": ["environments"],
        "$defs": definitions,
    }


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(prog="lkfr validate", description=__doc__)
    add_common(found)
    found.add_argument("--schema", action="store_true", help="print the JSON Schema and exit")
    found.add_argument("--json", action="store_true", help="one JSON document instead of lines")
    return found


def check(args: argparse.Namespace) -> tuple[str, list[str]]:
    """Where the configuration was read from, and the environments that validated; InvalidConfig on
    the first that does not (its message names the field)."""
    source = configuration(args)
    names = (
        [source.choose(args.env)]
        if args.env or len(source.environments) == 1
        else sorted(source.environments)
    )
    for name in names:
        source.load(name)
    return source.where, names


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.schema:
        print(SCHEMA_FILE.read_text(encoding="utf-8"), end="")
        return EXIT_OK
    try:
        where, names = check(args)
    except UsageError as exc:
        print(f"lkfr validate: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (InvalidConfig, CommandFailed) as exc:
        if args.json:
            print(json.dumps({"valid": False, "error": str(exc)}))
        print(f"invalid: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        print(json.dumps({"valid": True, "source": where, "environments": names}))
    else:
        print(f"valid: {where}: {', '.join(names)}")
    return EXIT_OK
