"""The drainer's state, kept on the ECS task itself as tags (so an agent can read it through its
task metadata endpoint): the tag schema, and how a task's tags read as a ladder state (``TaskMarks``,
read once per snapshot and once per step's re-check of its task).

A cordon writes, in one TagResource call, everything needed to finish or undo it later: the state,
when and why (``cause``: manual, VAD attribution or TTS suspect), the drain deadline, how capacity
is replaced, the scale-in protection it found (and that protection's expiry), and the saga's
progress (``cordon``: started, then complete once protection and capacity are settled).
The ladder's first rung (reap or cordon) also records the incident that started it (``incident``),
so the messages of its later steps (stop, undo) thread under that incident.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TypeVar

from fleet_remediation.contract.naming import DRAINER_TAG_PREFIX, EXCLUDE_TAG
from fleet_remediation.contract.policies import CapacityMode
from worker_drainer.adapters.ecs_tasks import EcsTask, TaskProtection

TAG_PREFIX = DRAINER_TAG_PREFIX
# StopTask deletes a task's tags; its stop reason, which ECS keeps on the stopped task for about an
# hour, says that the drainer stopped it.
STOP_REASON_PREFIX = "livekit-drainer: "
STATE_TAG = f"{TAG_PREFIX}state"
SINCE_TAG = f"{TAG_PREFIX}since"
DEADLINE_TAG = f"{TAG_PREFIX}deadline"
REASON_TAG = f"{TAG_PREFIX}reason"
CAUSE_TAG = f"{TAG_PREFIX}cause"
CORDON_TAG = f"{TAG_PREFIX}cordon"
CAPACITY_TAG = f"{TAG_PREFIX}capacity"
PROTECTED_BEFORE_TAG = f"{TAG_PREFIX}protected-before"
PROTECTED_UNTIL_TAG = f"{TAG_PREFIX}protected-until"
COOLDOWN_TAG = f"{TAG_PREFIX}cooldown-until"
INCIDENT_TAG = f"{TAG_PREFIX}incident"
STATE_TAGS = (
    STATE_TAG,
    INCIDENT_TAG,
    SINCE_TAG,
    DEADLINE_TAG,
    REASON_TAG,
    CAUSE_TAG,
    CORDON_TAG,
    CAPACITY_TAG,
    PROTECTED_BEFORE_TAG,
    PROTECTED_UNTIL_TAG,
)
# Every key the drainer tags or untags: its IAM policy allows TagResource/UntagResource for these keys
# only, so it can never set or remove EXCLUDE_TAG, the ECS managed tags or anyone else's tags.
WRITTEN_TAGS = (*STATE_TAGS, COOLDOWN_TAG)
# CAPACITY_TAG when raising the desired count failed for sure: the service replaces the task on stop.
NO_EXTRA_CAPACITY = "none"
# ECS tag values: at most 256 characters of letters, digits, spaces and + - = . _ : / @.
TAG_VALUE_LIMIT = 256
_TAG_VALUE = re.compile(r"[A-Za-z0-9+\-=._:/@]{1,256}")
# UpdateTaskProtection accepts expiresInMinutes from 1 to 2,880 (48 hours).
PROTECTION_MAX_MINUTES = 2880


class State(StrEnum):
    HEALTHY = "healthy"
    REAPED = "reaped"
    DRAINING = "draining"


class Cause(StrEnum):
    """Why a task was marked; an automatic undo needs evidence for this same cause."""

    MANUAL = "manual"
    VAD = "vad"
    TTS_SUSPECT = "tts-suspect"


_Value = TypeVar("_Value", bound=StrEnum)


class CordonProgress(StrEnum):
    STARTED = "started"
    COMPLETE = "complete"


@dataclass(frozen=True)
class TaskMarks:
    """A task's drainer tags read once, typed: what the ladder, the executor, the messages and the
    accounting decide on. Unreadable values read as absent (a healthy, unmarked task)."""

    state: State = State.HEALTHY
    # A mark without a cause is VAD attribution's, the first robot's.
    cause: Cause = Cause.VAD
    # The incident that started the task's ladder (None: not marked, or marked before incidents).
    incident: str | None = None
    since: datetime | None = None
    deadline: datetime | None = None
    # A cordon without the progress tag was written in one go; an unreadable one is finished again.
    cordon: CordonProgress = CordonProgress.COMPLETE
    capacity: str | None = None
    protected_before: bool = False
    protected_until: datetime | None = None
    cooldown_until: datetime | None = None
    excluded: bool = False

    @classmethod
    def read(cls, tags: Mapping[str, str]) -> TaskMarks:
        return cls(
            state=_enum(State, tags.get(STATE_TAG), State.HEALTHY),
            cause=_enum(Cause, tags.get(CAUSE_TAG), Cause.VAD),
            incident=tags.get(INCIDENT_TAG) or None,
            since=_epoch_value(tags.get(SINCE_TAG)),
            deadline=_epoch_value(tags.get(DEADLINE_TAG)),
            cordon=_enum(CordonProgress, tags.get(CORDON_TAG, "complete"), CordonProgress.STARTED),
            capacity=tags.get(CAPACITY_TAG),
            protected_before=tags.get(PROTECTED_BEFORE_TAG) == "true",
            protected_until=_epoch_value(tags.get(PROTECTED_UNTIL_TAG)),
            cooldown_until=_epoch_value(tags.get(COOLDOWN_TAG)),
            excluded=tags.get(EXCLUDE_TAG, "").strip().lower() == "true",
        )

    @property
    def marked(self) -> bool:
        return self.state is not State.HEALTHY

    @property
    def cordon_complete(self) -> bool:
        return self.cordon is CordonProgress.COMPLETE

    @property
    def raised_capacity(self) -> bool:
        """Its cordon raised the service's desired count (capacity mode desired-count)."""
        return self.capacity == CapacityMode.DESIRED_COUNT.value


