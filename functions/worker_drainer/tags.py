"""The drainer's state, kept on the ECS task itself as tags (so an agent can read it through its
task metadata endpoint): the tag schema, and how a task's tags read as a ladder state.

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
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from fleet_remediation.contract.naming import DRAINER_TAG_PREFIX, EXCLUDE_TAG
from worker_drainer.adapters.ecs_tasks import EcsTask, TaskProtection

TAG_PREFIX = DRAINER_TAG_PREFIX
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


class CordonProgress(StrEnum):
    STARTED = "started"
    COMPLETE = "complete"


def state_of(task: EcsTask) -> State:
    try:
        return State(task.tags.get(STATE_TAG, State.HEALTHY.value))
    except ValueError:
        return State.HEALTHY


def cause_of(task: EcsTask) -> Cause:
    """Marks written before causes were recorded came from VAD attribution (the only robot then)."""
    try:
        return Cause(task.tags.get(CAUSE_TAG, Cause.VAD.value))
    except ValueError:
        return Cause.VAD


def incident_of(task: EcsTask) -> str | None:
    """The incident that started the task's ladder (None: not marked, or marked before incidents)."""
    return task.tags.get(INCIDENT_TAG) or None


def incident_tag_value(incident_id: str) -> str:
    """The incident id as a tag value: unchanged when it fits (every id the functions make does);
    otherwise its allowed characters and a digest of the whole, so two ids never share a value."""
    if _TAG_VALUE.fullmatch(incident_id):
        return incident_id
    digest = hashlib.sha256(incident_id.encode()).hexdigest()[:12]
    kept = re.sub(r"[^A-Za-z0-9+\-=._:/@]", "-", incident_id)[: TAG_VALUE_LIMIT - len(digest) - 1]
    return f"{kept}.{digest}"


def cordon_complete(task: EcsTask) -> bool:
    """A cordon without the progress tag predates the saga and was written in one go."""
    return task.tags.get(CORDON_TAG, CordonProgress.COMPLETE.value) == CordonProgress.COMPLETE.value


def excluded(task: EcsTask) -> bool:
    return task.tags.get(EXCLUDE_TAG, "").strip().lower() == "true"


def _epoch_tag(task: EcsTask, key: str) -> datetime | None:
    raw = task.tags.get(key)
    try:
        return datetime.fromtimestamp(int(raw), tz=UTC) if raw else None
    except ValueError:
        return None


def since_of(task: EcsTask) -> datetime | None:
    return _epoch_tag(task, SINCE_TAG)


def deadline_of(task: EcsTask) -> datetime | None:
    return _epoch_tag(task, DEADLINE_TAG)


def cooldown_until(task: EcsTask) -> datetime | None:
    return _epoch_tag(task, COOLDOWN_TAG)


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
    if task.tags.get(PROTECTED_BEFORE_TAG) != "true":
        return ProtectionRestore(False, None, "it was not protected before")
    until = _epoch_tag(task, PROTECTED_UNTIL_TAG)
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
