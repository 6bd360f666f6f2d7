"""Capacity debts (pure data): replacement capacity raised for a cordoned task, and the DynamoDB
attributes that carry one. The ledger stores them; ``capacity_settlement.settle`` decides what to do next."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any


class Phase(StrEnum):
    RAISING = "raising"
    RAISED = "raised"
    LOWERING = "lowering"


@dataclass(frozen=True)
class CapacityDebt:
    """Capacity raised (or being raised, or being given back) for one cordoned task. ``before`` and
    ``after`` are the desired counts around the change in flight (RAISING, LOWERING)."""

    task_id: str
    task_arn: str
    raised_at: int
    phase: Phase = Phase.RAISED
    before: int | None = None
    after: int | None = None

    def moved(self, phase: Phase, before: int | None = None, after: int | None = None) -> CapacityDebt:
        return replace(self, phase=phase, before=before, after=after)


def debt_attributes(debt: CapacityDebt) -> dict[str, Any]:
    """The item's attributes beside its key."""
    item: dict[str, Any] = {
        "task_arn": {"S": debt.task_arn},
        "raised_at": {"N": str(debt.raised_at)},
        "phase": {"S": debt.phase.value},
    }
    for name, count in (("before", debt.before), ("after", debt.after)):
        if count is not None:
            item[name] = {"N": str(count)}
    return item


def debt_from(item: Mapping[str, Any]) -> CapacityDebt:
    def count(name: str) -> int | None:
        return int(item[name]["N"]) if name in item else None

    return CapacityDebt(
        task_id=item["sk"]["S"],
        task_arn=item["task_arn"]["S"],
        raised_at=int(item["raised_at"]["N"]),
        # Debts written before phases existed were written once the count was raised.
        phase=Phase(item.get("phase", {}).get("S", Phase.RAISED.value)),
        before=count("before"),
        after=count("after"),
    )
