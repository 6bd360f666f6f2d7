"""A remediation function's alarms on itself; the stack sends their state changes to the topics."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from fleet_remediation.contract import metrics as metric_definitions
from fleet_remediation.contract.naming import FunctionId, function_alarm_name

FIVE_MINUTES = Duration.minutes(5)
# The environment, the function and, for a service's responder or drainer, the agent service.
Whose = tuple[str, FunctionId, str | None]


def self_monitoring(
    scope: Construct,
    lambda_function: lambda_.Function,
    dlq: sqs.Queue,
    whose: Whose,
    expected_invocations_per_hour: int | None,
) -> list[cloudwatch.Alarm]:
    """Failed reports, errors, throttles, dead letters and, for a scheduled function, a schedule that
    stopped invoking it."""
    watched = _watched(lambda_function, dlq, whose)
    alarms = [
        cloudwatch.Alarm(
            scope,
            f"{construct_id}Alarm",
            metric=metric,
            alarm_name=function_alarm_name(whose[0], whose[1], suffix, whose[2]),
            alarm_description=description,
            threshold=1,
            evaluation_periods=periods,
            datapoints_to_alarm=periods if periods > 1 else None,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        for construct_id, suffix, metric, description, periods in watched
    ]
    if expected_invocations_per_hour:
        alarms.append(_schedule_stopped(scope, lambda_function, whose, expected_invocations_per_hour))
    return alarms


def _watched(
    lambda_function: lambda_.Function, dlq: sqs.Queue, whose: Whose
) -> list[tuple[str, str, cloudwatch.IMetric, str, int]]:
    # (construct id, alarm name suffix, metric, description, periods: ALARM when all of them are over)
    return [
        (
            "FailedReports",
            "failed-reports",
            _failed_reports(whose),
            "Invocations keep ending with status 'failed' (see report.errors).",
            3,
        ),
        (
            "Errors",
            "errors",
            lambda_function.metric_errors(period=FIVE_MINUTES),
            "The remediation function itself failed (see its report in the logs).",
            1,
        ),
        (
            "Throttles",
            "throttles",
            lambda_function.metric_throttles(period=FIVE_MINUTES),
            "Invocations were throttled (reserved concurrency or account limit).",
            1,
        ),
        (
            "DeadLetters",
            "dlq",
            dlq.metric_approximate_number_of_messages_visible(period=FIVE_MINUTES),
            "Deliveries failed and landed in the DLQ; inspect and redrive.",
            1,
        ),
    ]


def _failed_reports(whose: Whose) -> cloudwatch.Metric:
    # Typed failures (LiveKit unreachable, a bad secret) return a report instead of raising, so
    # Lambda's Errors metric misses them; the report's own EMF metric does not.
    failed = metric_definitions.INVOCATION_FAILED
    return cloudwatch.Metric(
        namespace=failed.namespace,
        metric_name=failed.name,
        dimensions_map=failed.dimensions(*whose),
        statistic="Sum",
        period=FIVE_MINUTES,
    )


def _schedule_stopped(
    scope: Construct, lambda_function: lambda_.Function, whose: Whose, per_hour: int
) -> cloudwatch.Alarm:
    return lambda_function.metric_invocations(period=Duration.hours(1)).create_alarm(
        scope,
        "ScheduleStoppedAlarm",
        alarm_name=function_alarm_name(whose[0], whose[1], "schedule-stopped", whose[2]),
        alarm_description=f"The schedule stopped invoking the function (expected {per_hour}/h).",
        threshold=max(1, per_hour // 2),
        comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        evaluation_periods=1,
        treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
    )
