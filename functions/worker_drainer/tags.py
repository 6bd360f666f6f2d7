"""The drainer's state, kept on the ECS task itself as tags (so an agent can read it through its
task metadata endpoint): the tag schema, and how a task's tags read as a ladder state."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum

from fleet_remediation.contract.naming import DRAINER_TAG_PREFIX
from worker_drainer.adapters.ecs_tasks import EcsTask

TAG_PREFIX = DRAINER_TAG_PREFIX
STATE_TAG = f"{TAG_PREFIX}state"
SINCE_TAG = f"{TAG_PREFIX}since"
DEADLINE_TAG = f"{TAG_PREFIX}deadline"
REASON_TAG = f"{TAG_PREFIX}reason"
CAPACITY_TAG = f"{TAG_PREFIX}capacity"
PROTECTED_BEFORE_TAG = f"{TAG_PREFIX}protected-before"
COOLDOWN_TAG = f"{TAG_PREFIX}cooldown-until"
STATE_TAGS = (STATE_TAG, SINCE_TAG, DEADLINE_TAG, REASON_TAG, CAPACITY_TAG, PROTECTED_BEFORE_TAG)


class State(StrEnum):
    HEALTHY = "healthy"
    REAPED = "reaped"
    DRAINING = "draining"


def state_of(task: EcsTask) -> State:
    try:
        return State(task.tags.get(STATE_TAG, State.HEALTHY.value))
    except ValueError:
        return State.HEALTHY


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


def cordon_tags(
    task: EcsTask, now: datetime, reason: str, capacity: str, protected_before: bool, drain_seconds: float
) -> dict[str, str]:
    return {
        STATE_TAG: State.DRAINING.value,
        SINCE_TAG: str(int(now.timestamp())),
        DEADLINE_TAG: str(int(now.timestamp() + drain_seconds)),
        REASON_TAG: tag_value(reason),
        CAPACITY_TAG: capacity,
        PROTECTED_BEFORE_TAG: "true" if protected_before else "false",
    }


def tag_value(text: str) -> str:
    """ECS tag values: at most 256 characters of letters, digits, spaces and + - = . _ : / @."""
    allowed = "".join(c if c.isalnum() or c in " +-=._:/@" else " " for c in text)
    return " ".join(allowed.split())[:256]
