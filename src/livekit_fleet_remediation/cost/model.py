"""The monthly bill: the stack's counts (``stack``) and the functions' usage (``usage``) at the prices
of ``prices``, with the agents' signal lines (``agent_lines``) and the dashboard as it is used. Each
assumption that is not read from the stack or the usage is a named constant here, said in the docs'
cost page (docs/operations/cost.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from fleet_remediation.contract.budgets import (
    ACTION_EVENT_PUTS_PER_RUN,
    IDEMPOTENCY_WRITES_PER_ACTION,
    NOTIFICATION_CHANNELS,
)
from fleet_remediation.contract.naming import FunctionName
from livekit_fleet_remediation.cost.agent_lines import AgentSignalBytes
from livekit_fleet_remediation.cost.prices import PriceTable
from livekit_fleet_remediation.cost.stack import MINUTES_PER_MONTH, StackCounts
from livekit_fleet_remediation.cost.usage import Usage

GB = 1e9
HOURS_PER_MONTH = 730
# Wall time of one invocation outside its looks, of one Logs Insights look (start, 1 s polls,
# results), and of one page of 100 ECS tasks the drainer describes.
INVOCATION_BASE_SECONDS = 0.4
LOOK_SECONDS = 3.0
ECS_PAGE_SECONDS = 0.15
# Lambda's START/END/REPORT lines and the EMF record, per invocation, on top of the report: five
# log events in all.
LAMBDA_LINES_BYTES = 350
EMF_RECORD_BYTES = 900
EVENTS_PER_INVOCATION = 5
# CloudWatch Logs bills 26 bytes per event on top of its text.
EVENT_OVERHEAD_BYTES = 26
# Per invocation: the kill switch is SSM (free), the alarm-state read is one CloudWatch request
# (drainer and responder), the drainer's ledger two reads.
ALARM_READERS = (FunctionName.WORKER_DRAINER.value, FunctionName.TTS_REACH_ALARM.value)
LEDGER_READS_PER_TICK = 2
# Each look of the scan budget: the IncomingBytes read and the tally read before it, the tally's ADD
# after it (an alarm's look slot adds one write per ALARM, left out: one a page).
BUDGET_READS_PER_LOOK = 1
# Active tracing samples the first request each second and 5 % after: every invocation of functions
# that run a few times a minute is a trace. Nobody retrieves traces unless asked (0 by default).
TRACES_PER_INVOCATION = 1.0


@dataclass(frozen=True)
class Load:
    tasks: int
    responses_per_minute: float
    # The stock livekit-agents lines a response puts in the log group (the team's own; looks scan them).
    stock_bytes_per_response: float
    signals: AgentSignalBytes

    @property
    def signal_bytes_per_minute(self) -> float:
        return self.signals(self.tasks, self.responses_per_minute)

    @property
    def agent_bytes_per_minute(self) -> float:
        """What a minute of the agent log groups holds: every look at them scans it."""
        return self.responses_per_minute * self.stock_bytes_per_response + self.signal_bytes_per_minute


@dataclass(frozen=True)
class DashboardUse:
    """How often the dashboard is loaded: loads a day, or hours open a day at a refresh interval."""

    loads_per_day: float

    @classmethod
    def open_for(cls, hours_per_day: float, refresh_minutes: float) -> DashboardUse:
        return cls(hours_per_day * 60 / refresh_minutes)


@dataclass(frozen=True)
class Billing:
    prices: PriceTable
    dashboard: DashboardUse
    # The KMS key's year (1: no rotation yet; 2: one; 3 on: two, the most it adds).
    kms_year: int = 3
    traces_retrieved_per_month: float = 0.0


def monthly(
    counts: StackCounts, usage: Usage, load: Load, billing: Billing, emf_series: int
) -> dict[str, float]:
    """Each component's dollars for a month that looks like ``usage`` throughout."""
    prices = billing.prices
    scale = MINUTES_PER_MONTH / usage.minutes
    invocations = {name: usage.invocations[name] * scale for name in usage.invocations}
    parts = {
        "agent_signal_lines": _gb(load.signal_bytes_per_minute * MINUTES_PER_MONTH)
        * prices.logs_ingested_gb.usd,
        "custom_metrics_emf": emf_series * prices.custom_metric_month.usd,
        "custom_metrics_filters": counts.filter_series * prices.custom_metric_month.usd,
        "alarms": counts.alarm_metrics * prices.standard_alarm_metric_month.usd
        + counts.composite_alarms * prices.composite_alarm_month.usd,
        "dashboard": counts.dashboards * prices.dashboard_month.usd,
        "kms_keys": kms_month(counts, prices, billing.kms_year),
        "lambda": _lambda(counts, usage, load, prices, scale),
        "function_logs": _function_logs(counts, usage, invocations, prices),
        "xray": _xray(counts, invocations, billing),
        "insights_functions": _gb(sum(usage.look_minutes.values()) * scale * load.agent_bytes_per_minute)
        * prices.insights_scanned_gb.usd,
        "insights_dashboard": dashboard_gb(counts, usage, load, billing.dashboard)
        * prices.insights_scanned_gb.usd,
        "api_calls": _api_calls(usage, invocations, prices, scale),
        "secret_reads": sum(usage.secret_reads.values()) * scale * prices.secrets_api_call.usd,
        "notifications": _notifications(counts, usage, prices, scale),
        # No drill feature is deployed yet: when one is, its runs are priced here.
        "drills": 0.0,
    }
    return {name: round(usd, 4) for name, usd in parts.items()}


