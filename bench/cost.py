"""Cost benchmark: the stack's monthly bill in dollars before it is deployed, without and with an
incident (a fleet-wide TTS provider outage).

Billable counts come from the synthesized template of the standalone app's example environment
(functions, schedules, alarms, metric filters, the dashboard and its Logs Insights widgets, tables,
topics, queues, keys) and from the EMF metric series the functions emit
(``fleet_remediation.contract.metrics``); invocations, Logs Insights looks and report sizes come from
the replay (the functions' own code) over simulated traffic, and the bytes a look scans from the
simulated log lines. Prices: ``bench/_cost_prices.py`` (dated, with their pages).

    PYTHONPATH=agent:functions:layers/shared/python:cdk:. .venv/bin/python -m bench.cost \\
        --tasks 50 --responses-per-minute 2000 [--log-bytes-per-response B] [--incident-hours 6] [--json]
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

from bench._cost_model import FIXED, Load, agent_ingestion_usd, monthly, with_incident
from bench._cost_prices import PriceTable, UnpricedRegionError, prices_for
from bench._cost_scans import Usage, measured, outage_scenario, replay_usage
from bench._cost_stack import (
    EXAMPLE_ENVIRONMENT,
    MINUTES_PER_MONTH,
    StackCounts,
    count_stack,
    emf_series,
    example_context,
    synthesized_template,
    unpriced_types,
)
from livekit_fleet_remediation.config import EnvironmentConfig, load_environment

# The shortest baseline replay that holds every schedule's ticks a whole number of times.
BASELINE_MINUTES = 60
# The list prices used unless asked otherwise (the example environment's region may lack a table).
DEFAULT_PRICE_REGION = "us-east-1"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, required=True, help="agent tasks in the fleet")
    parser.add_argument("--responses-per-minute", type=float, required=True)
    parser.add_argument(
        "--log-bytes-per-response",
        type=float,
        default=None,
        help="agent log bytes per response (default: the simulated agents' lines)",
    )
    parser.add_argument("--incident-hours", type=float, default=6.0, help="0: no incident")
    parser.add_argument("--price-region", default=DEFAULT_PRICE_REGION)
    parser.add_argument("--json", action="store_true")
    return parser


def without_backoff(config: EnvironmentConfig) -> EnvironmentConfig:
    """The responder as it re-checked before the back-off: every ``recheck_minutes`` throughout."""
    tts = config.tts_reach
    return config.model_copy(
        update={"tts_reach": tts.model_copy(update={"recheck_max_minutes": tts.recheck_minutes})}
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    prices = prices_for(args.price_region)
    context = example_context()
    config = load_environment(context, EXAMPLE_ENVIRONMENT)
    with tempfile.TemporaryDirectory(prefix="bench-cost-") as outdir:
        template = synthesized_template(outdir)
    unpriced = unpriced_types(r["Type"] for r in template["Resources"].values())
    if unpriced:
        raise SystemExit(
            f"bench.cost: the template holds resource types the model does not price: {unpriced}"
        )
    counts = count_stack(template, config.region, config.agent_service.agent_log_group)

    def replayed(chosen: Any, cfg: EnvironmentConfig = config) -> tuple[Usage, Any]:
        return replay_usage(chosen, EXAMPLE_ENVIRONMENT, cfg)

    baseline, incident, volume = measured(replayed, BASELINE_MINUTES, args.incident_hours)
    _check_schedules(counts, baseline)
    bytes_per_response = args.log_bytes_per_response or volume.bytes_per_response
    load = Load(args.tasks, args.responses_per_minute, bytes_per_response)
    dense, sparse = emf_series()
    # A healthy hour publishes only the dense series; an incident's hours publish the sparse ones too.
    base = monthly(counts, baseline, load, prices, dense)
    document: dict[str, Any] = {
        "environment": EXAMPLE_ENVIRONMENT,
        "stack_region": config.region,
        "prices": {"region": prices.region, "read_on": prices.read_on, "sources": prices.sources()},
        "tasks": args.tasks,
        "responses_per_minute": args.responses_per_minute,
        "log_bytes_per_response": round(bytes_per_response, 1),
        "emf_series": {"every_invocation": dense, "when_not_zero": sparse},
        **_summary(base),
        "excluded": {"agent_log_ingestion_usd": agent_ingestion_usd(load, prices)},
        # The most the functions' re-checks and ticks may scan in a month (the scan budget).
        "scan_budget_ceiling_usd": round(
            config.scan_budget.gb_per_hour * 730 * prices.insights_scanned_gb.usd, 2
        ),
        "functions_gb_per_hour": {
            "baseline": round(baseline.peak_hour_bytes(load.agent_bytes_per_minute) / 1e9, 3)
        },
    }
    if incident is not None:
        document["with_incident"] = _incident(
            args, counts, base, incident, load, prices, dense + sparse, config
        )
        peak = incident.peak_hour_bytes(load.agent_bytes_per_minute) / 1e9
        document["functions_gb_per_hour"]["incident_peak"] = round(peak, 3)
    document["warnings"] = _budget_warnings(document["functions_gb_per_hour"], config.scan_budget.gb_per_hour)
    return document


def _incident(
    args: argparse.Namespace,
    counts: StackCounts,
    base: dict[str, float],
    incident: Usage,
    load: Load,
    prices: PriceTable,
    series: int,
    config: EnvironmentConfig,
) -> dict[str, Any]:
    priced = monthly(counts, incident, load, prices, series)
    month = with_incident(base, priced, incident.minutes, FIXED)
    today, _ = replay_usage(outage_scenario(1.0), EXAMPLE_ENVIRONMENT, without_backoff(config))
    today_priced = monthly(counts, today, load, prices, series)
    return {
        "incident_hours": args.incident_hours,
        **_summary(month),
        "incident_insights_usd": _over_baseline(priced, base, incident.minutes),
        "one_hour_without_backoff_insights_usd": _over_baseline(today_priced, base, today.minutes),
    }


def _over_baseline(run: dict[str, float], base: dict[str, float], minutes: int) -> float:
    """The functions' Logs Insights dollars a run spent beyond a healthy run of the same length."""
    share = minutes / MINUTES_PER_MONTH
    return round((run["insights_functions"] - base["insights_functions"]) * share, 4)


