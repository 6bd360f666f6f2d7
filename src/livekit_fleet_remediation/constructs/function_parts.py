"""Parts that more than one function construct adds, each built in one place: the once-only table,
a schedule, a log group's retention and a function's code."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from livekit_fleet_remediation.constructs.shared_layers import ASSET_EXCLUDES


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


def function_code(functions_dir: Path, function_dir: str) -> lambda_.Code:
    """functions/ without the other functions' folders: each function ships only its own code."""
    others = sorted(
        path.name for path in functions_dir.iterdir() if path.is_dir() and path.name != function_dir
    )
    excluded = [*others, *(f"{name}/**" for name in others), *ASSET_EXCLUDES]
    return lambda_.Code.from_asset(str(functions_dir), exclude=excluded)
