"""The scan budget's hourly tally (``fleet_remediation/adapters/scan_budget.py``): one DynamoDB item per
clock hour that the responder and the drainer add their Logs Insights bytes to."""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from constructs import Construct

from livekit_fleet_remediation.constructs.function_parts import expiring_table

# What the adapter does with the tally: read the hour's item, add to it.
TALLY_ACTIONS = ("dynamodb:GetItem", "dynamodb:UpdateItem")


class ScanBudgetTally(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        # Two hours of counts per item: nothing to keep.
        self.table = expiring_table(self, "Table", key="hour", expires_attribute="expires_at")

    def grant(self, grantee: iam.IGrantable) -> None:
        """The tally and the estimate: CloudWatch GetMetricStatistics takes no resource, so it is "*"."""
        self.table.grant(grantee, *TALLY_ACTIONS)
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(actions=["cloudwatch:GetMetricStatistics"], resources=["*"])
        )