def _check_schedules(counts: StackCounts, baseline: Usage) -> None:
    """The replay invokes each function as often as the template's schedules do (a healthy hour
    has no alarm): the usage the model prices is the deployed stack's."""
    for function in counts.functions.values():
        expected = function.scheduled_per_month * baseline.minutes / MINUTES_PER_MONTH
        replayed = next(
            (
                count
                for name, count in baseline.invocations.items()
                if function.name.endswith(name.replace("_", "-"))
            ),
            0,
        )
        if abs(replayed - expected) > 1:
            raise SystemExit(
                f"bench.cost: the replay invoked {function.name} {replayed} times in {baseline.minutes} min, "
                f"the template's schedules {expected:g}: the replay's rules and the stack differ"
            )


def _budget_warnings(scanned: dict[str, float], gb_per_hour: float) -> list[str]:
    """Where the scan budget would hold looks back at this volume (the model prices them unheld)."""
    if not gb_per_hour:
        return []
    warnings = []
    if scanned["baseline"] > gb_per_hour / 2:
        warnings.append(
            f"a healthy hour's looks scan {scanned['baseline']:g} GB, over half the scan budget "
            f"({gb_per_hour:g} GB/h): raise scan_budget.gb_per_hour or the drainer's ticks will be skipped"
        )
    if scanned.get("incident_peak", 0.0) > gb_per_hour:
        warnings.append(
            f"the incident's busiest hour scans {scanned['incident_peak']:g} GB, over the scan budget "
            f"({gb_per_hour:g} GB/h): its re-checks would be skipped or stopped (priced here as run)"
        )
    return warnings


def _summary(components: dict[str, float]) -> dict[str, Any]:
    ranked = sorted(components.items(), key=lambda item: item[1], reverse=True)
    return {
        "monthly_usd": round(sum(components.values()), 2),
        "components": components,
        "dominant": [name for name, _ in ranked[:3]],
    }


def render(document: dict[str, Any]) -> str:
    lines = [
        f"{document['environment']} stack, {document['tasks']} tasks, {document['responses_per_minute']:g} "
        f"responses/min, {document['log_bytes_per_response']:g} log bytes/response; "
        f"{document['prices']['region']} list prices read {document['prices']['read_on']}",
        f"baseline: ${document['monthly_usd']:.2f}/month (dominant: {', '.join(document['dominant'])})",
    ]
    lines += [f"  {name:24} ${usd:9.4f}" for name, usd in document["components"].items()]
    incident = document.get("with_incident")
    if incident:
        lines.append(
            f"with a {incident['incident_hours']:g} h provider outage: ${incident['monthly_usd']:.2f}/month; "
            f"its Logs Insights ${incident['incident_insights_usd']:.4f} (one hour re-checked every "
            f"2 min without back-off: ${incident['one_hour_without_backoff_insights_usd']:.4f})"
        )
    excluded = document["excluded"]["agent_log_ingestion_usd"]
    lines.append(f"not counted: the agents' own log ingestion, ${excluded:.2f}/month")
    lines.append(
        "the functions' re-checks and ticks can never scan more than "
        f"${document['scan_budget_ceiling_usd']:.2f}/month (the scan budget's ceiling); a new ALARM's "
        "looks come on top"
    )
    lines += [f"warning: {warning}" for warning in document["warnings"]]
    return "\n".join(lines)


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
