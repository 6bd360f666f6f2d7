"""Parts that more than one function construct adds, each built in one place: the once-only table,
a schedule and a log group's retention."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_logs as logs
from constructs import Construct


def expiring_table(
    scope: Construct, construct_id: str, *, key: str, expires_attribute: str
) -> dynamodb.Table:
    """An on-demand table of short-lived items, each gone at its ``expires_attribute`` time: nothing
    in it outlives the stack, so it goes with it."""
    return dynamodb.Table(
        scope,
        construct_id,
        partition_key=dynamodb.Attribute(name=key, type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        time_to_live_attribute=expires_attribute,
        encryption=dynamodb.TableEncryption.AWS_MANAGED,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        removal_policy=RemovalPolicy.DESTROY,
    )


def idempotency_table(scope: Construct) -> dynamodb.Table:
    """Powertools Idempotency records (once-keys), each expiring at its ``expiration`` time."""
    return expiring_table(scope, "Idempotency", key="id", expires_attribute="expiration")


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


_RETENTION_BY_DAYS = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    731: logs.RetentionDays.TWO_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
    3653: logs.RetentionDays.TEN_YEARS,
}


def log_retention(days: int) -> logs.RetentionDays:
    """CloudWatch accepts only some retention periods: the smallest listed one >= ``days``."""
    return next(value for step, value in sorted(_RETENTION_BY_DAYS.items()) if step >= days)
