"""The suspect-worker route: the event our TTS responder puts on the bus, checked at the door.

Anyone allowed ``events:PutEvents`` on the bus can send one, so beyond the envelope (our source,
account and region, a fresh time, no resources) its detail must be what our own service's
responder would send: our environment, our agent service (another service's drainer refuses it
with ``OtherServiceEventError``), that service's TTS-reach alarm, a time-zoned window that ended
recently, a p-value below the configured alpha, and a log stream that is the named task's own
stream. Whether that task is still RUNNING needs a read: the drainer checks it after the door.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fleet_remediation.contract.events import ECS_TASK_ID_PATTERN, SuspectWorkerDetail
from fleet_remediation.contract.models import excerpt
from fleet_remediation.contract.naming import EVENT_SOURCE, SUSPECT_WORKER_DETAIL_TYPE
from fleet_remediation.core.door import Door, UntrustedEventError, read_detail
from fleet_remediation.core.report_model import Trigger, TriggerKind
from fleet_remediation.core.routing import EventBridgeRoute, Routed

TASK_ID = re.compile(rf"^(?:{ECS_TASK_ID_PATTERN})$")


class OtherServiceEventError(UntrustedEventError):
    """A suspect-worker event for another agent service of our environment: its task is not ours."""

    code = "OtherAgentService"


@dataclass(frozen=True)
class SuspectExpectations:
    environment: str
    agent_service: str
    alarm_name: str
    alpha: float
    log_stream_for: Callable[[str], str]


class SuspectWorkerRoute(EventBridgeRoute):
    detail_type = SUSPECT_WORKER_DETAIL_TYPE

    def __init__(self, expect: SuspectExpectations) -> None:
        self.expect = expect

    def parse(self, event: Any, door: Door) -> Routed[Any]:
        max_age = door.max_event_age.suspect_worker_seconds
        envelope = door.admit(event, EVENT_SOURCE, max_age)
        if envelope.resources:
            raise UntrustedEventError(
                f"a suspect-worker event names no resources, not {excerpt(envelope.resources)}"
            )
        suspect = read_detail(envelope, SuspectWorkerDetail)
        check_suspect(suspect, self.expect, door)
        trigger = Trigger(
            kind=TriggerKind.SUSPECT_WORKER,
            source=suspect.alarm_name,
            detail={"log_stream": suspect.log_stream, "task_id": suspect.task_id, "p_value": suspect.p_value},
        )
        return Routed(trigger, suspect=suspect)


def check_suspect(detail: SuspectWorkerDetail, expect: SuspectExpectations, door: Door) -> None:
    """Everything checkable before reading anything; raises ``UntrustedEventError``."""

    def reject(why: str) -> UntrustedEventError:
        return UntrustedEventError(f"suspect-worker event refused: {why}", resource=excerpt(detail.task_id))

    if detail.environment != expect.environment:
        raise reject(f"environment {excerpt(detail.environment)!r} is not ours ({expect.environment!r})")
    if detail.agent_service != expect.agent_service:
        raise OtherServiceEventError(
            f"suspect-worker event refused: it names agent service {excerpt(detail.agent_service)!r}, "
            f"this drainer serves {expect.agent_service!r}",
            resource=excerpt(detail.task_id),
        )
    if detail.alarm_name != expect.alarm_name:
        raise reject(
            f"alarm {excerpt(detail.alarm_name)!r} is not our TTS-reach alarm ({expect.alarm_name!r})"
        )
    start, end = detail.window.start, detail.window.end
    if start.tzinfo is None or end.tzinfo is None or start >= end:
        raise reject("its window is not a time-zoned interval (start before end)")
    try:
        door.check_time("its window's end", end, door.max_event_age.suspect_worker_seconds)
    except UntrustedEventError as exc:
        raise reject(exc.message) from exc
    if not detail.p_value < expect.alpha:
        raise reject(f"p={detail.p_value:g} is not below alpha {expect.alpha:g}")
    if not TASK_ID.fullmatch(detail.task_id):
        raise reject(f"task id {excerpt(detail.task_id)!r} is not an ECS task id")
    if detail.log_stream != expect.log_stream_for(detail.task_id):
        raise reject(f"log stream {excerpt(detail.log_stream)!r} is not task {detail.task_id}'s stream")
