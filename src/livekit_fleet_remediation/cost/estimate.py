"""One environment's monthly bill, without and with an incident: the synthesized template's counts,
the functions' usage fitted to that template's schedules and agent services, the load asked for,
and the prices of the stack's region. ``lkfr cost`` and ``bench.cost`` both print ``estimate``."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import Any

from fleet_remediation.contract import metrics as metric_definitions
from fleet_remediation.contract.naming import FunctionName
from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.cost.agent_lines import AgentSignalBytes, per_response_lines
from livekit_fleet_remediation.cost.model import (
    FIXED,
    GB,
    HOURS_PER_MONTH,
    Billing,
    DashboardUse,
    Load,
    dashboard_gb,
    kms_month,
    monthly,
    with_incident,
)
from livekit_fleet_remediation.cost.stack import MINUTES_PER_MONTH, StackCounts, count_stack, unpriced_types
from livekit_fleet_remediation.cost.usage import Usage, UsageProfile

# The LiveKit credentials' cache: at most one read per five minutes per function copy.
SECRET_READS_PER_HOUR = 12


class UnpricedResourceError(ValueError):
    """The template holds a resource type the model neither prices nor names free."""

    code = "UnpricedResource"


@dataclass(frozen=True)
class CostRequest:
    tasks: int
    responses_per_minute: float
    incident_hours: float
    billing: Billing
    # The agent package's lines (None: today's per-response lines, as measured).
    signals: AgentSignalBytes | None = None
    stock_bytes_per_response: float | None = None


def emf_series() -> tuple[int, int]:
    """The functions' EMF metric series: (published every invocation, published only when not zero)."""
    dense = sparse = 0
    for definition in metric_definitions.definitions():
        if not definition.series:
            continue
        emitters = len(tuple(FunctionName) if definition.every_function else definition.functions)
        if definition.sparse:
            sparse += emitters
        else:
            dense += emitters
    return dense, sparse


def fitted(usage: Usage, counts: StackCounts, reference: Usage) -> Usage:
    """``usage`` for this template: each function's work scaled by how often the template's schedules
    run it (every copy, one per agent service) against ``reference`` (the profile's healthy run)."""
    factors = {}
    for function in FunctionName:
        name = function.value
        scheduled = sum(
            f.scheduled_per_month
            for f in counts.functions.values()
            if f.name.endswith(name.replace("_", "-"))
        )
        measured = reference.invocations[name] * MINUTES_PER_MONTH / reference.minutes
        factors[name] = scheduled / measured if measured else 1.0

    def scaled(counter: Counter[str]) -> Counter[str]:
        return Counter({name: value * factors.get(name, 1.0) for name, value in counter.items()})

    copies = {f.value: _copies(counts, f.value) for f in FunctionName}
    reads_cap = {name: n * SECRET_READS_PER_HOUR * usage.minutes / 60 for name, n in copies.items()}
    drainer = factors[FunctionName.WORKER_DRAINER.value]
    return dataclasses.replace(
        usage,
        invocations=scaled(usage.invocations),
        looks=scaled(usage.looks),
        look_minutes={name: v * factors.get(name, 1.0) for name, v in usage.look_minutes.items()},
        hour_minutes={hour: v * drainer for hour, v in usage.hour_minutes.items()},
        report_bytes=scaled(usage.report_bytes),
        secret_reads=Counter(
            {name: min(v * factors.get(name, 1.0), reads_cap[name]) for name, v in usage.secret_reads.items()}
        ),
    )


def _copies(counts: StackCounts, name: str) -> int:
    return sum(1 for f in counts.functions.values() if f.name.endswith(name.replace("_", "-")))


def stretched(incident: Usage, measured_hours: float, hours: float) -> Usage:
    """The measured incident run made ``hours`` long: its work scaled with its length (re-checks back
    off to every 32 minutes, so an outage's looks grow about linearly after its first hours)."""
    if hours == measured_hours:
        return incident
    factor = (incident.minutes + (hours - measured_hours) * 60) / incident.minutes

    def scaled(counter: Counter[str]) -> Counter[str]:
        return Counter({k: v * factor for k, v in counter.items()})

    return dataclasses.replace(
        incident,
        minutes=round(incident.minutes * factor),
        invocations=scaled(incident.invocations),
        looks=scaled(incident.looks),
        look_minutes={k: v * factor for k, v in incident.look_minutes.items()},
        report_bytes=scaled(incident.report_bytes),
        notifications=round(incident.notifications * factor),
        secret_reads=scaled(incident.secret_reads),
    )


@dataclass(frozen=True)
class _Priced:
    counts: StackCounts
    load: Load
    billing: Billing
    baseline: Usage
    base: dict[str, float]


def estimate(
    env_name: str,
    config: EnvironmentConfig,
    template: dict[str, Any],
    profile: UsageProfile,
    request: CostRequest,
) -> dict[str, Any]:
    unpriced = unpriced_types(r["Type"] for r in template["Resources"].values())
    if unpriced:
        raise UnpricedResourceError(f"the template holds resource types the model does not price: {unpriced}")
    counts = count_stack(template, config.region, [s.agent_log_group for s in config.agent_services])
    stock = request.stock_bytes_per_response
    load = Load(
        request.tasks,
        request.responses_per_minute,
        profile.stock_bytes_per_response if stock is None else stock,
        request.signals or per_response_lines(profile.signal_bytes_per_response),
    )
    baseline = fitted(profile.baseline, counts, profile.baseline)
    dense, sparse = emf_series()
    priced = _Priced(
        counts, load, request.billing, baseline, monthly(counts, baseline, load, request.billing, dense)
    )
    document = _document(env_name, config, request, priced)
    document["emf_series"] = {"every_invocation": dense, "when_not_zero": sparse}
    if request.incident_hours > 0:
        document["with_incident"] = _incident(
            profile, request.incident_hours, priced, dense + sparse, document
        )
    document["warnings"] = budget_warnings(document["functions_gb_per_hour"], config.scan_budget.gb_per_hour)
    return document


