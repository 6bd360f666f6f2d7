"""Lambda entry point: validate, parse, one call into the service, return the report."""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from fleet_remediation.core.invocation import run_reported
from fleet_remediation.core.observability import capture_lambda_handler, logger, metrics
from fleet_remediation.core.report import ReportBuilder
from zombie_reaper.dependencies import ReaperDependencies
from zombie_reaper.service import run_reaper


@cache  # once per cold start; a failure (e.g. a ConfigurationError) is not cached
def _default_dependencies() -> ReaperDependencies:
    return ReaperDependencies.from_environment()


@metrics.log_metrics
@logger.inject_lambda_context
@capture_lambda_handler
def lambda_handler(
    event: dict[str, Any], context: LambdaContext, dependencies: ReaperDependencies | None = None
) -> dict[str, Any]:
    def body(report: ReportBuilder) -> None:
        deps = dependencies or _default_dependencies()
        run_reaper(event, report, deps, context.get_remaining_time_in_millis() / 1000, context)

    return run_reported("zombie_reaper", context.aws_request_id, body)
