"""What an environment's stack will cost a month, before it is deployed, everything it causes
included: the agent package's log lines, the dashboard as you use it, the functions' Logs Insights
looks, Lambda, X-Ray, the KMS key and its rotations, the LiveKit secret's reads; without and with an
incident (a fleet-wide TTS provider outage).

    lkfr cost --env NAME --tasks N --responses-per-minute R [--config environments.json]
              [--dashboard-loads-per-day D | --dashboard-hours-open H --refresh-minutes M]
              [--incident-hours X] [--kms-year 1|2|3] [--prices FILE | --price-region REGION] [--json]
              [--agent-per-response | --agent-summary-line-bytes B [--agent-summary-seconds S]]
              [--agent-events-per-response E]

It synthesizes the environment's stack (seconds: it loads the CDK) and prices that template at the
list prices of the stack's own region: a dated table in the package, else ``--prices FILE`` (a price
file, schema in docs/operations/cost.md), else a refusal. The functions' usage is the replay's,
measured on the example environment and fitted to your schedules and agent services.

Exit status: 0 ok, 1 a typed failure (a region without prices, a bad price file, a template with a
resource the model does not price; one line on stderr), 2 bad arguments or configuration.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fleet_remediation.contract.agent_lines import (
    DEFAULT_TIMEOUT_RATE,
    SUMMARY_LINE_BYTES,
    TIMEOUT_LINE_BYTES,
)
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
from livekit_fleet_remediation.cost.agent_lines import (
    EVENT_OVERHEAD_BYTES,
    AgentSignalBytes,
    SummaryFormat,
)
from livekit_fleet_remediation.cost.estimate import CostRequest, UnpricedResourceError, estimate, render
from livekit_fleet_remediation.cost.model import Billing, DashboardUse
from livekit_fleet_remediation.cost.prices import PriceFileError, UnpricedRegionError, prices_for
from livekit_fleet_remediation.cost.stack import synthesized_template
from livekit_fleet_remediation.cost.usage import shipped_profile

DEFAULT_LOADS_PER_DAY = 24.0


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="lkfr cost", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common(found)
    found.add_argument("--tasks", type=_positive_int, required=True, help="agent tasks in the fleet")
    found.add_argument(
        "--responses-per-minute",
        type=_non_negative,
        required=True,
        help="agent responses a minute across the fleet",
    )
    use = found.add_mutually_exclusive_group()
    use.add_argument(
        "--dashboard-loads-per-day",
        type=_non_negative,
        help=f"dashboard loads (and auto-refreshes) a day (default {DEFAULT_LOADS_PER_DAY:g})",
    )
    use.add_argument("--dashboard-hours-open", type=_non_negative, help="hours a day the dashboard is open")
    found.add_argument("--refresh-minutes", type=_positive, help="its auto-refresh while open")
    found.add_argument("--incident-hours", type=_non_negative, default=6.0, help="0: no incident")
    lines = found.add_mutually_exclusive_group()
    lines.add_argument(
        "--agent-per-response",
        action="store_true",
        help="price the agent package's per-response lines (line_format='per_response') instead of its "
        "summaries",
    )
    lines.add_argument(
        "--agent-summary-line-bytes",
        type=_positive,
        help=f"one summary line's size (default {SUMMARY_LINE_BYTES}, measured on a real worker)",
    )
    found.add_argument(
        "--agent-summary-seconds", type=_positive, default=30.0, help="the summaries' interval"
    )
    found.add_argument(
        "--agent-events-per-response",
        type=_non_negative,
        default=DEFAULT_TIMEOUT_RATE,
        help="first-audio timeout lines (one per event) per response",
    )
    found.add_argument(
        "--kms-year", type=int, choices=(1, 2, 3), default=3, help="the key's year (3: steady)"
    )
    prices = found.add_mutually_exclusive_group()
    prices.add_argument("--prices", type=Path, help="a price file for the stack's region")
    prices.add_argument("--price-region", help="price at this region's table instead of the stack's")
    found.add_argument("--json", action="store_true", help="one JSON document")
    return found


def _positive_int(raw: str) -> int:
    value = int(raw)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, not {raw}")
    return value


def _non_negative(raw: str) -> float:
    value = float(raw)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {raw}")
    return value


def _positive(raw: str) -> float:
    value = float(raw)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {raw}")
    return value


def dashboard_use(args: argparse.Namespace) -> DashboardUse:
    if args.dashboard_hours_open is not None:
        if args.refresh_minutes is None:
            raise UsageError("--dashboard-hours-open needs --refresh-minutes (its auto-refresh)")
        return DashboardUse.open_for(args.dashboard_hours_open, args.refresh_minutes)
    if args.refresh_minutes is not None:
        raise UsageError("--refresh-minutes goes with --dashboard-hours-open")
    loads = args.dashboard_loads_per_day
    return DashboardUse(DEFAULT_LOADS_PER_DAY if loads is None else loads)


def agent_signals(args: argparse.Namespace) -> AgentSignalBytes | None:
    """The agent package's lines: by default its summaries (a line per job per interval, each job
    counted as writing every interval) and its first-audio timeout lines, at the sizes measured on a
    real worker (``python -m devkit.signal_bytes``); None: the per-response lines as the usage profile
    measured them."""
    if args.agent_per_response:
        return None
    line = args.agent_summary_line_bytes or SUMMARY_LINE_BYTES
    return SummaryFormat(
        summary_bytes=line + EVENT_OVERHEAD_BYTES,
        interval_seconds=args.agent_summary_seconds,
        event_bytes=TIMEOUT_LINE_BYTES + EVENT_OVERHEAD_BYTES,
        events_per_response=args.agent_events_per_response,
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    use = dashboard_use(args)
    # The file, or a construct user's stack or app read back (cli.common.configuration).
    source = configuration(args)
    env, config = source.load(args.env)
    context = source.environments_context()
    try:
        prices = prices_for(args.price_region or config.region, None if args.price_region else args.prices)
    except UnpricedRegionError as exc:
        raise CommandFailed(exc.code, str(exc)) from None
    except PriceFileError as exc:
        raise CommandFailed(exc.code, str(exc)) from None
    template = _template(env, context)
    request = CostRequest(
        args.tasks,
        args.responses_per_minute,
        args.incident_hours,
        Billing(prices, use, kms_year=args.kms_year),
        signals=agent_signals(args),
    )
    try:
        return estimate(env, config, template, shipped_profile(), request)
    except UnpricedResourceError as exc:
        raise CommandFailed(exc.code, str(exc)) from None


def _template(env: str, context: dict[str, Any]) -> dict[str, Any]:
    """The environment's synthesized template, with the feature flags of ./cdk.json when there is one."""
    with tempfile.TemporaryDirectory(prefix="lkfr-cost-") as outdir:
        return synthesized_template(env, context, outdir, flags_from=Path("cdk.json"))


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        document = run(args)
    except (UsageError, InvalidConfig) as exc:
        print(f"lkfr cost: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except CommandFailed as exc:
        print(f"cost failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps(document, indent=2) if args.json else render(document))
    return EXIT_OK
