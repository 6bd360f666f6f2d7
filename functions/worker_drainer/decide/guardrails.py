"""Blast-radius guardrails: at most K and a fraction of the fleet draining at once, never fewer than
the minimum of healthy tasks."""

from __future__ import annotations

from collections.abc import Collection

from fleet_remediation.contract.policies import DrainerPolicy
from worker_drainer.decide.task_tags import State, TaskMarks


class Guardrails:
    """At most K and a fraction of the fleet draining; never fewer than the minimum healthy tasks."""

    def __init__(self, fleet: Collection[TaskMarks], policy: DrainerPolicy) -> None:
        """``fleet``: the marks of every running task of the service."""
        self.policy = policy
        self.fleet = len(fleet)
        self.draining = sum(marks.state is State.DRAINING for marks in fleet)

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
