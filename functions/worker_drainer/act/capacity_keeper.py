"""Applies ``capacity_settlement.settle``: each UpdateService is preceded by a ledger write of the counts it
expects (phase RAISING or LOWERING) and followed by one that records it took effect, so whatever
stops in between is settled from the service's real desired count on the next tick."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from fleet_remediation.core.errors import RemediationError
from worker_drainer.act.step_outcomes import CapacityAmbiguousError, reply_lost
from worker_drainer.adapters.capacity_debts import CapacityDebt, Phase
from worker_drainer.adapters.ecs_tasks import EcsTaskService
from worker_drainer.adapters.ledger import Ledger
from worker_drainer.decide.capacity_settlement import Move, Settlement, settle


@dataclass
class CapacityKeeper:
    ecs: EcsTaskService
    ledger: Ledger
    clock: Callable[[], datetime]

    def settle(self, task_id: str, task_arn: str, want_raised: bool) -> Settlement:
        """Re-read the debt and the desired count, then make the one move they call for."""
        debt = self.ledger.capacity_debt(task_id)
        desired = self.ecs.capacity().desired_count
        plan = settle(debt, desired, want_raised)
        match plan.move:
            case Move.NONE:
                pass
            case Move.CONFIRM:
                assert debt is not None
                self.ledger.put_capacity_debt(debt.moved(Phase.RAISED), expected=Phase.RAISING)
            case Move.FORGET:
                assert debt is not None
                self.ledger.forget_capacity_debt(task_id, expected=debt.phase)
            case Move.AMBIGUOUS:
                assert debt is not None
                self.ledger.forget_capacity_debt(task_id, expected=debt.phase)
                raise CapacityAmbiguousError(plan.reason, resource=task_id)
            case Move.RAISE:
                self._raise(debt, task_id, task_arn, plan)
            case Move.LOWER:
                assert debt is not None
                self._lower(debt, plan)
        return plan

    def _raise(self, debt: CapacityDebt | None, task_id: str, task_arn: str, plan: Settlement) -> None:
        raised_at = int(self.clock().timestamp())
        moving = CapacityDebt(task_id, task_arn, raised_at, Phase.RAISING, plan.before, plan.after)
        self.ledger.put_capacity_debt(moving, expected=debt.phase if debt else None)
        try:
            self.ecs.set_desired_count(plan.after)
        except RemediationError as exc:
            if not reply_lost(exc):
                # The service refused it: nothing was raised, nothing is owed.
                self.ledger.forget_capacity_debt(task_id, expected=Phase.RAISING)
                raise
            if not self._count_is(plan.after):
                raise
            # It took effect behind the lost reply: the debt is owed, recorded below.
        self.ledger.put_capacity_debt(moving.moved(Phase.RAISED), expected=Phase.RAISING)

    def _lower(self, debt: CapacityDebt, plan: Settlement) -> None:
        moving = debt.moved(Phase.LOWERING, plan.before, plan.after)
        self.ledger.put_capacity_debt(moving, expected=debt.phase)
        # A refusal leaves the debt LOWERING with the count unchanged: the next tick lowers again.
        try:
            self.ecs.set_desired_count(plan.after)
        except RemediationError as exc:
            if not (reply_lost(exc) and self._count_is(plan.after)):
                raise
        self.ledger.forget_capacity_debt(debt.task_id, expected=Phase.LOWERING)

    def _count_is(self, expected: int) -> bool:
        """After an UpdateService of unknown outcome: re-read the desired count. Equal to what was
        asked: it took effect. Anything else (or no answer) leaves the debt in its moving phase for
        the next tick, which settles it from the count it reads then."""
        try:
            return self.ecs.capacity().desired_count == expected
        except RemediationError:
            return False
