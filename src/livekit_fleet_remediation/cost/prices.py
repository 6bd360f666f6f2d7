"""AWS list prices the cost model uses, per region, dated, each with the AWS page it belongs to.

On-demand list prices without the free tier (it is per account, shared with whatever else runs
there) and without savings plans. A region missing here is priced from a price file (``--prices``,
``PRICE_FILE_SCHEMA``) or refused (``UnpricedRegionError``), never guessed. Where the copy of the
AWS page read on ``READ_ON`` did not show the paid tier itself, ``checked_with`` names the summary of
that page the figure was checked against (empty: not checked again that day).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# When the figures below were read from the pages they cite.
READ_ON = "2026-12-01"

CLOUDWATCH_PAGE = "https://aws.amazon.com/cloudwatch/pricing/"
LAMBDA_PAGE = "https://aws.amazon.com/lambda/pricing/"
KMS_PAGE = "https://aws.amazon.com/kms/pricing/"
DYNAMODB_PAGE = "https://aws.amazon.com/dynamodb/pricing/"
SNS_PAGE = "https://aws.amazon.com/sns/pricing/"
EVENTBRIDGE_PAGE = "https://aws.amazon.com/eventbridge/pricing/"
SECRETS_PAGE = "https://aws.amazon.com/secrets-manager/pricing/"
XRAY_PAGE = "https://aws.amazon.com/xray/pricing/"
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
    # Each of a key's first two automatic rotations adds this much a month (year 2: +1, year 3 on: +2).
    kms_rotation_month: Price
    kms_request: Price
    dynamodb_write_request: Price
    dynamodb_read_request: Price
    sns_publish: Price
    sns_email: Price
    eventbridge_custom_event: Price
    secrets_api_call: Price
    xray_trace_recorded: Price
    xray_trace_retrieved: Price

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
    kms_rotation_month=Price(
        1.00, "key-month per rotation, for the first two rotations of a rotating key", KMS_PAGE
    ),
    kms_request=Price(0.03 / 10_000, "request", KMS_PAGE),
    dynamodb_write_request=Price(0.625 / 1_000_000, "on-demand write request unit", DYNAMODB_PAGE),
    dynamodb_read_request=Price(0.125 / 1_000_000, "on-demand read request unit", DYNAMODB_PAGE),
    sns_publish=Price(0.50 / 1_000_000, "publish (64 KB chunk)", SNS_PAGE, FACTUALMINDS_SNS),
    sns_email=Price(2.00 / 100_000, "e-mail delivery", SNS_PAGE, FACTUALMINDS_SNS),
    eventbridge_custom_event=Price(
        1.00 / 1_000_000, "custom event published (64 KB chunk)", EVENTBRIDGE_PAGE
    ),
    secrets_api_call=Price(0.05 / 10_000, "API call", SECRETS_PAGE),
    xray_trace_recorded=Price(5.00 / 1_000_000, "trace recorded", XRAY_PAGE),
    xray_trace_retrieved=Price(0.50 / 1_000_000, "trace retrieved or scanned", XRAY_PAGE),
)

PRICES: dict[str, PriceTable] = {US_EAST_1.region: US_EAST_1}


class UnpricedRegionError(ValueError):
    """No price table for the stack's region and no price file."""

    code = "UnpricedRegion"


class PriceFileError(ValueError):
    """A price file that does not follow ``PRICE_FILE_SCHEMA``."""

    code = "BadPriceFile"


# A price file (docs/operations/cost.md#prices): {"region": ..., "read_on": "YYYY-MM-DD", "prices":
# {<field of PriceTable>: {"usd": ..., "unit": ..., "source": <the page it was read from>}}}, with
# "lambda_gb_second" an {"x86_64": ..., "arm64": ...} object of price objects. Every field is
# required: a price left out would be a guess.


def prices_for(region: str, price_file: Path | None = None) -> PriceTable:
    """The table for ``region``: the price file when one is given (it must name that region), else
    the dated table here, else ``UnpricedRegionError``."""
    if price_file is not None:
        table = load_price_file(price_file)
        if table.region != region:
            raise PriceFileError(f"{price_file} prices {table.region}, the stack is in {region}")
        return table
    try:
        return PRICES[region]
    except KeyError:
        raise UnpricedRegionError(
            f"no price table for {region} (have: {', '.join(sorted(PRICES))}): pass --prices FILE with "
            f"{region}'s list prices from {CLOUDWATCH_PAGE} and the other pages (schema: "
            "docs/operations/cost.md#prices), or --price-region to price at another region's list"
        ) from None


def load_price_file(path: Path) -> PriceTable:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PriceFileError(f"cannot read price file {path}: {exc}") from None
    if not isinstance(document, dict) or not {"region", "read_on", "prices"} <= set(document):
        raise PriceFileError(f"{path}: needs region, read_on and prices")
    given = document["prices"]
    fields = [f.name for f in dataclasses.fields(PriceTable) if f.name not in ("region", "read_on")]
    missing = [name for name in fields if name not in given]
    if missing:
        raise PriceFileError(f"{path}: prices lacks {', '.join(missing)} (every price is required)")
    try:
        values: dict[str, Any] = {
            name: _price(given[name], f"{path}: prices.{name}")
            for name in fields
            if name != "lambda_gb_second"
        }
        values["lambda_gb_second"] = {
            arch: _price(price, f"{path}: prices.lambda_gb_second.{arch}")
            for arch, price in dict(given["lambda_gb_second"]).items()
        }
    except (TypeError, ValueError) as exc:
        raise PriceFileError(str(exc)) from None
    return PriceTable(region=str(document["region"]), read_on=str(document["read_on"]), **values)


def _price(raw: Any, where: str) -> Price:
    if not isinstance(raw, dict) or not isinstance(raw.get("usd"), int | float) or raw["usd"] < 0:
        raise PriceFileError(f"{where}: needs a non-negative number usd (and unit, source)")
    return Price(float(raw["usd"]), str(raw.get("unit", "")), str(raw.get("source", "")))


def price_file_document(table: PriceTable) -> dict[str, Any]:
    """``table`` as a price file (a starting point for another region's: change every figure)."""
    prices: dict[str, Any] = {}
    for name, value in vars(table).items():
        if isinstance(value, Price):
            prices[name] = {"usd": value.usd, "unit": value.unit, "source": value.source}
    prices["lambda_gb_second"] = {
        arch: {"usd": p.usd, "unit": p.unit, "source": p.source} for arch, p in table.lambda_gb_second.items()
    }
    return {"region": table.region, "read_on": table.read_on, "prices": prices}
