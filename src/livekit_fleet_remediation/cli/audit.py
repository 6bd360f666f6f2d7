"""What did the functions do in the last N hours: one timeline from their reports and the drainer's
ledger, newest first.

    lkfr audit --env NAME --hours N [--json] [--config environments.json] [--region R]

Each invocation logs exactly one report into its function's log group; the drainer also records
every step (its intent, then its outcome) in its ledger table. Both are found from the deployed
functions' configuration (Lambda's LoggingConfig and environment), so generated names are followed.
Each line is a step: ``acted``, ``would-act`` (a dry run), ``held``, ``refused``, ``failed`` or
``unknown`` (started, outcome never came back: re-read the resource before counting it), with its
target, incident, and the undo where one exists. Read-only: nothing is invoked or changed.

With ``--region`` the configuration file is not needed (the functions' names follow from the
environment's name). Exit status: 0 when the audit was read (whatever it shows), 1 on a typed
failure (credentials, permissions, nothing deployed), with the error on one line, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TextIO

from fleet_remediation.contract.agent_services import DEFAULT_AGENT_SERVICE
from fleet_remediation.contract.naming import PER_SERVICE_FUNCTIONS, FunctionName
from fleet_remediation.core.audit_timeline import Entry, timeline
from livekit_fleet_remediation.cli.audit_sources import (
    Clients,
    Deployed,
    Progress,
    deployed,
    ledger_entries,
    reports,
)
from livekit_fleet_remediation.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CommandFailed,
    InvalidConfig,
    UsageError,
    add_common,
    target,
)

MAX_HOURS = 24 * 90  # the ledger keeps its audit trail 90 days


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="lkfr audit", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common(found)
    found.add_argument("--hours", type=float, required=True, help="how far back (hours)")
    found.add_argument("--json", action="store_true", help="one JSON document instead of the timeline")
    found.add_argument(
        "--service",
        action="append",
        help="an agent service whose responder and drainer to read (repeat it; default: every one the "
        f"configuration names; with --env and --region and no configuration read, {DEFAULT_AGENT_SERVICE})",
    )
    return found


def read(
    env: str,
    since: datetime,
    clients: Clients,
    progress: Progress,
    services: Sequence[str] = (DEFAULT_AGENT_SERVICE,),
) -> tuple[list[Deployed], list[Entry]]:
    """The deployed functions (the reaper, and each service's responder and drainer) and the steps
    they took since ``since``."""
    per_service = [f for f in FunctionName if f in PER_SERVICE_FUNCTIONS]
    functions = [
        deployed(env, FunctionName.ZOMBIE_REAPER, clients.lambda_),
        *(deployed(env, f, clients.lambda_, service) for service in services for f in per_service),
    ]
    found = [d for d in functions if d.log_group is not None]
    if not found:
        names = ", ".join(d.name for d in functions)
        raise CommandFailed(
            "ConfigurationError", f"none of {names} is deployed here (check --env and --region)"
        )
    for missing in (d for d in functions if d.log_group is None):
        progress.write(f"audit: {missing.name} is not deployed: no reports of it")
    logged = [
        report for d in found if d.log_group for report in reports(clients.logs, d.log_group, since, progress)
    ]
    tables = {d.ledger_table for d in found if d.ledger_table}
    ledger = [
        item for table in sorted(tables) for item in ledger_entries(clients.dynamodb, table, since, progress)
    ]
    return found, timeline(logged, ledger, env, clients.region)


def render(entries: list[Entry], env: str, since: datetime, out: TextIO) -> None:
    out.write(f"Audit of environment {env} since {since:%Y-%m-%d %H:%M} UTC: {len(entries)} step(s)\n")
    for entry in entries:
        head = f"{entry.at:%Y-%m-%d %H:%M:%S}  {entry.function:<15} {entry.kind:<9}"
        out.write(f"\n{head} {entry.action} {entry.target}\n")
        if entry.reason:
            out.write(f"    {entry.reason}\n")
        ids = [
            f"incident {entry.incident}" if entry.incident else "",
            f"invocation {entry.invocation}" if entry.invocation else "",
        ]
        out.write(f"    {'  '.join(i for i in ids if i)}  (mode {entry.mode or '-'}; from {entry.source})\n")
        if entry.undo:
            out.write(f"    undo: {entry.undo}\n")


def main(argv: Sequence[str] | None = None, clients: Clients | None = None) -> int:
    args = parser().parse_args(argv)
    if not 0 < args.hours <= MAX_HOURS:
        print(f"lkfr audit: error: --hours must be more than 0 and at most {MAX_HOURS}", file=sys.stderr)
        return EXIT_USAGE
    since = datetime.now(UTC) - timedelta(hours=args.hours)
    progress = Progress(lambda line: print(line, file=sys.stderr))
    try:
        found = target(args)
        services = args.service or list(found.services)
        functions, entries = read(
            found.env, since, clients or Clients.budgeted(found.region), progress, services
        )
    except (UsageError, InvalidConfig) as exc:
        print(f"lkfr audit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except CommandFailed as exc:
        print(f"audit failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        document = {
            "environment": found.env,
            "since": since.isoformat().replace("+00:00", "Z"),
            "functions": {
                d.name: {"log_group": d.log_group, "ledger_table": d.ledger_table} for d in functions
            },
            "entries": [entry.document() for entry in entries],
        }
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render(entries, found.env, since, sys.stdout)
    return EXIT_OK
