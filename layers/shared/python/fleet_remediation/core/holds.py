"""Why new disruption waits, for the functions that start it (the reaper, the drainer): outside the
disruption window, or while an agent service deploys. A deployment state that cannot be read holds
too: unknown is not "no deployment"."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from fleet_remediation.contract.disruption_window import DisruptionWindow, outside_window
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.core.notes import Noted


def hold_reason(
    window: DisruptionWindow | None,
    now: datetime,
    deploying: Callable[[], str | None] | None,
    noted: Noted,
) -> str | None:
    """The reason to hold, or None; ``deploying`` is read only inside the window (an unreadable
    answer is a report error, and a hold)."""
    closed = outside_window(window, now)
    if closed is not None or deploying is None:
        return closed
    try:
        return deploying()
    except RemediationError as exc:
        noted.error(exc)
        return f"whether a deployment is in progress is unknown ({exc.code})"
