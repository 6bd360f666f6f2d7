"""An alarm's current state, read by a scheduled tick that acts while an incident stays open: the
drainer's while the VAD alarm stays in ALARM (it may attribute and start ladders: the transition
alone fires once, often before the worker's warnings reach the attribution's rate), the TTS
responder's while the TTS page stays in ALARM (it may name the worker once enough of its sessions
have failed: the first analysis, a minute after onset, often has too few).

CloudWatch DescribeAlarms through a client built from ``ALARM_STATE_READ`` (every call ends within
its budget); a failure is a typed ``AwsApiError``, which the caller reports and treats as "not known
to be in ALARM" (the tick then only advances the ladders in progress)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.contract.budgets import ALARM_STATE_READ
from fleet_remediation.core.errors import AwsApiError, aws_api_errors
from fleet_remediation.core.routing import AlarmStateChange


@dataclass(frozen=True)
class AlarmReading:
    """An alarm's state and when it last changed to that state."""

    value: str
    since: datetime

    def change(self, alarm_name: str) -> AlarmStateChange:
        """The state change this reading stands for (the transition that opened the current state):
        a tick during an ALARM belongs to that ALARM's incident and shares its once-keys."""
        return AlarmStateChange.model_validate(
            {"alarmName": alarm_name, "state": {"value": self.value, "timestamp": self.since}}
        )


class AlarmStates(Protocol):
    def current(self, alarm_name: str) -> AlarmReading | None:
        """The alarm's state, or ``None`` when no such alarm exists. Raises ``AwsApiError``."""
        ...


class CloudWatchAlarmStates:
    def __init__(self, client: Any | None = None) -> None:
        self._client = client or aws_client(ALARM_STATE_READ)

    def current(self, alarm_name: str) -> AlarmReading | None:
        # Alarm names are unique across both kinds: the pages are composite alarms, and a metric
        # alarm of the name (an older stack's) answers the same question.
        with aws_api_errors("CloudWatch DescribeAlarms", alarm_name):
            found = self._client.describe_alarms(
                AlarmNames=[alarm_name], AlarmTypes=["CompositeAlarm", "MetricAlarm"]
            )
        alarms = [*found.get("CompositeAlarms", []), *found.get("MetricAlarms", [])]
        if not alarms:
            return None
        alarm = alarms[0]
        # StateTransitionedTimestamp is when StateValue last changed; StateUpdatedTimestamp also
        # moves on a change of the evaluation state alone. Older answers carry only the latter.
        since = alarm.get("StateTransitionedTimestamp") or alarm.get("StateUpdatedTimestamp")
        if not isinstance(since, datetime):
            raise AwsApiError(
                "CloudWatch DescribeAlarms answered without the state's timestamp",
                aws_code="MalformedResponse",
                resource=alarm_name,
            )
        return AlarmReading(str(alarm.get("StateValue", "")), since)
