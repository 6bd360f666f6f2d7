"""Replacement capacity (pure): what to do with a task's capacity debt, decided from the service's
real desired count, so a lost UpdateService reply or an invocation killed between two writes is
settled on the next tick instead of leaking (+1 for good) or losing (-1 for good) a task.

Every change records, before UpdateService, the desired count it saw (``before``) and the one it
asks for (``after``). Reading the count again tells what happened: ``after`` → it took effect,
``before`` → it did not, anything else → someone else changed the count too, and we cannot tell
(the debt is dropped and the ambiguity reported, never guessed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from worker_drainer.adapters.capacity_debts import CapacityDebt, Phase


class Move(StrEnum):
    NONE = "none"
    CONFIRM = "confirm"  # the raise took effect (its reply was lost): the debt is now RAISED
    RAISE = "raise"
    LOWER = "lower"
    FORGET = "forget"  # nothing is owed: drop the debt
    AMBIGUOUS = "ambiguous"  # the count moved under us: drop the debt and tell the operator


@dataclass(frozen=True)
class Settlement:
    move: Move
    reason: str
    before: int = 0
    after: int = 0


def _raise(desired: int, why: str) -> Settlement:
    return Settlement(Move.RAISE, f"{why}: desired count {desired} -> {desired + 1}", desired, desired + 1)


def _lower(desired: int, why: str) -> Settlement:
    after = max(desired - 1, 0)
    return Settlement(Move.LOWER, f"{why}: desired count {desired} -> {after}", desired, after)


def _ambiguous(debt: CapacityDebt, desired: int) -> Settlement:
    return Settlement(
        Move.AMBIGUOUS,
        f"desired count is {desired}, neither {debt.before} nor {debt.after} as the interrupted "
        f"{debt.phase.value} expected: someone else changed it too; left as is, check the service",
    )


def settle(debt: CapacityDebt | None, desired: int, want_raised: bool) -> Settlement:
    """The next move for one task's debt, given the service's desired count now and whether the task
    should hold extra capacity (running, draining, in desired-count mode)."""
    if debt is None:
        return _raise(desired, "replacement capacity") if want_raised else Settlement(Move.NONE, "none owed")
    if debt.phase is Phase.RAISED:
        if want_raised:
            return Settlement(Move.NONE, "replacement capacity in place")
        return _lower(desired, "capacity given back")
    if debt.phase is Phase.RAISING:
        if desired == debt.after:
            if want_raised:
                return Settlement(Move.CONFIRM, f"the raise to {desired} took effect (its reply was lost)")
            return _lower(desired, "the raise took effect, giving it back")
        if desired == debt.before:
            if want_raised:
                return _raise(desired, "the raise never happened, raising now")
            return Settlement(Move.FORGET, f"the raise never happened (desired count {desired})")
        return _ambiguous(debt, desired)
    if desired == debt.after:
        return Settlement(Move.FORGET, f"capacity already given back (desired count {desired})")
    if desired == debt.before:
        return _lower(desired, "giving back the capacity again (the last attempt did not take effect)")
    return _ambiguous(debt, desired)


def replacement_refusal(debt: CapacityDebt | None, running: int, desired: int | None) -> str | None:
    """Why a task in desired-count mode may not be stopped yet (None: its replacement is running)."""
    if debt is None or debt.phase is not Phase.RAISED:
        state = "missing" if debt is None else debt.phase.value
        return f"replacement capacity not confirmed (capacity debt {state})"
    if desired is None:
        return "the service's desired count is unknown"
    if running < desired:
        return f"replacement not running yet: {running} of desired {desired} tasks running"
    return None


def debt_for(debts: Sequence[CapacityDebt], task_id: str) -> CapacityDebt | None:
    return next((d for d in debts if d.task_id == task_id), None)
