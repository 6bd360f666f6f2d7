"""Blast-radius guardrails: at most K and a fraction of the fleet draining at once, never fewer than
the minimum of healthy tasks."""

from __future__ import annotations

from collections.abc import Sequence

from fleet_remediation.contract.policies import DrainerPolicy
from worker_drainer.adapters.ecs_tasks import EcsTask
from worker_drainer.tags import (
    State,
    state_of,
)


class Guardrails:
    """At most K and a fraction of the fleet draining; never fewer than the minimum healthy tasks."""

    def __init__(self, tasks: Sequence[EcsTask], policy: DrainerPolicy) -> None:
        self.policy = policy
        self.fleet = len(tasks)
        self.draining = sum(state_of(t) is State.DRAINING for t in tasks)

    @property
    def healthy(self) -> int:
        return self.fleet - self.draining

    def refusal(self) -> str | None:
        after = self.draining + 1
        if after > self.policy.max_draining_tasks:
            return f"guardrail: {self.draining} draining, at most {self.policy.max_draining_tasks} at once"
        if after > self.policy.max_draining_fraction * self.fleet:
            return (
                f"guardrail: {after} of {self.fleet} draining would exceed "
                f"{self.policy.max_draining_fraction:.0%} of the fleet"
            )
        if self.healthy - 1 < self.policy.min_healthy_tasks:
            return (
                f"guardrail: {self.healthy - 1} healthy tasks left < minimum {self.policy.min_healthy_tasks}"
            )
        return None

    def take(self) -> None:
        self.draining += 1
