"""Powertools Logger, Metrics and Tracer, configured once per function."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from fleet_remediation.contract.metrics import MetricDefinition
from fleet_remediation.contract.naming import METRICS_NAMESPACE

logger = Logger()
metrics = Metrics(namespace=METRICS_NAMESPACE)
tracer = Tracer()


def emit(metric: MetricDefinition, value: float) -> None:
    """Add one datapoint of a defined metric (``contract.metrics``): the only way functions emit."""
    metrics.add_metric(name=metric.name, unit=MetricUnit(metric.unit), value=value)
