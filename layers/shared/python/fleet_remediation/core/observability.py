"""Powertools Logger, Metrics and Tracer, configured once per function."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

from fleet_remediation.contract.naming import METRICS_NAMESPACE

logger = Logger()
metrics = Metrics(namespace=METRICS_NAMESPACE)
tracer = Tracer()
