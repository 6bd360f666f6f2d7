"""Whether a group event holds for an agent service: a failure shared by tasks with something in
common (a provider region, a zone, an image), during which nobody is drained by a chat request.

The group-aware detection records a group event in the service's ledger (``hold_group_event``,
``adapters/ledger.py``); the drainer asks ``group_event_refusal`` before a chat drain. Without a
record there is no group event.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from fleet_remediation.core.errors import RemediationError


class GroupEvents(Protocol):
    def group_event(self, now: datetime) -> str | None:
        """The group an unexpired group event names (None: no group event)."""
        ...


def group_event_refusal(events: GroupEvents, service: str, now: datetime) -> str | None:
    """Why a chat drain must not run now (None: it may). An unreadable record refuses it too."""
    try:
        group = events.group_event(now)
    except RemediationError as exc:
        return f"whether a group event holds for {service} is unknown ({exc.code}): no chat drain"
    if group is None:
        return None
    return f"a group event holds for {service} ({group}): nobody is drained from chat until it ends"
