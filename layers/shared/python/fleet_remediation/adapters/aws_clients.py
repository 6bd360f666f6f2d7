"""Every AWS client the functions use comes from here, configured from its ``AwsCallBudget``
(contract/budgets.py): connect and read timeouts, a bounded number of attempts, standard or
adaptive retry mode. botocore's defaults (60 s socket timeouts, legacy retries) would let one
silent endpoint hold a function past its Lambda timeout with no report.

Endpoints follow botocore's own resolution (``AWS_ENDPOINT_URL`` and the per-service variables
included), which is how the tests point a client at a silent or throttling endpoint.
"""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.utilities.parameters import SecretsProvider, SSMProvider
from botocore.config import Config

from fleet_remediation.contract.budgets import KILL_SWITCH_READ, SECRET_READ, AwsCallBudget


def client_config(budget: AwsCallBudget) -> Config:
    return Config(
        connect_timeout=budget.connect_timeout_seconds,
        read_timeout=budget.read_timeout_seconds,
        retries={
            "mode": "adaptive" if budget.adaptive else "standard",
            "total_max_attempts": budget.attempts,
        },
    )


def aws_client(budget: AwsCallBudget) -> Any:
    """A boto3 client for ``budget.service`` whose every call ends within the budget's worst case."""
    return boto3.client(budget.service, config=client_config(budget))  # type: ignore[call-overload]


def ssm_provider() -> SSMProvider:
    """Powertools Parameters over an SSM client with the kill switch's budget."""
    return SSMProvider(boto_config=client_config(KILL_SWITCH_READ))


def secrets_provider() -> SecretsProvider:
    """Powertools Parameters over a Secrets Manager client with the credentials' budget."""
    return SecretsProvider(boto_config=client_config(SECRET_READ))
