"""Runs one invocation's body and guarantees exactly one report, logged once and returned."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from fleet_remediation.contract import metrics as metric_definitions
from fleet_remediation.core.errors import KillSwitchError, RemediationError
from fleet_remediation.core.kill_switch import ModeSwitch, resolve_mode
from fleet_remediation.core.observability import count_field, emit, logger, metrics
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Mode


def run_reported(
    function: str, invocation_id: str | None, body: Callable[[ReportBuilder], None]
) -> dict[str, Any]:
    """Run ``body``; typed errors end up in the report, anything else is reported and re-raised so
    an asynchronous delivery is retried and, failing that, lands in the DLQ. So is a failure the
    body asked to surface after the report (``ReportBuilder.fail_after_report``)."""
    builder = ReportBuilder(function, invocation_id, full_detail=logger.log_level == logging.DEBUG)
    # Known before any validation, so even a configuration failure names its environment.
    builder.environment = os.environ.get("ENVIRONMENT_NAME")
    if builder.environment:
        metrics.add_dimension(name=metric_definitions.ENVIRONMENT_DIMENSION, value=builder.environment)
    builder.agent_service = os.environ.get("AGENT_SERVICE")
    if builder.agent_service:
        metrics.add_dimension(name=metric_definitions.AGENT_SERVICE_DIMENSION, value=builder.agent_service)
    unexpected: Exception | None = None
    try:
        body(builder)
    except RemediationError as exc:
        builder.error(exc)
    except Exception as exc:
        builder.internal_error(exc)
        unexpected = exc
    report = builder.finish()
    payload = report.model_dump(mode="json")
    # What the bounded report could not hold goes first, as separate lines of the same invocation.
    for part, items in enumerate(builder.detail_lines(), start=1):
        logger.info("remediation report detail", extra={"report_detail": {"part": part, "items": items}})
    logger.info("remediation report", extra={"report": payload})
    for record in report.errors:
        count_field(metric_definitions.error_metric_name(record.code), 1)
    emit(metric_definitions.INVOCATION_FAILED, int(report.status == "failed"))
    if unexpected is not None:
        raise unexpected
    if builder.failure_after_report is not None:
        raise builder.failure_after_report
    return payload


def decide_mode(switch: ModeSwitch, manual_dry_run: bool | None) -> tuple[Mode, KillSwitchError | None]:
    """The mode. An unreadable switch fails safe: dry run, with the error for the report."""
    try:
        return resolve_mode(switch.read(), manual_dry_run), None
    except KillSwitchError as exc:
        return resolve_mode(Mode.DRY_RUN, manual_dry_run), exc
