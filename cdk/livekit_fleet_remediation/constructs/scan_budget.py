"""The scan budget's hourly tally (``fleet_remediation/adapters/scan_budget.py``): one DynamoDB item per
clock hour that the responder and the drainer add their Logs Insights bytes to."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

# What the adapter does with the tally: read the hour's item, add to it.
TALLY_ACTIONS = ("dynamodb:GetItem", "dynamodb:UpdateItem")


class ScanBudgetTally(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name="hour", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            time_to_live_attribute="expires_at",
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            # Two hours of counts: nothing to keep.
            removal_policy=RemovalPolicy.DESTROY,
        )

    def grant(self, grantee: iam.IGrantable) -> None:
        """The tally and the estimate: CloudWatch GetMetricStatistics takes no resource, so it is "*"."""
        self.table.grant(grantee, *TALLY_ACTIONS)
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(actions=["cloudwatch:GetMetricStatistics"], resources=["*"])
        )