def _document(
    env_name: str, config: EnvironmentConfig, request: CostRequest, priced: _Priced
) -> dict[str, Any]:
    counts, load, billing = priced.counts, priced.load, priced.billing
    prices = billing.prices
    per_load = dashboard_gb(counts, priced.baseline, load, DashboardUse(1.0)) / (HOURS_PER_MONTH / 24)
    return {
        "environment": env_name,
        "stack_region": config.region,
        "prices": {"region": prices.region, "read_on": prices.read_on, "sources": prices.sources()},
        "tasks": request.tasks,
        "responses_per_minute": request.responses_per_minute,
        "agent_bytes_per_minute": {
            "stock": round(load.responses_per_minute * load.stock_bytes_per_response, 1),
            "signal_lines": round(load.signal_bytes_per_minute, 1),
        },
        "dashboard_loads_per_day": round(billing.dashboard.loads_per_day, 2),
        "dashboard_gb_per_load": round(per_load, 4),
        "dashboard_log_widgets": len(counts.log_widgets),
        "kms_keys_by_year": {str(year): kms_month(counts, prices, year) for year in (1, 2, 3)},
        "kms_year": billing.kms_year,
        **summary(priced.base),
        "scan_budget_ceiling_usd": round(
            config.scan_budget.gb_per_hour * HOURS_PER_MONTH * prices.insights_scanned_gb.usd, 2
        ),
        "functions_gb_per_hour": {
            "baseline": round(priced.baseline.peak_hour_bytes(load.agent_bytes_per_minute) / GB, 3)
        },
        "notes": [
            "drills: lkfr drill tags one task and reads what lkfr audit reads: fractions of a cent a drill",
            "xray: every invocation is a trace (active tracing); traces retrieved are priced only when given",
        ],
    }


def _incident(
    profile: UsageProfile, hours: float, priced: _Priced, series: int, document: dict[str, Any]
) -> dict[str, Any]:
    counts, load, billing, base = priced.counts, priced.load, priced.billing, priced.base
    incident = fitted(stretched(profile.incident, profile.incident_hours, hours), counts, profile.baseline)
    during = monthly(counts, incident, load, billing, series)
    today = fitted(profile.without_backoff, counts, profile.baseline)
    today_priced = monthly(counts, today, load, billing, series)
    peak = incident.peak_hour_bytes(load.agent_bytes_per_minute) / GB
    document["functions_gb_per_hour"]["incident_peak"] = round(peak, 3)
    return {
        "incident_hours": hours,
        **summary(with_incident(base, during, incident.minutes, FIXED)),
        "incident_insights_usd": _over_baseline(during, base, incident.minutes),
        "one_hour_without_backoff_insights_usd": _over_baseline(today_priced, base, today.minutes),
    }


def _over_baseline(run: dict[str, float], base: dict[str, float], minutes: int) -> float:
    """The functions' Logs Insights dollars a run spent beyond a healthy run of the same length."""
    share = minutes / MINUTES_PER_MONTH
    return round((run["insights_functions"] - base["insights_functions"]) * share, 4)


def budget_warnings(scanned: dict[str, float], gb_per_hour: float) -> list[str]:
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


def summary(components: dict[str, float]) -> dict[str, Any]:
    ranked = sorted(components.items(), key=lambda item: item[1], reverse=True)
    return {
        "monthly_usd": round(sum(components.values()), 2),
        "components": components,
        "dominant": [name for name, _ in ranked[:3]],
    }


def render(document: dict[str, Any]) -> str:
    agent = document["agent_bytes_per_minute"]
    lines = [
        f"{document['environment']} stack ({document['stack_region']}), {document['tasks']} tasks, "
        f"{document['responses_per_minute']:g} responses/min; {document['prices']['region']} list prices "
        f"read {document['prices']['read_on']}",
        f"agent log bytes a minute: {agent['stock']:g} stock livekit-agents, {agent['signal_lines']:g} "
        "the agent package's signal lines (billed here)",
        f"dashboard: {document['dashboard_loads_per_day']:g} loads a day, "
        f"{document['dashboard_log_widgets']} Logs Insights widgets scanning "
        f"{document['dashboard_gb_per_load']:g} GB a load",
        f"baseline: ${document['monthly_usd']:.2f}/month (dominant: {', '.join(document['dominant'])})",
    ]
    lines += [f"  {name:24} ${usd:9.4f}" for name, usd in document["components"].items()]
    kms = document["kms_keys_by_year"]
    lines.append(
        f"KMS keys by year: ${kms['1']:.2f}, ${kms['2']:.2f}, ${kms['3']:.2f} a month (year "
        f"{document['kms_year']} above)"
    )
    incident = document.get("with_incident")
    if incident:
        lines.append(
            f"with a {incident['incident_hours']:g} h provider outage: ${incident['monthly_usd']:.2f}/month; "
            f"its Logs Insights ${incident['incident_insights_usd']:.4f} (one hour re-checked every "
            f"tick without back-off: ${incident['one_hour_without_backoff_insights_usd']:.4f})"
        )
    lines.append(
        "the functions' looks can never scan more than "
        f"${document['scan_budget_ceiling_usd']:.2f}/month (the scan budget's ceiling, every look counted)"
    )
    lines += [f"note: {note}" for note in document["notes"]]
    lines += [f"warning: {warning}" for warning in document["warnings"]]
    return "\n".join(lines)
