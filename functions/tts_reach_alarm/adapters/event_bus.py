"""EventBridge adapter: puts the suspect-worker event on the bus for the worker drainer.

PutEvents can be neither deduplicated nor read back: an attempt that may have landed (a 5xx, a
reset, a timeout) is never repeated, by botocore (``guard_side_effects``) or by us
(``put_at_most_once``). A receiver tells a copy by the detail's ``incident_id`` and ``task_id``:
one suspect-worker event per task per incident."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Protocol

from fleet_remediation.adapters.aws_clients import aws_client, guard_side_effects
from fleet_remediation.contract.budgets import SUSPECT_EVENT_PUT
from fleet_remediation.contract.events import SuspectWorkerDetail
from fleet_remediation.contract.naming import EVENT_SOURCE, SUSPECT_WORKER_DETAIL_TYPE
from fleet_remediation.core.errors import AwsApiError, aws_api_errors

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient


class EventPublisher(Protocol):
    def put_suspect_worker(self, detail: SuspectWorkerDetail) -> str: ...


def put_at_most_once(events: EventPublisher, detail: SuspectWorkerDetail) -> dict[str, Any]:
    """The once-guarded put: an event that may have landed is a result (``unknown``), not an error,
    so its once-record is kept and Lambda's retry of the invocation does not put it again."""
    try:
        return {"event_id": events.put_suspect_worker(detail)}
    except AwsApiError as exc:
        if not exc.unknown:
            raise
        return {"event_id": None, "unknown": f"{exc.message}; not sent again"}


class EventBridgePublisher:
    def __init__(self, event_bus_name: str, client: EventBridgeClient | None = None) -> None:
        self.event_bus_name = event_bus_name
        self._client = guard_side_effects(client) if client else aws_client(SUSPECT_EVENT_PUT)

    def put_suspect_worker(self, detail: SuspectWorkerDetail) -> str:
        entry: Any = {
            "Source": EVENT_SOURCE,
            "DetailType": SUSPECT_WORKER_DETAIL_TYPE,
            "Detail": json.dumps(detail.model_dump(mode="json")),
            "EventBusName": self.event_bus_name,
        }
        with aws_api_errors("EventBridge PutEvents", self.event_bus_name):
            response = self._client.put_events(Entries=[entry])
        result = response["Entries"][0]
        if response.get("FailedEntryCount", 0) or "EventId" not in result:
            code = result.get("ErrorCode", "Unknown")
            raise AwsApiError(
                f"EventBridge rejected the suspect-worker event: {code} {result.get('ErrorMessage', '')}",
                aws_code=code,
                resource=self.event_bus_name,
            )
        return result["EventId"]
