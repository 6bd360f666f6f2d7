"""The EventBridge events that invoke the functions in AWS, as EventBridge delivers them."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from fleet_remediation.contract.events import EventAges
from fleet_remediation.core.door import Door


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def schedule_event(
    rule_name: str, *, account: str, region: str, now: datetime | None = None
) -> dict[str, Any]:
    """What an EventBridge schedule rule delivers to its target."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": account,
        "time": _iso(now or datetime.now(UTC)),
        "region": region,
        "resources": [f"arn:aws:events:{region}:{account}:rule/{rule_name}"],
        "detail": {},
    }


def alarm_state_change(
    alarm_name: str, *, account: str, region: str, state: str = "ALARM", now: datetime | None = None
) -> dict[str, Any]:
    """CloudWatch's "CloudWatch Alarm State Change" event for ``alarm_name`` entering ``state``."""
    at = now or datetime.now(UTC)
    previous = "OK" if state == "ALARM" else "ALARM"
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch",
        "account": account,
        "time": _iso(at),
        "region": region,
        "resources": [f"arn:aws:cloudwatch:{region}:{account}:alarm:{alarm_name}"],
        "detail": {
            "alarmName": alarm_name,
            "state": {
                "value": state,
                "reason": f"Threshold Crossed: 3 out of the last 5 datapoints ({state})",
                "reasonData": json.dumps({"version": "1.0", "recentDatapoints": [0.5, 0.4, 0.3]}),
                "timestamp": at.isoformat(timespec="milliseconds"),
            },
            "previousState": {
                "value": previous,
                "reason": "Threshold Crossed",
                "timestamp": (at - timedelta(minutes=30)).isoformat(timespec="milliseconds"),
            },
            "configuration": {"description": f"{alarm_name} (local smoke test)"},
        },
    }


def door_on_arrival(event: dict[str, Any], ages: EventAges, function_arn: str, otherwise: datetime) -> Door:
    """The door of a run that takes ``event`` the moment it was sent (at its ``time``; a manual
    event, which has none, at ``otherwise``): unit tests route fixed events without a clock."""
    at = datetime.fromisoformat(event["time"]) if "time" in event else otherwise
    return Door.for_invocation(function_arn, at, ages)
