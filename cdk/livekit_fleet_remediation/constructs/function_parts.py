"""Parts that more than one function construct adds, each built in one place: the once-only table
and a schedule."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from constructs import Construct


def idempotency_table(scope: Construct) -> dynamodb.Table:
    """Powertools Idempotency records (once-keys), each expiring at its ``expiration`` time."""
    return dynamodb.Table(
        scope,
        "Idempotency",
        partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        time_to_live_attribute="expiration",
        encryption=dynamodb.TableEncryption.AWS_MANAGED,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        removal_policy=RemovalPolicy.DESTROY,
    )


def schedule(
    scope: Construct, construct_id: str, *, minutes: int, description: str, target: targets.LambdaFunction
) -> events.Rule:
    """A rule that invokes ``target`` every ``minutes``."""
    return events.Rule(
        scope,
        construct_id,
        description=description,
        schedule=events.Schedule.rate(Duration.minutes(minutes)),
        targets=[target],
    )
