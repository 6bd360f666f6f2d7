"""The drainer's journal keys (pure): one step of one invocation, and a step begun whose outcome is
not recorded yet (an open intent, ``adapters/intents.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

AUDIT_RETENTION_SECONDS = 90 * 24 * 3600
INTENDED = "intended"


@dataclass(frozen=True)
class AuditKey:
    """One step of one invocation: its intent and its outcome are written to the same item."""

    invocation: str
    at: datetime
    step: int

    @property
    def sort_key(self) -> str:
        return f"audit#{self.at.isoformat()}#{self.invocation}#{self.step:03d}"


@dataclass(frozen=True)
class OpenIntent:
    """A step begun (its audit entry: action, task ARN, reason, cause, incident) and not closed."""

    task_id: str
    key: AuditKey
    entry: Mapping[str, str] = field(default_factory=dict)

    @property
    def action(self) -> str:
        return self.entry.get("action", "")

    @property
    def task_arn(self) -> str:
        return self.entry.get("task_arn", "")


@dataclass(frozen=True)
class TagWrite:
    """Tags the drainer set on (and removed from) a task at ``at``: what ECS will show once its
    eventually consistent reads catch up (``adapters/tags_as_written.py``)."""

    task_id: str
    at: datetime
    set: Mapping[str, str] = field(default_factory=dict)
    removed: tuple[str, ...] = ()

    def applied_to(self, tags: Mapping[str, str]) -> dict[str, str]:
        kept = {key: value for key, value in tags.items() if key not in self.removed}
        return kept | dict(self.set)

    def then(self, later: TagWrite) -> TagWrite:
        """This write followed by ``later`` on the same task, as one write."""
        removed = tuple(key for key in self.removed if key not in later.set) + later.removed
        kept = {key: value for key, value in self.set.items() if key not in later.removed}
        return TagWrite(self.task_id, later.at, kept | dict(later.set), tuple(dict.fromkeys(removed)))
