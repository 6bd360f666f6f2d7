"""The standalone app's stack: one ``FleetRemediation`` per environment, named after it."""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_kms as kms
from constructs import Construct

from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.fleet_remediation import ENVIRONMENT_TAG, FleetRemediation

# The key was the notification topics' key (Notifications/TopicKey) before it served the stack: a
# deployed stack keeps the same key, and its topics need no new key.
KEY_LOGICAL_ID = "NotificationsTopicKey847416DA"
# CDK leaves a construct called "Default" out of the logical ids below it: the stack's resources keep
# the ids they had when the stack held them itself, so an update replaces none of them.
CONSTRUCT_ID = "Default"


class FleetRemediationStack(Stack):
    def __init__(
        self, scope: Construct, construct_id: str, *, env_name: str, config: EnvironmentConfig, **kwargs: Any
    ) -> None:
        # The stack itself carries the tag too (the construct tags what it holds); a stack's own tags
        # are its props under @aws-cdk/core:explicitStackTags.
        kwargs["tags"] = {ENVIRONMENT_TAG: env_name, **(kwargs.get("tags") or {})}
        super().__init__(scope, construct_id, **kwargs)
        self.remediation = FleetRemediation(self, CONSTRUCT_ID, name_prefix=env_name, config=config)
        cfn_key = self.remediation.key.key.node.default_child
        assert isinstance(cfn_key, kms.CfnKey)
        cfn_key.override_logical_id(KEY_LOGICAL_ID)
