"""Puts the action events on EventBridge: one attempt per batch, never re-sent.

PutEvents can be neither deduplicated nor re-read, so a batch whose reply did not come back (a 5xx,
a reset, a timeout) is ``unknown`` and is not sent again; receivers drop duplicates by ``id``. Only
a batch the service provably refused (a 4xx or throttling answer, a connection that never opened)
is ``failed``; a failed entry inside an answered batch is counted as failed too.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, EndpointConnectionError

from fleet_remediation.adapters.aws_clients import aws_client, guard_side_effects
from fleet_remediation.contract.action_events import ACTION_EVENT_DETAIL_TYPE, ENTRIES_PER_PUT, ActionEvent
from fleet_remediation.contract.budgets import ACTION_EVENTS_PUT
from fleet_remediation.contract.naming import EVENT_BUS_NAME, EVENT_SOURCE
from fleet_remediation.core.announce import Announced


class EventBridgeActionEvents:
    def __init__(self, event_bus_name: str = EVENT_BUS_NAME, client: Any | None = None) -> None:
        self.event_bus_name = event_bus_name
        self._client = guard_side_effects(client) if client else aws_client(ACTION_EVENTS_PUT)

    def put(self, events: list[ActionEvent]) -> Announced:
        announced = Announced()
        for start in range(0, len(events), ENTRIES_PER_PUT):
            self._put_batch(events[start : start + ENTRIES_PER_PUT], announced)
        return announced

    def _put_batch(self, batch: list[ActionEvent], announced: Announced) -> None:
        entries = [self._entry(event) for event in batch]
        try:
            response = self._client.put_events(Entries=entries)
        except (EndpointConnectionError, ConnectTimeoutError) as exc:
            announced.failed += len(batch)
            announced.problems.append(f"not sent (no connection): {exc}")
            return
        except ClientError as exc:
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            code = exc.response.get("Error", {}).get("Code", "Unknown")
            # An answer without a status is no proof of a refusal: the batch may have landed.
            refused = (status is not None and status < 500) or "Throttl" in code
            if refused:
                announced.failed += len(batch)
            else:
                announced.unknown += len(batch)
            announced.problems.append(f"{'refused' if refused else 'may have landed'}: {code}")
            return
        except BotoCoreError as exc:
            announced.unknown += len(batch)
            announced.problems.append(f"may have landed (no reply): {exc}")
            return
        failed = int(response.get("FailedEntryCount", 0))
        announced.failed += failed
        announced.sent += len(batch) - failed

    def _entry(self, event: ActionEvent) -> dict[str, Any]:
        return {
            "Source": EVENT_SOURCE,
            "DetailType": ACTION_EVENT_DETAIL_TYPE,
            "Detail": json.dumps(event.model_dump(mode="json")),
            "EventBusName": self.event_bus_name,
            "Resources": [],
        }
