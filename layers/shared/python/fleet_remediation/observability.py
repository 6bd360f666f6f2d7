"""Powertools Logger, Metrics and Tracer, configured once per function."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

METRICS_NAMESPACE = "LiveKitFleetRemediation"

logger = Logger()
metrics = Metrics(namespace=METRICS_NAMESPACE)
tracer = Tracer()
