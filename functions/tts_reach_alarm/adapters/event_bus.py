"""EventBridge adapter: puts the suspect-worker event on the bus for the worker drainer."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Protocol

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.contract.budgets import SUSPECT_EVENT_PUT
from fleet_remediation.contract.events import SuspectWorkerDetail
from fleet_remediation.contract.naming import EVENT_SOURCE, SUSPECT_WORKER_DETAIL_TYPE
from fleet_remediation.core.errors import AwsApiError, aws_api_errors

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient


class EventPublisher(Protocol):
    def put_suspect_worker(self, detail: SuspectWorkerDetail) -> str: ...


class EventBridgePublisher:
    def __init__(self, event_bus_name: str, client: EventBridgeClient | None = None) -> None:
        self.event_bus_name = event_bus_name
        self._client = client or aws_client(SUSPECT_EVENT_PUT)

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
