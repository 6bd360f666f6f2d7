"""Trust no event (pure): what a suspect-worker event and a manual task reference must satisfy
before the drainer acts on them. A rejection is a typed error in the one report, with no side effect.

Anyone allowed ``events:PutEvents`` on the bus can send a suspect-worker event, so its contents are
checked against what our own responder would send: our environment, our TTS-reach alarm, a fresh
window, a p-value below the configured alpha, and a log stream that is the named task's own stream.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from fleet_remediation.contract.events import (
    SUSPECT_EVENT_MAX_AGE_SECONDS,
    SUSPECT_EVENT_MAX_SKEW_SECONDS,
    SuspectWorkerDetail,
)
from fleet_remediation.core.errors import InvalidEventError
from worker_drainer.adapters.ecs_model import EcsTask

SUSPECT_EVENT_MAX_AGE = timedelta(seconds=SUSPECT_EVENT_MAX_AGE_SECONDS)
SUSPECT_EVENT_MAX_SKEW = timedelta(seconds=SUSPECT_EVENT_MAX_SKEW_SECONDS)
# ECS task ids: 32 hex digits (a UUID without dashes on current ARNs; with dashes on older ones).
_TASK_ID = r"[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
TASK_ID = re.compile(rf"^(?:{_TASK_ID})$")
TASK_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):ecs:(?P<region>[a-z]{2}(?:-[a-z]+)+-\d):(?P<account>\d{12}):"
    rf"task/(?:(?P<cluster>[A-Za-z0-9_-]{{1,255}})/)?(?P<id>{_TASK_ID})$"
)
LAMBDA_ARN = re.compile(r"^arn:[a-z-]+:lambda:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):function:")


class UntrustedEventError(InvalidEventError):
    """A well-formed event that does not come from, or no longer applies to, our deployment."""

    code = "UntrustedEvent"


@dataclass(frozen=True)
class SuspectExpectations:
    environment: str
    alarm_name: str
    alpha: float
    log_stream_for: Callable[[str], str]


def validate_suspect(detail: SuspectWorkerDetail, expect: SuspectExpectations, now: datetime) -> None:
    """Everything checkable before reading anything; raises ``UntrustedEventError``."""

    def reject(why: str) -> UntrustedEventError:
        return UntrustedEventError(f"suspect-worker event refused: {why}", resource=detail.task_id)

    if detail.environment != expect.environment:
        raise reject(f"environment {detail.environment!r} is not ours ({expect.environment!r})")
    if detail.alarm_name != expect.alarm_name:
        raise reject(f"alarm {detail.alarm_name!r} is not our TTS-reach alarm ({expect.alarm_name!r})")
    end = detail.window.end
    if end.tzinfo is None or detail.window.start >= end:
        raise reject("its window is not a time-zoned interval (start before end)")
    if end < now - SUSPECT_EVENT_MAX_AGE:
        raise reject(f"stale: its window ended at {end.isoformat()}, over {SUSPECT_EVENT_MAX_AGE} ago")
    if end > now + SUSPECT_EVENT_MAX_SKEW:
        raise reject(f"its window ends in the future ({end.isoformat()})")
    if not detail.p_value < expect.alpha:
        raise reject(f"p={detail.p_value:g} is not below alpha {expect.alpha:g}")
    if not TASK_ID.fullmatch(detail.task_id):
        raise reject(f"task id {detail.task_id!r} is not an ECS task id")
    if detail.log_stream != expect.log_stream_for(detail.task_id):
        raise reject(f"log stream {detail.log_stream!r} is not task {detail.task_id}'s stream")


def validate_suspect_running(detail: SuspectWorkerDetail, tasks: Sequence[EcsTask], service: str) -> None:
    if detail.task_id not in {t.task_id for t in tasks}:
        raise UntrustedEventError(
            f"suspect-worker event refused: {detail.task_id} is not a RUNNING task of service {service}",
            resource=detail.task_id,
        )


@dataclass(frozen=True)
class TaskReference:
    """A manual ``task``: an id, or an ARN (with the account, region and cluster it names)."""

    task_id: str
    arn: str | None = None
    account: str | None = None
    region: str | None = None
    cluster: str | None = None


def parse_task_reference(raw: str) -> TaskReference:
    """Raises ``ValueError`` (the manual event's validator turns it into ``InvalidEvent``)."""
    if TASK_ID.fullmatch(raw):
        return TaskReference(raw)
    found = TASK_ARN.fullmatch(raw)
    if found is None:
        raise ValueError(f"{raw[:120]!r} is neither an ECS task id nor an ECS task ARN")
    return TaskReference(found["id"], raw, found["account"], found["region"], found["cluster"])


@dataclass(frozen=True)
class ServiceIdentity:
    """Where our service lives; ``account``/``region`` come from the function's own ARN (unknown
    when run outside Lambda)."""

    cluster: str
    account: str | None = None
    region: str | None = None

    @classmethod
    def of(cls, cluster: str, function_arn: str | None) -> ServiceIdentity:
        found = LAMBDA_ARN.match(function_arn or "")
        return cls(cluster, found["account"], found["region"]) if found else cls(cluster)


def check_manual_target(ref: TaskReference, ours: ServiceIdentity, tasks: Sequence[EcsTask]) -> None:
    """An ARN must name our account, region and cluster, and be the ARN of our task with that id."""
    if ref.arn is None:
        return
    named = {"account": ref.account, "region": ref.region, "cluster": ref.cluster}
    expected = {"account": ours.account, "region": ours.region, "cluster": ours.cluster}
    wrong = [
        f"{part} {named[part]!r} (ours: {expected[part]!r})"
        for part in named
        if named[part] is not None and expected[part] is not None and named[part] != expected[part]
    ]
    same_id = next((t for t in tasks if t.task_id == ref.task_id), None)
    if not wrong and same_id is not None and same_id.arn != ref.arn:
        wrong.append(f"ARN differs from our task's {same_id.arn}")
    if wrong:
        raise UntrustedEventError(f"task {ref.arn} is not ours: {'; '.join(wrong)}", resource=ref.task_id)
