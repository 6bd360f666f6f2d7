"""The monthly bill: the stack's counts (``_cost_stack``) and the replay's usage (``_cost_scans``) at the
prices of ``_cost_prices``. Each assumption that is not read from the stack or the replay is a named
constant here, said in the docs' cost page."""

from __future__ import annotations

import math
from dataclasses import dataclass

from bench._cost_prices import PriceTable
from bench._cost_scans import Usage
from bench._cost_stack import MINUTES_PER_MONTH, StackCounts
from fleet_remediation.contract.budgets import (
    ACTION_EVENT_PUTS_PER_RUN,
    IDEMPOTENCY_WRITES_PER_ACTION,
    NOTIFICATION_CHANNELS,
)
from fleet_remediation.contract.naming import FunctionName

GB = 1e9
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
# The dashboard opened or auto-refreshed this often a day; each load runs every Logs Insights widget
# over the dashboard's time range.
DASHBOARD_LOADS_PER_DAY = 24
# Per invocation: the kill switch is SSM (free), the alarm-state read is one CloudWatch request
# (drainer and responder), the LiveKit secret one Secrets Manager call (reaper and drainer), the
# drainer's ledger two reads.
ALARM_READERS = (FunctionName.WORKER_DRAINER.value, FunctionName.TTS_REACH_ALARM.value)
SECRET_READERS = (FunctionName.ZOMBIE_REAPER.value, FunctionName.WORKER_DRAINER.value)
LEDGER_READS_PER_TICK = 2
# Each look of the scan budget: one IncomingBytes read before it, one tally write after it.
BUDGET_CALLS_PER_LOOK = 1


@dataclass(frozen=True)
class Load:
    tasks: int
    responses_per_minute: float
    bytes_per_response: float

    @property
    def agent_bytes_per_minute(self) -> float:
        return self.responses_per_minute * self.bytes_per_response


def monthly(
    counts: StackCounts, usage: Usage, load: Load, prices: PriceTable, emf_series: int
) -> dict[str, float]:
    """Each component's dollars for a month that looks like ``usage`` throughout."""
    scale = MINUTES_PER_MONTH / usage.minutes
    invocations = {name: usage.invocations[name] * scale for name in usage.invocations}
    parts = {
        "custom_metrics_emf": emf_series * prices.custom_metric_month.usd,
        "custom_metrics_filters": counts.filter_series * prices.custom_metric_month.usd,
        "alarms": counts.alarm_metrics * prices.standard_alarm_metric_month.usd
        + counts.composite_alarms * prices.composite_alarm_month.usd,
        "dashboard": counts.dashboards * prices.dashboard_month.usd,
        "kms_keys": counts.keys * prices.kms_key_month.usd,
        "lambda": _lambda(counts, usage, load, prices, scale),
        "function_logs": _function_logs(counts, usage, invocations, prices, scale),
        "insights_functions": _gb(sum(usage.look_minutes.values()) * scale * load.agent_bytes_per_minute)
        * prices.insights_scanned_gb.usd,
        "insights_dashboard": _dashboard_gb(counts, usage, load) * prices.insights_scanned_gb.usd,
        "api_calls": _api_calls(usage, invocations, prices, scale),
        "notifications": _notifications(counts, usage, prices, scale),
    }
    return {name: round(usd, 4) for name, usd in parts.items()}


def _gb(byte_count: float) -> float:
    return byte_count / GB


def _lambda(counts: StackCounts, usage: Usage, load: Load, prices: PriceTable, scale: float) -> float:
    total = 0.0
    for function in FunctionName:
        name = function.value
        deployed = next(f for f in counts.functions.values() if f.name.endswith(name.replace("_", "-")))
        calls = usage.invocations[name] * scale
        seconds = calls * INVOCATION_BASE_SECONDS + usage.looks[name] * scale * LOOK_SECONDS
        if function is FunctionName.WORKER_DRAINER:
            seconds += calls * math.ceil(load.tasks / 100) * ECS_PAGE_SECONDS
        gb_seconds = seconds * deployed.memory_mb / 1024
        total += calls * prices.lambda_request.usd
        total += gb_seconds * prices.lambda_gb_second[deployed.architecture].usd
    return total


def _function_logs(
    counts: StackCounts, usage: Usage, invocations: dict[str, float], prices: PriceTable, scale: float
) -> float:
    total = 0.0
    for name, calls in invocations.items():
        per_call = usage.report_bytes[name] / max(usage.invocations[name], 1)
        line_bytes = (
            per_call + LAMBDA_LINES_BYTES + EMF_RECORD_BYTES + EVENTS_PER_INVOCATION * EVENT_OVERHEAD_BYTES
        )
        ingested = _gb(calls * line_bytes)
        retention = next(
            (
                f.log_retention_days
                for f in counts.functions.values()
                if f.name.endswith(name.replace("_", "-"))
            ),
            0,
        )
        total += ingested * prices.logs_ingested_gb.usd
        total += ingested * retention / 30 * prices.logs_stored_gb_month.usd
    return total


def _dashboard_gb(counts: StackCounts, usage: Usage, load: Load) -> float:
    loads = DASHBOARD_LOADS_PER_DAY * 730 / 24
    report_bytes_per_minute = usage.report_bytes.total() / usage.minutes
    per_load = sum(
        counts.dashboard_minutes * (load.agent_bytes_per_minute if w.agent_logs else report_bytes_per_minute)
        for w in counts.log_widgets
    )
    return _gb(loads * per_load)


def _api_calls(usage: Usage, invocations: dict[str, float], prices: PriceTable, scale: float) -> float:
    alarm_reads = sum(invocations.get(name, 0.0) for name in ALARM_READERS)
    budget_calls = usage.looks.total() * scale * BUDGET_CALLS_PER_LOOK
    secret_reads = sum(invocations.get(name, 0.0) for name in SECRET_READERS)
    ledger_reads = invocations.get(FunctionName.WORKER_DRAINER.value, 0.0) * LEDGER_READS_PER_TICK
    return (
        (alarm_reads + budget_calls) * prices.cloudwatch_api_request.usd
        + secret_reads * prices.secrets_api_call.usd
        + (ledger_reads + budget_calls) * prices.dynamodb_read_request.usd
        + budget_calls * prices.dynamodb_write_request.usd
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


FIXED = frozenset({"custom_metrics_filters", "alarms", "dashboard", "kms_keys", "insights_dashboard"})


def agent_ingestion_usd(load: Load, prices: PriceTable) -> float:
    """The agents' own log ingestion: outside the stack's bill, said beside it."""
    return round(_gb(load.agent_bytes_per_minute * MINUTES_PER_MONTH) * prices.logs_ingested_gb.usd, 2)
