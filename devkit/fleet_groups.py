"""The group families of the count simulator (issue 27): failures shared by the tasks of one group
the product can see, and new tasks warming up. Each family picks its tasks, their groups (zone,
task-definition revision, TTS endpoint, start) and when each of them fails.

- ``az-outage``: the tasks of one of three availability zones (a third of the fleet) time out;
- ``endpoint-outage-10`` / ``-30``: the tasks whose TTS endpoint fails (10 % / 30 % of them);
- ``bad-revision-10`` / ``-30`` / ``-50``: a bad task-definition revision rolled out to that share;
- ``spreading``: a 30 % endpoint group whose tasks start failing one by one over 10 minutes;
- ``warm-up``: 10 % of the tasks are new at the onset: their first 5 minutes' first frames come
  late (after the timeout line), then all is well;
- ``mixed-revisions``: half the fleet on a new, healthy revision (healthy).

No task of these families should be cordoned: every failure is shared, every late frame plays.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np

GROUP_FAILURES = (
    "az-outage",
    "endpoint-outage-10",
    "endpoint-outage-30",
    "bad-revision-10",
    "bad-revision-30",
    "bad-revision-50",
    "spreading",
)
GROUP_HEALTHY = ("warm-up", "mixed-revisions")
GROUP_FAMILIES = GROUP_FAILURES + GROUP_HEALTHY
ZONES = ("eu-west-1a", "eu-west-1b", "eu-west-1c")
SPREAD_SECONDS = 600.0
WARM_UP_SECONDS = 300.0
EPOCH = datetime(2026, 1, 5, tzinfo=UTC)


@dataclass
class Groups:
    """Per task: its zone, revision, TTS endpoint and start; ``onset`` the second each affected
    task starts failing (inf: never); ``warming`` the tasks that are new at ``start``."""

    zone: list[str]
    revision: list[str]
    endpoint: list[str]
    started_seconds: np.ndarray
    onset: np.ndarray
    warming: np.ndarray

    def failing(self, at: float, end: float) -> np.ndarray:
        return (self.onset <= at) & (at < end)

    def warming_up(self, at: float) -> np.ndarray:
        return self.warming & (self.started_seconds <= at) & (at < self.started_seconds + WARM_UP_SECONDS)


def groups_for(family: str, tasks: int, start: float, rng: np.random.Generator) -> Groups:
    """The groups of a fleet of ``tasks`` for ``family`` (any family: the others get none failing)."""
    order = rng.permutation(tasks)
    zone = [ZONES[i % len(ZONES)] for i in range(tasks)]
    revision, endpoint = ["agent:7"] * tasks, ["tts/eu-west-1"] * tasks
    onset = np.full(tasks, np.inf)
    warming = np.zeros(tasks, dtype=bool)
    started = np.full(tasks, -86_400.0)

    def share(percent: int) -> np.ndarray:
        return order[: max(2, round(tasks * percent / 100))]

    if family == "az-outage":
        onset[[i for i in range(tasks) if zone[i] == ZONES[0]]] = start
    elif family.startswith("endpoint-outage-") or family == "spreading":
        chosen = share(30 if family == "spreading" else int(family.rsplit("-", 1)[1]))
        for i in chosen:
            endpoint[i] = "tts/us-east-1"
        steps = np.linspace(0, SPREAD_SECONDS, chosen.size) if family == "spreading" else 0.0
        onset[chosen] = start + steps
    elif family.startswith("bad-revision-") or family == "mixed-revisions":
        chosen = share(50 if family == "mixed-revisions" else int(family.rsplit("-", 1)[1]))
        for i in chosen:
            revision[i] = "agent:8"
        if family != "mixed-revisions":
            onset[chosen] = start
    elif family == "warm-up":
        chosen = share(10)
        warming[chosen] = True
        started[chosen] = start
    return Groups(zone, revision, endpoint, started, onset, warming)


def start_time(seconds: float) -> datetime:
    return EPOCH + timedelta(seconds=seconds)
