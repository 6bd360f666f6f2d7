"""GetTaskProtection as unkind as the service profile: for ``ecs_consistency_seconds`` after an
UpdateTaskProtection it shows the protection from before the write (``EcsAsTheProfileSays``). A run
that completes a cordon inside that window (the invocation that switched protection off was killed
right after) must not take the old "on" for the truth and switch it off a second time: it leaves the
cordon to a later read, which finishes it without another protection write."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from devkit.fakes.aws_faults import InvocationKilled, KillAfter
from devkit.fakes.drainer_world import CLUSTER, SERVICE, DrainerWorld
from fleet_remediation.contract.drainer_steps import Step
from fleet_remediation.core.report_model import Outcome
from livekit_fleet_remediation.offline.service_profile import AWS_PROFILE
from tests.integration.test_worker_drainer import world as world
from tests.integration.test_worker_drainer_step_calls import StepRunner
from worker_drainer.adapters.ecs_tasks import BotoEcsTasks
from worker_drainer.decide.task_tags import State

pytestmark = pytest.mark.livekit


def test_a_cordon_completed_inside_the_window_rereads_and_switches_protection_off_once(
    world: DrainerWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    clients: list[Any] = []
    profiled = world.own_ecs_client
    monkeypatch.setattr(world, "own_ecs_client", lambda: clients.append(profiled()) or clients[-1])
    runner = StepRunner(world)
    task, arn = world.task_ids[0], world.task_arns[0]
    KillAfter(clients[0], "ecs.UpdateTaskProtection")
    with pytest.raises(InvocationKilled):
        runner.run(task, Step.CORDON, State.HEALTHY)
    assert not world.protection.enabled(arn)  # the write took effect
    assert runner.deps.ecs.protection(arn).enabled  # the profiled read still shows it on

    # The next run (a Lambda retry, a tick) inside the window. Tags and protection settle apart: here
    # the tag write already shows ("cordon: started") and only the protection read is old.
    truthful = BotoEcsTasks(CLUSTER, SERVICE, world.ecs_client)
    monkeypatch.setattr(runner.deps.ecs, "describe_task", truthful.describe_task)
    world.now += timedelta(seconds=1)
    outcome, writes = runner.run(task, Step.COMPLETE_CORDON, State.DRAINING)
    assert (outcome, writes) == (Outcome.SKIPPED, set())

    world.now += timedelta(seconds=AWS_PROFILE.ecs_consistency_seconds.p99 + 60)
    assert not runner.deps.ecs.protection(arn).enabled
    outcome, writes = runner.run(task, Step.COMPLETE_CORDON, State.DRAINING)
    assert outcome is Outcome.DONE
    assert "ecs:UpdateTaskProtection" not in writes
    assert [enabled for written, enabled in world.protection.updates if written == arn] == [True, False]
