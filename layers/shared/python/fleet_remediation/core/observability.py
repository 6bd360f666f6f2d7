"""Powertools Logger, Metrics and Tracer, configured once per function."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any, TypeVar, cast

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.shared import constants
from aws_lambda_powertools.shared.functions import resolve_truthy_env_var_choice

from fleet_remediation.contract.metrics import MetricDefinition
from fleet_remediation.contract.naming import METRICS_NAMESPACE

logger = Logger()
metrics = Metrics(namespace=METRICS_NAMESPACE)

# botocore logs request and response bodies at DEBUG (a GetSecretValue reply carries the LiveKit API
# secret): whatever level the root logger is given, the AWS SDK's own loggers stop at INFO.
SDK_LOGGERS = ("botocore", "boto3", "urllib3")
for _name in SDK_LOGGERS:
    logging.getLogger(_name).setLevel(logging.INFO)

HandlerT = TypeVar("HandlerT", bound=Callable[..., Any])
# What the X-Ray SDK patches: the AWS SDK, the one library of its list the functions use. Powertools'
# default, patch_all, imports a patch for a dozen database and HTTP clients besides.
TRACED_LIBRARIES = ("botocore",)


def tracing_enabled() -> bool:
    """Powertools' own rule: traced in Lambda (``LAMBDA_TASK_ROOT``) unless POWERTOOLS_TRACE_DISABLED
    says otherwise, never under SAM or Chalice locally."""
    if resolve_truthy_env_var_choice(env=os.getenv(constants.TRACER_DISABLED_ENV, "false")):
        return False
    local = os.getenv(constants.SAM_LOCAL_ENV) or os.getenv(constants.CHALICE_LOCAL_ENV)
    return bool(os.getenv(constants.LAMBDA_TASK_ROOT_ENV)) and not local


def capture_lambda_handler(handler: HandlerT) -> HandlerT:
    """Powertools Tracer's ``capture_lambda_handler`` when tracing is on; otherwise the handler as
    it is. A Tracer loads the X-Ray SDK (about 150 ms of a cold start) even when disabled, so it
    is only created when it will trace."""
    if not tracing_enabled():
        return handler
    from aws_lambda_powertools import Tracer

    return cast(HandlerT, Tracer(patch_modules=TRACED_LIBRARIES).capture_lambda_handler(handler))


def emit(metric: MetricDefinition, value: float) -> None:
    """Add one datapoint of a defined metric (``contract.metrics``): the only way functions emit.
    A count that is no series goes into the same EMF record as a plain field; a sparse one's zero
    is not published."""
    if metric.sparse and not value:
        return
    if metric.series:
        metrics.add_metric(name=metric.name, unit=MetricUnit(metric.unit), value=value)
    else:
        count_field(metric.name, value)


def count_field(name: str, value: float) -> None:
    """Add ``value`` to a count kept as a plain field of the invocation's EMF record."""
    metrics.add_metadata(key=name, value=metrics.metadata_set.get(name, 0) + value)
