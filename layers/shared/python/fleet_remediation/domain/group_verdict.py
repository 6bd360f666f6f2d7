"""Groups before workers: is a failure shared by tasks that have something in common the product can
see (issue 27)? ECS tells each task's availability zone, task-definition revision and start time;
the agent package's lines tell the TTS endpoint its responses used.

The test, per dimension that splits the fleet (at least two values among the tasks): with A failing
tasks among N, of which G share the value v, the count of failing tasks in v is hypergeometric
under "failures are independent of v"; the group's p-value is P(X >= failing in v). A group holding
at least ``group_min_tasks`` failing tasks with p <= ``group_alpha`` is a group event. The level is
not corrected for the number of groups tried: an error here holds a drain back, it never starts one.
Two unrelated silent tasks in one of three zones (p about 0.1) stay two suspects.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from fleet_remediation.contract.task_reach import TaskReachSettings

ZONE = "availability zone"
REVISION = "task definition"
ENDPOINT = "TTS endpoint"
COHORT = "tasks started"


@dataclass(frozen=True)
class TaskFacts:
    """What ECS says about one running task (empty: unknown)."""

    log_stream: str
    availability_zone: str = ""
    task_definition: str = ""
    started_at: datetime | None = None


@dataclass(frozen=True)
class GroupEvent:
    dimension: str
    value: str
    failing: tuple[str, ...]  # log streams
    tasks_in_group: int
    failing_in_fleet: int
    tasks: int
    p_value: float
    members: tuple[str, ...] = ()  # every task (log stream) of the group, failing or not

    @property
    def label(self) -> str:
        """The group in the fewest words: ``<dimension>=<value>``."""
        return f"{self.dimension}={self.value}"

    def evidence(self) -> dict[str, object]:
        return {
            "group": self.label,
            "failing_in_group": len(self.failing),
            "tasks_in_group": self.tasks_in_group,
            "failing_in_fleet": self.failing_in_fleet,
            "p_value_group": self.p_value,
        }

    def describe(self) -> str:
        """The group in plain words, with its evidence."""
        return (
            f"group event: {len(self.failing)} of the {self.tasks_in_group} tasks with {self.dimension} "
            f"{self.value} fail ({self.failing_in_fleet} failing of {self.tasks} tasks in the fleet; "
            f"p = {self.p_value:.2g} that a group this size holds them by chance): notify, drain nobody"
        )


def hypergeometric_tail(population: int, group: int, drawn: int, observed: int) -> float:
    """P(X >= observed) for X ~ Hypergeometric(population, group, drawn)."""
    top = min(group, drawn)
    if observed <= 0:
        return 1.0
    if observed > top:
        return 0.0

    def log_choose(n: int, k: int) -> float:
        return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)

    total = log_choose(population, drawn)
    terms = [
        log_choose(group, k) + log_choose(population - group, drawn - k) - total
        for k in range(observed, top + 1)
        if drawn - k <= population - group
    ]
    return min(1.0, sum(math.exp(term) for term in terms))


def _labels(
    facts: Sequence[TaskFacts], endpoints: Mapping[str, str], cohort_minutes: int
) -> dict[str, dict[str, str]]:
    """Per dimension, each task's value (tasks whose value is unknown are left out)."""
    cohort_seconds = cohort_minutes * 60
    labels: dict[str, dict[str, str]] = {ZONE: {}, REVISION: {}, ENDPOINT: {}, COHORT: {}}
    for task in facts:
        stream = task.log_stream
        if task.availability_zone:
            labels[ZONE][stream] = task.availability_zone
        if task.task_definition:
            labels[REVISION][stream] = task.task_definition.rsplit("/", 1)[-1]
        if task.started_at is not None:
            start = int(task.started_at.timestamp()) // cohort_seconds * cohort_seconds
            labels[COHORT][stream] = f"at {datetime.fromtimestamp(start, task.started_at.tzinfo):%H:%M}"
    # The agents' lines name the endpoint of every task that wrote any, running or not told by ECS.
    labels[ENDPOINT] = {stream: endpoint for stream, endpoint in endpoints.items() if endpoint}
    return labels


def find_group_event(
    failing: Iterable[str],
    facts: Sequence[TaskFacts],
    endpoints: Mapping[str, str],
    settings: TaskReachSettings,
) -> GroupEvent | None:
    """The most significant group that the failing tasks (log streams) share, if any."""
    failing_set = set(failing)
    best: GroupEvent | None = None
    for dimension, values in _labels(facts, endpoints, settings.start_cohort_minutes).items():
        if len(set(values.values())) < 2:
            continue  # one value for every task: that is the fleet, not a group
        drawn = sorted(stream for stream in failing_set if stream in values)
        for value in sorted(set(values.values())):
            members = [stream for stream, label in values.items() if label == value]
            hits = tuple(stream for stream in drawn if values[stream] == value)
            if len(hits) < settings.group_min_tasks:
                continue
            p = hypergeometric_tail(len(values), len(members), len(drawn), len(hits))
            if p <= settings.group_alpha and (best is None or p < best.p_value):
                best = GroupEvent(
                    dimension, value, hits, len(members), len(drawn), len(values), p, tuple(members)
                )
    return best