def marks_of(tasks: Iterable[EcsTask]) -> dict[str, TaskMarks]:
    return {task.task_id: TaskMarks.read(task.tags) for task in tasks}


def _enum(kind: type[_Value], raw: str | None, absent: _Value) -> _Value:
    try:
        return kind(raw) if raw is not None else absent
    except ValueError:
        return absent


def _epoch_value(raw: str | None) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(raw), tz=UTC) if raw else None
    except (ValueError, OverflowError, OSError):  # not a number, or beyond the platform's time range
        return None


def incident_tag_value(incident_id: str) -> str:
    """The incident id as a tag value: unchanged when it fits (every id the functions make does);
    otherwise its allowed characters and a digest of the whole, so two ids never share a value."""
    if _TAG_VALUE.fullmatch(incident_id):
        return incident_id
    digest = hashlib.sha256(incident_id.encode()).hexdigest()[:12]
    kept = re.sub(r"[^A-Za-z0-9+\-=._:/@]", "-", incident_id)[: TAG_VALUE_LIMIT - len(digest) - 1]
    return f"{kept}.{digest}"


def _epoch(moment: datetime) -> str:
    return str(int(moment.timestamp()))


def cordon_tags(
    now: datetime,
    reason: str,
    cause: Cause,
    capacity: str,
    protection: TaskProtection,
    drain_seconds: float,
    incident_id: str,
) -> dict[str, str]:
    tags = {
        STATE_TAG: State.DRAINING.value,
        INCIDENT_TAG: incident_tag_value(incident_id),
        SINCE_TAG: _epoch(now),
        DEADLINE_TAG: str(int(now.timestamp() + drain_seconds)),
        REASON_TAG: tag_value(reason),
        CAUSE_TAG: cause.value,
        CORDON_TAG: CordonProgress.STARTED.value,
        CAPACITY_TAG: capacity,
        PROTECTED_BEFORE_TAG: "true" if protection.enabled else "false",
    }
    if protection.enabled and protection.expires_at is not None:
        tags[PROTECTED_UNTIL_TAG] = _epoch(protection.expires_at)
    return tags


def reaped_tags(now: datetime, cause: Cause, incident_id: str) -> dict[str, str]:
    return {
        STATE_TAG: State.REAPED.value,
        SINCE_TAG: _epoch(now),
        CAUSE_TAG: cause.value,
        INCIDENT_TAG: incident_tag_value(incident_id),
    }


@dataclass(frozen=True)
class ProtectionRestore:
    """What undo does about scale-in protection: restore it (for ``minutes``; None: ECS's default,
    when the original expiry is unknown) or not, and why."""

    restore: bool
    minutes: int | None
    note: str


def protection_to_restore(task: EcsTask, now: datetime) -> ProtectionRestore:
    """The task's ORIGINAL protection, not a fresh default: the same expiry it had at the cordon."""
    marks = TaskMarks.read(task.tags)
    if not marks.protected_before:
        return ProtectionRestore(False, None, "it was not protected before")
    until = marks.protected_until
    if until is None:
        return ProtectionRestore(True, None, "protection restored (original expiry unknown: ECS default)")
    if until <= now:
        return ProtectionRestore(False, None, f"protection left off: it expired at {until.isoformat()}")
    minutes = min(PROTECTION_MAX_MINUTES, math.ceil((until - now).total_seconds() / 60))
    return ProtectionRestore(True, minutes, f"protection restored until {until.isoformat()}")


def tag_value(text: str) -> str:
    """Free text (a reason) as a tag value: other characters become spaces."""
    allowed = "".join(c if c.isalnum() or c in " +-=._:/@" else " " for c in text)
    return " ".join(allowed.split())[:TAG_VALUE_LIMIT]
