"""The LiveKit API secret never reaches a log line, even with the root logger at DEBUG: botocore
logs response bodies at DEBUG, and the functions cap the SDK's loggers at INFO."""

from __future__ import annotations

import json
import logging

import boto3
import pytest
from moto import mock_aws

import fleet_remediation.core.observability as observability
from fleet_remediation.adapters.livekit_rooms import read_credentials

SECRET_VALUE = "s3cr3t-livekit-api-secret-value"


@mock_aws
def test_reading_the_livekit_secret_at_debug_logs_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    boto3.client("secretsmanager").create_secret(
        Name="it/livekit", SecretString=json.dumps({"api_key": "key", "api_secret": SECRET_VALUE})
    )
    caplog.set_level(logging.DEBUG)  # the root logger at DEBUG, as a careless LOG_LEVEL would set it
    for name in observability.SDK_LOGGERS:
        assert logging.getLogger(name).getEffectiveLevel() == logging.INFO

    credentials = read_credentials("it/livekit")

    assert credentials.api_secret.get_secret_value() == SECRET_VALUE
    assert caplog.records, "the call logged nothing at all: the check would prove nothing"
    assert all(SECRET_VALUE not in record.getMessage() for record in caplog.records)
