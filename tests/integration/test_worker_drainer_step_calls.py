"""Each drainer step, run by the executor against moto ECS (plus ``FakeEcsTaskProtection``, and ECS's
throttling and lagging reads: ``EcsAsTheProfileSays``), calls only the ECS write actions its row of
the step table names (``contract.drainer_steps``), so the IAM grants derived from the table are the
calls the code makes. A change made by hand comes a minute after the drainer's last write, as it
would on a real fleet: by then ECS's reads show both."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest

from devkit.fakes.drainer_world import CLUSTER, DrainerWorld
from fleet_remediation.contract.drainer_steps import ECS_WRITE_ACTIONS, ROWS, Step
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Mode, Outcome

# The drainer's moto world with the real LiveKit server, as its end-to-end tests use it.
from tests.integration.test_worker_drainer import world as world
from worker_drainer.act.ladder_executor import DrainerExecutor
from worker_drainer.decide.ladder import LadderPlan, PlannedStep
from worker_drainer.decide.task_tags import CORDON_TAG, STATE_TAGS, Cause, State

pytestmark = pytest.mark.livekit


class StepRunner:
    """Runs one planned step at a time through the executor and records the ECS calls it makes."""

    def __init__(self, world: DrainerWorld) -> None:
        self.world = world
        self.calls: list[str] = []
        client = world.own_ecs_client()
        # Per operation and first: a fake that answers a call itself (task protection) registers
        # on the operation's own event, which runs before the service-wide one.
        for operation in client.meta.service_model.operation_names:
            client.meta.events.register_first(f"before-call.ecs.{operation}", self._record)
        self.deps = world.dependencies(ecs_client=client)
        self.runs = 0
        self.checked: set[Step] = set()

    def _record(self, model: Any, **_: Any) -> None:
        self.calls.append(f"ecs:{model.name}")

    def run(self, task_id: str, step: Step, seen: State) -> tuple[Outcome, set[str]]:
        settings = self.deps.settings
        self.runs += 1
        executor = DrainerExecutor(
            ecs=self.deps.ecs,
            ledger=self.deps.ledger,
            mode_switch=self.deps.mode_switch,
            room_service_factory=self.deps.room_service_factory,
            policy=settings.drainer.policy,
            reaper_policy=settings.reaper.policy,
            cluster=settings.ecs_cluster,
            service=settings.ecs_service,
            task_scope=settings.drainer.task_action_scope,
            invocation_id=f"inv-{self.runs}",
            incident_id="it.incident",
            clock=self.deps.clock,
            deadline=time.monotonic() + 60,
            livekit_request_timeout_seconds=2,
        )
        arn = next(arn for arn in self.world.task_arns if arn.endswith(task_id))
        report = ReportBuilder("worker_drainer", f"inv-{self.runs}")
        report.mode = Mode.ENFORCE
        self.calls.clear()
        planned = PlannedStep(task_id, arn, step, "test", seen, cause=Cause.VAD)
        executor.run(LadderPlan((planned,), 0, 0), report)
        # The step's own action is the last (a run first reports an earlier run's open intent).
        action = report.actions[-1]
        return action.outcome, {call for call in self.calls if call in ECS_WRITE_ACTIONS}

    def check(self, task_id: str, step: Step, seen: State) -> None:
        """The step ran, changed something, and called only the writes its row names."""
        outcome, writes = self.run(task_id, step, seen)
        row = ROWS[step]
        assert outcome is Outcome.DONE, f"{step.value} did not run: {outcome.value}"
        assert writes, f"{step.value} changed nothing"
        assert writes <= set(row.task_actions) | set(row.service_actions), (step.value, writes)
        self.checked.add(step)


def _a_minute_later(world: DrainerWorld) -> None:
    world.now += timedelta(minutes=1)


def test_each_step_calls_only_the_ecs_writes_its_row_names(world: DrainerWorld) -> None:
    runner = StepRunner(world)
    t0, t1, t2, t3 = world.task_ids

    runner.check(t0, Step.REAP, State.HEALTHY)
    world.ecs_client.untag_resource(resourceArn=world.task_arns[0], tagKeys=list(STATE_TAGS))
    _a_minute_later(world)

    # A cordon (protection off, desired count +1), finished again from "started", then undone.
    runner.check(t0, Step.CORDON, State.HEALTHY)
    world.ecs_client.tag_resource(
        resourceArn=world.task_arns[0], tags=[{"key": CORDON_TAG, "value": "started"}]
    )
    _a_minute_later(world)
    runner.check(t0, Step.COMPLETE_CORDON, State.DRAINING)
    runner.check(t0, Step.UNDO, State.DRAINING)

    # A stop once the replacement runs: StopTask, then the extra capacity given back.
    runner.check(t1, Step.CORDON, State.HEALTHY)
    world.run_service_scheduler()
    runner.check(t1, Step.STOP, State.DRAINING)

    # Capacity still owed for a task stopped by someone else is given back.
    runner.run(t2, Step.CORDON, State.HEALTHY)
    world.ecs_client.stop_task(cluster=CLUSTER, task=world.task_arns[2], reason="by hand")
    runner.check(t2, Step.REVERT_CAPACITY, State.HEALTHY)

    # Capacity held for a task whose marks someone removed is settled from the desired count.
    runner.run(t3, Step.CORDON, State.HEALTHY)
    world.ecs_client.untag_resource(resourceArn=world.task_arns[3], tagKeys=list(STATE_TAGS))
    _a_minute_later(world)
    runner.check(t3, Step.SETTLE_CAPACITY, State.HEALTHY)
    assert set(ROWS) == runner.checked, "a step of the table is not exercised here"