def kms_month(counts: StackCounts, prices: PriceTable, year: int) -> float:
    """Every key's month, plus a dollar per rotation for each of a rotating key's first two."""
    rotations = min(max(year - 1, 0), 2)
    return (
        counts.keys * prices.kms_key_month.usd
        + counts.rotating_keys * rotations * prices.kms_rotation_month.usd
    )


def _gb(byte_count: float) -> float:
    return byte_count / GB


def _copies(counts: StackCounts, name: str) -> list[tuple[int, str]]:
    """Each deployed copy of function ``name`` (one per agent service for the responder and the
    drainer): its memory and architecture."""
    suffix = name.replace("_", "-")
    return [(f.memory_mb, f.architecture) for f in counts.functions.values() if f.name.endswith(suffix)]


def _lambda(counts: StackCounts, usage: Usage, load: Load, prices: PriceTable, scale: float) -> float:
    total = 0.0
    for function in FunctionName:
        name = function.value
        copies = _copies(counts, name)
        for memory_mb, architecture in copies:
            # The usage is the environment's: its calls and looks spread over the copies.
            calls = usage.invocations[name] * scale / len(copies)
            seconds = calls * INVOCATION_BASE_SECONDS + usage.looks[name] * scale / len(copies) * LOOK_SECONDS
            if function is FunctionName.WORKER_DRAINER:
                tasks = load.tasks / len(copies)
                seconds += calls * math.ceil(tasks / 100) * ECS_PAGE_SECONDS
            total += calls * prices.lambda_request.usd
            total += seconds * memory_mb / 1024 * prices.lambda_gb_second[architecture].usd
    return total


def _function_logs(
    counts: StackCounts, usage: Usage, invocations: dict[str, float], prices: PriceTable
) -> float:
    total = 0.0
    for name, calls in invocations.items():
        per_call = usage.report_bytes[name] / max(usage.invocations[name], 1)
        line_bytes = (
            per_call + LAMBDA_LINES_BYTES + EMF_RECORD_BYTES + EVENTS_PER_INVOCATION * EVENT_OVERHEAD_BYTES
        )
        ingested = _gb(calls * line_bytes)
        suffix = name.replace("_", "-")
        retention = next(
            (f.log_retention_days for f in counts.functions.values() if f.name.endswith(suffix)), 0
        )
        total += ingested * prices.logs_ingested_gb.usd
        total += ingested * retention / 30 * prices.logs_stored_gb_month.usd
    return total


def _xray(counts: StackCounts, invocations: dict[str, float], billing: Billing) -> float:
    traced = {
        name
        for name in invocations
        if any(f.traced for f in counts.functions.values() if f.name.endswith(name.replace("_", "-")))
    }
    recorded = sum(invocations[name] for name in traced) * TRACES_PER_INVOCATION
    prices = billing.prices
    return (
        recorded * prices.xray_trace_recorded.usd
        + billing.traces_retrieved_per_month * prices.xray_trace_retrieved.usd
    )


def dashboard_gb(counts: StackCounts, usage: Usage, load: Load, use: DashboardUse) -> float:
    """What the dashboard's Logs Insights widgets scan in a month: each load runs every one of them
    over the dashboard's time range."""
    loads = use.loads_per_day * HOURS_PER_MONTH / 24
    report_bytes_per_minute = usage.report_bytes.total() / usage.minutes
    per_load = sum(
        counts.dashboard_minutes * (load.agent_bytes_per_minute if w.agent_logs else report_bytes_per_minute)
        for w in counts.log_widgets
    )
    return _gb(loads * per_load)


def _api_calls(usage: Usage, invocations: dict[str, float], prices: PriceTable, scale: float) -> float:
    alarm_reads = sum(invocations.get(name, 0.0) for name in ALARM_READERS)
    looks = usage.looks.total() * scale
    ledger_reads = invocations.get(FunctionName.WORKER_DRAINER.value, 0.0) * LEDGER_READS_PER_TICK
    return (
        (alarm_reads + looks * BUDGET_READS_PER_LOOK) * prices.cloudwatch_api_request.usd
        + (ledger_reads + looks) * prices.dynamodb_read_request.usd
        + looks * prices.dynamodb_write_request.usd
    )


def _notifications(counts: StackCounts, usage: Usage, prices: PriceTable, scale: float) -> float:
    sent = usage.notifications * scale
    publishes = sent * NOTIFICATION_CHANNELS
    return (
        publishes * (prices.sns_publish.usd + prices.kms_request.usd)
        + sent * counts.email_subscriptions * prices.sns_email.usd
        + publishes * IDEMPOTENCY_WRITES_PER_ACTION * prices.dynamodb_write_request.usd
        + sent * ACTION_EVENT_PUTS_PER_RUN * prices.eventbridge_custom_event.usd
    )


def with_incident(
    baseline: dict[str, float], incident: dict[str, float], incident_minutes: int, fixed: frozenset[str]
) -> dict[str, float]:
    """A month of baseline with one incident run in it: the incident run's usage replaces as many
    minutes of baseline. ``incident`` is priced as if the whole month looked like the run."""
    share = incident_minutes / MINUTES_PER_MONTH
    return {
        name: round(usd if name in fixed else usd * (1 - share) + incident[name] * share, 4)
        for name, usd in baseline.items()
    }


FIXED = frozenset(
    {
        "agent_signal_lines",
        "custom_metrics_filters",
        "alarms",
        "dashboard",
        "kms_keys",
        "insights_dashboard",
        "drills",
    }
)
