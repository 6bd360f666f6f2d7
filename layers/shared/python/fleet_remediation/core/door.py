"""The door: what an EventBridge event must be before a function reads or changes anything.

A ``Door`` is built once per invocation (``Door.for_invocation``) from the function's own ARN, the
injected clock and the function's maximum event age per route. It reads an envelope strictly (JSON
types as sent: no number from a string, no boolean for a number, times as ISO 8601 text with a zone)
and admits it only from the route's source, in the function's own account and region, with a time
neither in the future beyond the clock skew nor older than the route's age. The routes
(``core.routing``) check their payloads on top.

Without a function ARN (a local run given no context) the account and region are unknown and every
EventBridge event is refused: the door fails closed. ``LocalLambdaContext``
(``livekit_fleet_remediation.offline.lambda_context``) carries the ARN of a configured account and
region for local runs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any, TypeVar

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from fleet_remediation.contract.events import EVENT_CLOCK_SKEW_SECONDS, EventAges
from fleet_remediation.contract.models import describe_validation_error, excerpt
from fleet_remediation.core.errors import InvalidEventError

FUNCTION_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):lambda:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):function:"
)
# EventBridge's and CloudWatch's times: "2026-09-15T17:40:00Z", "2026-09-15T17:40:00.000+0000".
ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T")
# PutEvents' own limits on the envelope's strings; an ARN is at most 1600 characters.
SOURCE_MAX_CHARS = 256
DETAIL_TYPE_MAX_CHARS = 128
RESOURCE_MAX_CHARS = 1600
MAX_RESOURCES = 10

DetailT = TypeVar("DetailT", bound=BaseModel)


class UntrustedEventError(InvalidEventError):
    """A well-formed event that does not come from, or no longer applies to, our deployment."""

    code = "UntrustedEvent"


def _iso_time(value: object) -> object:
    # JSON carries a time as text; a number (or a number in a string) would be read as a Unix time.
    # A datetime comes only from our own code building a model, never from a JSON event.
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and ISO_TIME.match(value):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            pass
    raise ValueError("must be an ISO 8601 time with a zone, e.g. 2026-09-15T17:40:00Z")


EventTime = Annotated[AwareDatetime, BeforeValidator(_iso_time)]


class Envelope(BaseModel):
    """An EventBridge event as delivered. Keys EventBridge may add are ignored, never read."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    version: str = Field(max_length=8)
    id: str = Field(min_length=1, max_length=128)
    detail_type: str = Field(alias="detail-type", max_length=DETAIL_TYPE_MAX_CHARS)
    source: str = Field(max_length=SOURCE_MAX_CHARS)
    account: str = Field(max_length=12)
    time: EventTime
    region: str = Field(max_length=32)
    resources: list[Annotated[str, Field(max_length=RESOURCE_MAX_CHARS)]] = Field(max_length=MAX_RESOURCES)
    detail: dict[str, Any]


def strict_json(value: Any, model: type[DetailT], what: str) -> DetailT:
    """``value`` validated as the JSON it arrived as, in pydantic's strict mode (no coercion)."""
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidEventError(f"malformed {what}: not JSON ({excerpt(str(exc))})") from exc
    try:
        return model.model_validate_json(text, strict=True)
    except ValidationError as exc:
        raise InvalidEventError(f"malformed {what}: {describe_validation_error(exc)}") from exc


def read_detail(envelope: Envelope, model: type[DetailT]) -> DetailT:
    return strict_json(envelope.detail, model, f"'{excerpt(envelope.detail_type)}' detail")


@dataclass(frozen=True)
class Door:
    """The function's own partition, account and region (``None`` when unknown), the run's ``now``
    and the maximum event age of each of the function's routes."""

    partition: str | None
    account: str | None
    region: str | None
    now: datetime
    max_event_age: EventAges
    clock_skew: timedelta = timedelta(seconds=EVENT_CLOCK_SKEW_SECONDS)

    @classmethod
    def for_invocation(cls, function_arn: str | None, now: datetime, max_event_age: EventAges) -> Door:
        """The door of one invocation: ``function_arn`` is ``context.invoked_function_arn``."""
        found = FUNCTION_ARN.match(function_arn or "")
        if found is None:
            return cls(None, None, None, now, max_event_age)
        return cls(found["partition"], found["account"], found["region"], now, max_event_age)

    def admit(self, event: Any, source: str, max_age_seconds: int) -> Envelope:
        """The event's envelope, read strictly and checked against its route and our deployment."""
        envelope = strict_json(event, Envelope, "EventBridge event")
        kind = f"a '{excerpt(envelope.detail_type)}' event"
        if self.account is None or self.region is None:
            raise UntrustedEventError(
                f"{kind} cannot be verified: without the function's ARN, its account and region are unknown"
            )
        if envelope.source != source:
            raise UntrustedEventError(f"{kind} from {excerpt(envelope.source)}, expected {source}")
        if envelope.account != self.account:
            raise UntrustedEventError(
                f"{kind} from account {excerpt(envelope.account)}: ours is {self.account}"
            )
        if envelope.region != self.region:
            raise UntrustedEventError(f"{kind} from region {excerpt(envelope.region)}, not {self.region}")
        self.check_time(f"{kind}'s time", envelope.time, max_age_seconds)
        return envelope

    def check_time(self, what: str, at: datetime, max_age_seconds: int | None = None) -> None:
        """``at`` is not in the future beyond the skew and, given an age, not older than it (and the skew)."""
        now, skew = self.now, self.clock_skew
        if at > now + skew:
            raise UntrustedEventError(f"{what} {at.isoformat()} is in the future (now {now.isoformat()})")
        if max_age_seconds is not None and at < now - timedelta(seconds=max_age_seconds) - skew:
            raise UntrustedEventError(
                f"stale: {what} {at.isoformat()} is over {timedelta(seconds=max_age_seconds)} old "
                f"(now {now.isoformat()})"
            )

    def arn(self, service: str, resource: str) -> str:
        """The ARN of ``resource`` of ``service`` in our account and region."""
        return f"arn:{self.partition}:{service}:{self.region}:{self.account}:{resource}"
