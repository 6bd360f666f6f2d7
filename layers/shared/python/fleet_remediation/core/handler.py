"""The Lambda entry point every function shares: its handler, run under Powertools' logger, metrics
and tracer, with its dependencies built once per cold start."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any, Protocol, TypeVar, cast

from aws_lambda_powertools.utilities.typing import LambdaContext

from fleet_remediation.core.invocation import run_reported
from fleet_remediation.core.observability import capture_lambda_handler, logger, metrics
from fleet_remediation.core.report import ReportBuilder

DepsT = TypeVar("DepsT")
DepsInT = TypeVar("DepsInT", contravariant=True)

# A function's own handler: the event, Lambda's context and how to get its dependencies.
Handles = Callable[[Any, LambdaContext, Callable[[], DepsT]], dict[str, Any]]


class Invokes(Protocol[DepsInT]):
    def invoke(
        self,
        event: Any,
        report: ReportBuilder,
        deps: DepsInT,
        remaining_seconds: float,
        context: LambdaContext | None = None,
    ) -> None: ...


class Handler(Protocol[DepsInT]):
    # ``context``: Lambda's, or a local stand-in with the same attributes (tests, tools).
    def __call__(self, event: Any, context: Any, dependencies: DepsInT | None = None) -> dict[str, Any]: ...

    # Forgets the cold start's dependencies (tests that change the environment).
    cache_clear: Callable[[], None]


def lambda_entry(from_environment: Callable[[], DepsT]) -> Callable[[Handles[DepsT]], Handler[DepsT]]:
    """Makes a function's handler its Lambda entry point. Its dependencies are built once per cold
    start (a failure, e.g. a ConfigurationError, is not cached) unless a caller injects its own."""
    default_dependencies = cache(from_environment)

    def entry(handles: Handles[DepsT]) -> Handler[DepsT]:
        @metrics.log_metrics
        @logger.inject_lambda_context
        @capture_lambda_handler
        def lambda_handler(
            event: dict[str, Any], context: LambdaContext, dependencies: DepsT | None = None
        ) -> dict[str, Any]:
            injected = dependencies
            return handles(event, context, default_dependencies if injected is None else lambda: injected)

        lambda_handler.cache_clear = default_dependencies.cache_clear  # type: ignore[attr-defined]
        return cast(Handler[DepsT], lambda_handler)

    return entry


def lambda_handler_for(
    function: str, pipeline: Invokes[DepsT], from_environment: Callable[[], DepsT]
) -> Handler[DepsT]:
    """The handler of ``function`` over any ``pipeline`` (e.g. the chat entry point, which has no
    stages), with exactly one report, returned."""

    def handles(event: Any, context: LambdaContext, dependencies: Callable[[], DepsT]) -> dict[str, Any]:
        def body(report: ReportBuilder) -> None:
            remaining = context.get_remaining_time_in_millis() / 1000
            pipeline.invoke(event, report, dependencies(), remaining, context)

        return run_reported(function, context.aws_request_id, body)

    return lambda_entry(from_environment)(handles)
