"""Capacity settled from the service's real desired count (pure), and the protection undo restores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from worker_drainer.adapters.capacity_debts import CapacityDebt, Phase
from worker_drainer.adapters.ecs_model import EcsTask, TaskProtection
from worker_drainer.decide.capacity_settlement import Move, replacement_refusal, settle
from worker_drainer.decide.task_tags import Cause, cordon_tags, protection_to_restore

ARN = "arn:aws:ecs:eu-west-1:1:task/c/t0"
NOW = datetime(2026, 9, 15, 17, 45, tzinfo=UTC)


def debt(phase: Phase, before: int | None = None, after: int | None = None) -> CapacityDebt:
    return CapacityDebt("t0", ARN, 0, phase, before, after)


@pytest.mark.parametrize(
    ("owed", "desired", "want", "move", "target"),
    [
        # Nothing owed yet: a cordon raises; anything else has nothing to do.
        (None, 4, True, Move.RAISE, 5),
        (None, 4, False, Move.NONE, None),
        # Raised and confirmed: kept while draining, given back otherwise.
        (debt(Phase.RAISED), 5, True, Move.NONE, None),
        (debt(Phase.RAISED), 5, False, Move.LOWER, 4),
        # A raise whose reply was lost: the service has the new count.
        (debt(Phase.RAISING, 4, 5), 5, True, Move.CONFIRM, None),
        (debt(Phase.RAISING, 4, 5), 5, False, Move.LOWER, 4),
        # Killed between the ledger write and UpdateService: the count never moved.
        (debt(Phase.RAISING, 4, 5), 4, True, Move.RAISE, 5),
        (debt(Phase.RAISING, 4, 5), 4, False, Move.FORGET, None),
        # Someone else moved the count too: never guessed.
        (debt(Phase.RAISING, 4, 5), 7, True, Move.AMBIGUOUS, None),
        # A give-back whose reply was lost, and one that never reached the service.
        (debt(Phase.LOWERING, 5, 4), 4, False, Move.FORGET, None),
        (debt(Phase.LOWERING, 5, 4), 5, False, Move.LOWER, 4),
        (debt(Phase.LOWERING, 5, 4), 3, False, Move.AMBIGUOUS, None),
    ],
)
def test_each_debt_settles_from_the_real_desired_count(
    owed: CapacityDebt | None, desired: int, want: bool, move: Move, target: int | None
) -> None:
    plan = settle(owed, desired, want)
    assert plan.move is move, plan.reason
    if target is not None:
        assert (plan.before, plan.after) == (desired, target)


def test_a_give_back_never_goes_below_zero() -> None:
    assert settle(debt(Phase.RAISED), 0, False).after == 0


def test_a_stop_waits_for_its_replacement_to_run() -> None:
    assert "capacity debt missing" in str(replacement_refusal(None, 5, 5))
    assert "capacity debt raising" in str(replacement_refusal(debt(Phase.RAISING, 4, 5), 5, 5))
    assert "unknown" in str(replacement_refusal(debt(Phase.RAISED), 5, None))
    assert replacement_refusal(debt(Phase.RAISED), 4, 5) == (
        "replacement not running yet: 4 of desired 5 tasks running"
    )
    assert replacement_refusal(debt(Phase.RAISED), 5, 5) is None


def cordoned(protection: TaskProtection) -> EcsTask:
    tags = cordon_tags(NOW, "why", Cause.VAD, "desired-count", protection, 3600, "it.incident")
    return EcsTask(ARN, "RUNNING", "RUNNING", "service:svc", tags)


def test_undo_restores_the_original_protection_expiry_not_a_fresh_default() -> None:
    original = NOW + timedelta(hours=10)
    task = cordoned(TaskProtection(True, original))
    later = NOW + timedelta(minutes=11)
    restore = protection_to_restore(task, later)
    assert restore.restore
    assert restore.minutes == 589  # 10 h after the cordon, 11 min later: the same instant
    assert later + timedelta(minutes=restore.minutes) - original < timedelta(minutes=1)


def test_undo_leaves_off_a_protection_that_has_expired_since() -> None:
    task = cordoned(TaskProtection(True, NOW + timedelta(minutes=5)))
    restore = protection_to_restore(task, NOW + timedelta(minutes=11))
    assert not restore.restore
    assert "expired" in restore.note


def test_undo_caps_the_restored_protection_at_48_hours_and_skips_an_unprotected_task() -> None:
    long = cordoned(TaskProtection(True, NOW + timedelta(days=5)))
    assert protection_to_restore(long, NOW).minutes == 2880
    assert not protection_to_restore(cordoned(TaskProtection(False)), NOW).restore
