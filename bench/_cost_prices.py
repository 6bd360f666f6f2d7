"""AWS list prices the cost model uses, per region, dated, each with the AWS page it belongs to.

On-demand list prices without the free tier (it is per account, shared with whatever else runs
there) and without savings plans. A region missing here is an error, never a guess. Where the copy
of the AWS page read on ``READ_ON`` did not show the paid tier itself, ``checked_with`` names the
summary of that page the figure was checked against (empty: not checked again that day).
"""

from __future__ import annotations

from dataclasses import dataclass

# When the figures below were read from the pages they cite.
READ_ON = "2026-12-01"

CLOUDWATCH_PAGE = "https://aws.amazon.com/cloudwatch/pricing/"
LAMBDA_PAGE = "https://aws.amazon.com/lambda/pricing/"
KMS_PAGE = "https://aws.amazon.com/kms/pricing/"
DYNAMODB_PAGE = "https://aws.amazon.com/dynamodb/pricing/"
SNS_PAGE = "https://aws.amazon.com/sns/pricing/"
EVENTBRIDGE_PAGE = "https://aws.amazon.com/eventbridge/pricing/"
SECRETS_PAGE = "https://aws.amazon.com/secrets-manager/pricing/"
# Summaries of those pages the paid-tier figures were checked against.
FACTUALMINDS_CLOUDWATCH = (
    "https://www.factualminds.com/blog/amazon-cloudwatch-pricing-metrics-logs-alarms-dashboards/"
)
CLOUDCHIPR_LAMBDA = "https://cloudchipr.com/blog/aws-lambda-pricing"
FACTUALMINDS_SNS = "https://www.factualminds.com/blog/amazon-sns-pricing-publishes-fanout-protocols/"


@dataclass(frozen=True)
class Price:
    usd: float
    unit: str
    source: str
    checked_with: str = ""


@dataclass(frozen=True)
class PriceTable:
    region: str
    read_on: str
    custom_metric_month: Price
    standard_alarm_metric_month: Price
    composite_alarm_month: Price
    dashboard_month: Price
    logs_ingested_gb: Price
    logs_stored_gb_month: Price
    insights_scanned_gb: Price
    cloudwatch_api_request: Price
    lambda_request: Price
    lambda_gb_second: dict[str, Price]
    kms_key_month: Price
    kms_request: Price
    dynamodb_write_request: Price
    dynamodb_read_request: Price
    sns_publish: Price
    sns_email: Price
    eventbridge_custom_event: Price
    secrets_api_call: Price

    def sources(self) -> list[str]:
        """Every page the table's prices come from, and every summary they were checked against."""
        prices = [p for p in vars(self).values() if isinstance(p, Price)] + list(
            self.lambda_gb_second.values()
        )
        return sorted({url for p in prices for url in (p.source, p.checked_with) if url})


US_EAST_1 = PriceTable(
    region="us-east-1",
    read_on=READ_ON,
    custom_metric_month=Price(
        0.30,
        "metric series-month (first 10,000)",
        CLOUDWATCH_PAGE,
        "https://signoz.io/guides/cloudwatch-pricing",
    ),
    standard_alarm_metric_month=Price(0.10, "metric of a standard-resolution alarm, month", CLOUDWATCH_PAGE),
    composite_alarm_month=Price(0.50, "composite alarm-month", CLOUDWATCH_PAGE),
    dashboard_month=Price(3.00, "dashboard-month", CLOUDWATCH_PAGE, FACTUALMINDS_CLOUDWATCH),
    logs_ingested_gb=Price(
        0.50, "GB ingested (standard log class)", CLOUDWATCH_PAGE, FACTUALMINDS_CLOUDWATCH
    ),
    logs_stored_gb_month=Price(0.03, "GB-month archived", CLOUDWATCH_PAGE),
    insights_scanned_gb=Price(0.005, "GB scanned by Logs Insights", CLOUDWATCH_PAGE),
    cloudwatch_api_request=Price(
        0.01 / 1000, "API request (DescribeAlarms, GetMetricData metric)", CLOUDWATCH_PAGE
    ),
    lambda_request=Price(0.20 / 1_000_000, "request", LAMBDA_PAGE),
    lambda_gb_second={
        "x86_64": Price(0.0000166667, "GB-second (x86_64, first 6 billion)", LAMBDA_PAGE, CLOUDCHIPR_LAMBDA),
        "arm64": Price(0.0000133334, "GB-second (arm64, first 7.5 billion)", LAMBDA_PAGE, CLOUDCHIPR_LAMBDA),
    },
    kms_key_month=Price(1.00, "customer managed key-month", KMS_PAGE),
    kms_request=Price(0.03 / 10_000, "request", KMS_PAGE),
    dynamodb_write_request=Price(0.625 / 1_000_000, "on-demand write request unit", DYNAMODB_PAGE),
    dynamodb_read_request=Price(0.125 / 1_000_000, "on-demand read request unit", DYNAMODB_PAGE),
    sns_publish=Price(0.50 / 1_000_000, "publish (64 KB chunk)", SNS_PAGE, FACTUALMINDS_SNS),
    sns_email=Price(2.00 / 100_000, "e-mail delivery", SNS_PAGE, FACTUALMINDS_SNS),
    eventbridge_custom_event=Price(
        1.00 / 1_000_000, "custom event published (64 KB chunk)", EVENTBRIDGE_PAGE
    ),
    secrets_api_call=Price(0.05 / 10_000, "API call", SECRETS_PAGE),
)

PRICES: dict[str, PriceTable] = {US_EAST_1.region: US_EAST_1}


class UnpricedRegionError(ValueError):
    """The model has no price table for the stack's region."""


def prices_for(region: str) -> PriceTable:
    try:
        return PRICES[region]
    except KeyError:
        raise UnpricedRegionError(
            f"no price table for {region} (have: {', '.join(sorted(PRICES))}): add one read from "
            f"{CLOUDWATCH_PAGE} and the other pages in bench/_cost_prices.py"
        ) from None
