"""The AWS endpoint in front of moto's server, as the service profile says (``Behaviour.PROFILE``):
ECS writes beyond the profile's bucket are answered with ECS's own throttling error (HTTP 400,
``ThrottlingException``), which botocore's retry mode reads as a throttle; within the bucket each call
is forwarded and answered after the profile's call time."""

from __future__ import annotations

import time

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto import mock_aws

from devkit.aws_endpoints import AwsEndpoint, Behaviour
from livekit_fleet_remediation.offline.service_profile import AWS_PROFILE

pytestmark = pytest.mark.timeout(60)


def test_ecs_writes_past_the_profiles_bucket_are_throttled_as_ecs_throttles(moto_server: str) -> None:
    with mock_aws(), AwsEndpoint(upstream=moto_server, rate_clock=lambda: 0.0) as endpoint:
        endpoint.behave(Behaviour.PROFILE, profile=AWS_PROFILE)
        once = Config(retries={"mode": "standard", "max_attempts": 1})
        ecs = boto3.client("ecs", region_name="eu-west-1", endpoint_url=endpoint.url, config=once)
        arn = ecs.create_cluster(clusterName="profiled")["cluster"]["clusterArn"]  # a write: 1 token
        started = time.monotonic()
        ecs.tag_resource(resourceArn=arn, tags=[{"key": "k", "value": "v"}])
        assert time.monotonic() - started >= AWS_PROFILE.api_call_seconds.p50
        writes = int(AWS_PROFILE.ecs_write.burst) - 2  # the bucket's burst, less the two calls above
        for _ in range(writes):
            ecs.tag_resource(resourceArn=arn, tags=[{"key": "k", "value": "v"}])
        with pytest.raises(ClientError) as throttled:
            ecs.tag_resource(resourceArn=arn, tags=[{"key": "k", "value": "v"}])
        assert throttled.value.response["Error"]["Code"] == "ThrottlingException"
        assert throttled.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        # Reads draw from their own bucket: still answered.
        assert ecs.describe_clusters(clusters=[arn])["clusters"][0]["clusterArn"] == arn
        assert endpoint.throttled >= 1
