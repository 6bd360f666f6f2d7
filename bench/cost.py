"""Cost benchmark: the example stack's monthly bill in dollars before it is deployed, without and with
an incident (a fleet-wide TTS provider outage), measured afresh: the replay (the functions' own
code over simulated traffic, ``bench/_cost_scans.py``) gives the usage that
``livekit_fleet_remediation.cost`` prices (``lkfr cost`` prices a team's own configuration with the
profile this writes, ``--write-profile``).

    PYTHONPATH=agent:functions:layers/shared/python:src:. .venv/bin/python -m bench.cost \\
        --tasks 50 --responses-per-minute 2000 [--incident-hours 6] [--price-region us-east-1] [--json]
"""

from __future__ import annotations

import os

# The replayed functions log their reports and emit EMF metrics: not on this output.
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

import argparse
import json
import sys
import tempfile
from typing import Any

from bench._cost_scans import measured_profile, replay_usage
from devkit.lambda_artifact import EXAMPLE_CONFIG, REPO_ROOT
from livekit_fleet_remediation.config import EnvironmentConfig, context_from_file, load_environment
from livekit_fleet_remediation.cost.estimate import CostRequest, estimate, render
from livekit_fleet_remediation.cost.model import Billing, DashboardUse
from livekit_fleet_remediation.cost.prices import UnpricedRegionError, prices_for
from livekit_fleet_remediation.cost.stack import synthesized_template
from livekit_fleet_remediation.cost.usage import PROFILE_FILE, UsageProfile
from livekit_fleet_remediation.standalone import pinned_context

# The example environment the model synthesizes: the standalone app's, from one place.
EXAMPLE_ENVIRONMENT = "prod"
# The shortest baseline replay that holds every schedule's ticks a whole number of times.
BASELINE_MINUTES = 60
# The incident the shipped profile measures.
PROFILE_INCIDENT_HOURS = 6.0
PROFILE_PATH = REPO_ROOT / "src" / "livekit_fleet_remediation" / "cost" / PROFILE_FILE


def example_context() -> dict[str, Any]:
    """The example environments (examples/standalone) with the feature flags the root cdk.json pins."""
    return {**pinned_context(REPO_ROOT / "cdk.json"), **context_from_file(EXAMPLE_CONFIG)}


def without_backoff(config: EnvironmentConfig) -> EnvironmentConfig:
    """The responder as it re-checked before the back-off: every ``recheck_minutes`` throughout."""
    tts = config.tts_reach
    return config.model_copy(
        update={"tts_reach": tts.model_copy(update={"recheck_max_minutes": tts.recheck_minutes})}
    )


def example_profile(incident_hours: float) -> UsageProfile:
    """The replay of the example environment: a healthy hour and the outage."""
    config = load_environment(example_context(), EXAMPLE_ENVIRONMENT)
    return measured_profile(
        lambda chosen: replay_usage(chosen, EXAMPLE_ENVIRONMENT, config),
        lambda chosen: replay_usage(chosen, EXAMPLE_ENVIRONMENT, without_backoff(config)),
        BASELINE_MINUTES,
        incident_hours,
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, required=True, help="agent tasks in the fleet")
    parser.add_argument("--responses-per-minute", type=float, required=True)
    parser.add_argument("--incident-hours", type=float, default=PROFILE_INCIDENT_HOURS, help="0: no incident")
    parser.add_argument("--dashboard-loads-per-day", type=float, default=24.0)
    parser.add_argument("--price-region", default="us-east-1", help="the example stack's region has no table")
    parser.add_argument("--write-profile", action="store_true", help=f"write {PROFILE_FILE} for lkfr cost")
    parser.add_argument("--json", action="store_true")
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    hours = args.incident_hours or PROFILE_INCIDENT_HOURS
    profile = example_profile(hours)
    if args.write_profile:
        PROFILE_PATH.write_text(json.dumps(profile.to_json(), indent=1) + "\n", encoding="utf-8")
    context = example_context()
    config = load_environment(context, EXAMPLE_ENVIRONMENT)
    with tempfile.TemporaryDirectory(prefix="bench-cost-") as outdir:
        template = synthesized_template(EXAMPLE_ENVIRONMENT, context, outdir)
    billing = Billing(prices_for(args.price_region), DashboardUse(args.dashboard_loads_per_day))
    request = CostRequest(args.tasks, args.responses_per_minute, args.incident_hours, billing)
    return estimate(EXAMPLE_ENVIRONMENT, config, template, profile, request)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        document = run(args)
    except UnpricedRegionError as exc:
        print(f"bench.cost: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(document) if args.json else render(document))
    return 0


if __name__ == "__main__":
    sys.exit(main())
