"""The drainer's safety rules end to end: moto ECS (with ``FakeEcsTaskProtection``, which honours
``expiresInMinutes``), moto DynamoDB/SSM/SNS (an SQS queue subscribed to read the messages), agent
logs evaluated offline, and the real livekit-server. The saga's last checks too: a stop re-reads
that its replacement runs right before it (whatever the plan saw), and a capacity debt is settled
from what the task holds now."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from livekit import api

from devkit.fakes.drainer_world import (
    CLUSTER,
    SERVICE,
    TABLE,
    DrainerWorld,
    alarm_event,
    moto_world,
    schedule_event,
    stream_of,
    suspect_event,
)
from devkit.fault_proxy import Fault, FaultProxy
from devkit.livekit_local import LocalLiveKit, free_port
from fleet_remediation.contract.budgets import DRAINER_STEP_BUDGET_SECONDS
from fleet_remediation.contract.signals import SignalCatalog
from fleet_remediation.core.errors import AwsApiError, KillSwitchError
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Mode, Outcome
from livekit_fleet_remediation.offline.fixed_mode import FixedModeSwitch
from livekit_fleet_remediation.offline.worker_logs import OfflineWorkerLogs
from worker_drainer.act.capacity_keeper import CapacityKeeper
from worker_drainer.act.cordon_saga import CordonSaga
from worker_drainer.act.ladder_executor import DrainerExecutor
from worker_drainer.adapters.capacity_debts import Phase
from worker_drainer.adapters.ledger import DynamoLedger
from worker_drainer.adapters.tags_as_written import TagsAsWritten, tags_as_written
from worker_drainer.decide.plan_model import LadderPlan, PlannedStep, Step
from worker_drainer.decide.task_tags import CAUSE_TAG, COOLDOWN_TAG, STATE_TAG, State

pytestmark = pytest.mark.livekit
EXCLUDE = {"key": "livekit-drainer:exclude", "value": "true"}


@pytest.fixture
def world(livekit_server: LocalLiveKit) -> Iterator[DrainerWorld]:
    with moto_world(livekit_server) as built:
        yield built


def _actions(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(a["resource"], a["action"], a["outcome"]) for a in report["actions"]]


def _candidate(report: dict[str, Any], task_id: str) -> dict[str, Any]:
    return next(c for c in report["candidates"] if c["resource"] == task_id)


def _drain(world: DrainerWorld, task_id: str) -> dict[str, Any]:
    return world.invoke({"action": "drain", "task": task_id, "dry_run": False})


async def _delete_room(server: LocalLiveKit, name: str) -> None:
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as client:
        await client.room.delete_room(api.DeleteRoomRequest(room=name))


async def _create_room(server: LocalLiveKit, name: str) -> str:
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as client:
        return str((await client.room.create_room(api.CreateRoomRequest(name=name))).sid)


def test_undo_restores_the_tasks_original_protection_expiry(world: DrainerWorld) -> None:
    target, arn = world.task_ids[2], world.task_arns[2]
    world.ecs_client.update_task_protection(
        cluster=CLUSTER, tasks=[arn], protectionEnabled=True, expiresInMinutes=600
    )
    original = world.protection.expires[arn]
    world.slow(target, count=240, minutes=25)
    assert _actions(world.invoke(alarm_event(at=world.now))) == [(target, "cordon", "done")]
    assert not world.protection.enabled(arn)
    world.now += timedelta(minutes=11)
    assert _actions(world.invoke(schedule_event(world.now))) == [(target, "undo", "done")]
    assert world.protection.enabled(arn)
    # The 10-hour protection it had, not ECS's 120-minute default from the moment of the undo.
    assert abs(world.protection.expires[arn] - original) < timedelta(minutes=1)


def test_a_hand_drain_stays_until_undrain_and_undrain_holds_through_the_cooldown(world: DrainerWorld) -> None:
    target = world.task_ids[1]
    assert _actions(_drain(world, target)) == [(target, "cordon", "done")]
    assert world.tags(target)[CAUSE_TAG] == "manual"
    world.now += timedelta(minutes=15)  # quiet for longer than recovery_minutes: a VAD mark would go
    tick = world.invoke(schedule_event(world.now))
    assert [a for a in _actions(tick) if a[1] == "undo"] == []
    assert world.tags(target)[STATE_TAG] == "draining"

    undrained = world.invoke({"action": "undrain", "task": target, "dry_run": False})
    assert _actions(undrained) == [(target, "undo", "done")]
    assert "the operator's undrain holds" in undrained["actions"][0]["reason"]
    assert COOLDOWN_TAG in world.tags(target)
    # The robot does not re-cordon it during the cooldown: not from the VAD alarm, not from a suspect event.
    world.slow(target, count=240, minutes=25)
    for event in (alarm_event(at=world.now), suspect_event(target, world.now)):
        report = world.invoke(event)
        assert report["actions"] == []
        assert "cooldown until" in _candidate(report, target)["reason"]
    assert STATE_TAG not in world.tags(target)


def test_an_excluded_task_is_never_touched_and_the_skip_is_told(world: DrainerWorld) -> None:
    target = world.task_ids[0]
    world.ecs_client.tag_resource(resourceArn=world.task_arns[0], tags=[EXCLUDE])
    desired = world.desired_count()
    world.slow(target, count=240, minutes=25)
    by_alarm = world.invoke(alarm_event(at=world.now))
    assert by_alarm["actions"] == []
    assert "excluded by the tag livekit-drainer:exclude=true" in _candidate(by_alarm, target)["reason"]
    # By hand it is refused, with the reason and what to do (docs/on-call-from-a-phone.md).
    by_hand = _drain(world, target)
    assert by_hand["actions"] == []
    assert [e["code"] for e in by_hand["errors"]] == ["ManualTargetRefused"]
    assert "is excluded (tag livekit-drainer:exclude=true)" in by_hand["errors"][0]["message"]
    assert STATE_TAG not in world.tags(target)
    assert world.desired_count() == desired
    told = [message for _, message in world.notifications()]
    assert any("excluded" in message and target in message for message in told)


def test_a_tts_suspect_cordon_is_undone_only_when_its_jobs_reach_first_audio_again(
    world: DrainerWorld,
) -> None:
    suspect = world.task_ids[1]
    assert _actions(world.invoke(suspect_event(suspect, world.now))) == [(suspect, "cordon", "done")]
    assert world.tags(suspect)[CAUSE_TAG] == "tts-suspect"
    world.now += timedelta(minutes=11)
    # No slow VAD at all: the old rule would have undone it; a TTS suspicion needs TTS evidence.
    quiet = world.invoke(schedule_event(world.now))
    assert [a for a in _actions(quiet) if a[1] == "undo"] == []
    for n in range(3):
        world.tts_job(suspect, f"AJ_after_{n}", reached=True, minutes_ago=2)
    undone = world.invoke(schedule_event(world.now))
    assert _actions(undone) == [(suspect, "undo", "done")]
    assert "TTS evidence" in _candidate(undone, suspect)["reason"]


def test_forged_or_stale_events_are_refused_with_no_side_effect(world: DrainerWorld) -> None:
    target = world.task_ids[1]
    world.slow(target, count=240, minutes=25)  # VAD would single it out: a forged event must not reach it
    desired = world.desired_count()

    def forged(**detail: Any) -> dict[str, Any]:
        event = suspect_event(target, world.now)
        event["detail"] |= detail
        return event

    ours = f"arn:aws:ecs:eu-west-1:123456789012:task/{CLUSTER}/{target}"
    events = {
        "another environment": forged(environment="staging"),
        "any alarm name": forged(alarm_name="livekit-it-agents-vad-slow-inference"),
        "p = 0.9": forged(p_value=0.9),
        "a 2020 window": forged(window={"start": "2020-01-01T00:00:00Z", "end": "2020-01-01T00:30:00Z"}),
        "a stream of another task": forged(log_stream=stream_of(world.task_ids[2])),
        "a task that is not running": suspect_event(uuid.uuid4().hex, world.now),
        "a task ARN of another account": {"action": "drain", "task": ours.replace("123456789012", "9" * 12)},
        "a task ARN of another region": {"action": "drain", "task": ours.replace("eu-west-1", "us-east-1")},
        "a task ARN of another cluster": {"action": "drain", "task": ours.replace(f"/{CLUSTER}/", "/other/")},
        'task "x/"': {"action": "drain", "task": "x/", "dry_run": False},
        'dry_run "false"': {"action": "drain", "task": target, "dry_run": "false"},
        "dry_run 0": {"action": "drain", "task": target, "dry_run": 0},
    }
    acted = 0
    for name, event in events.items():
        if "task" in event and event.get("action") == "drain" and "dry_run" not in event:
            event["dry_run"] = False
        report = world.invoke(event)
        codes = [e["code"] for e in report["errors"]]
        assert codes in (["UntrustedEvent"], ["InvalidEvent"]), (name, report["errors"])
        acted += len(report["actions"])
    assert acted == 0
    assert all(STATE_TAG not in world.tags(task_id) for task_id in world.task_ids)
    assert world.desired_count() == desired
    assert world.audit(target) == []
    print(f"forged or stale drainer events acted on: {acted} of {len(events)}")


def test_a_job_line_not_yet_indexed_keeps_the_task_draining(livekit_server: LocalLiveKit) -> None:
    # The world's clock is the wall clock here, so a room created now is a brand-new room.
    with moto_world(livekit_server, ahead=timedelta(0)) as world:
        world.reaper_policy = {"max_age_minutes": 60, "managed_room_pattern": "^unindexed-.+$"}
        target = world.task_ids[0]
        _drain(world, target)
        world.run_service_scheduler()
        room = f"unindexed-{uuid.uuid4().hex[:8]}"
        sid = asyncio.run(_create_room(world.livekit, room))
        world.now += timedelta(minutes=1)
        # A live session whose job line is not in the logs yet: it may be on this task. Unknown, not 0.
        waiting = world.invoke(schedule_event(world.now))
        assert _actions(waiting) == []
        assert _candidate(waiting, target)["facts"]["active_jobs"] is None
        # Its job line arrives, on another worker: now "none of this task's rooms is live" is a fact.
        world.job_request(world.task_ids[1], "AJ_elsewhere", room, sid, minutes_ago=0.5)
        stopped = world.invoke(schedule_event(world.now))
        assert _actions(stopped) == [(target, "stop", "done")]


def test_a_protected_live_room_keeps_its_task_running_past_the_deadline(world: DrainerWorld) -> None:
    world.reaper_policy = {
        "max_age_minutes": 60,
        "rules": [{"name_pattern": "^lesson-demo-.*$", "protected": True}],
    }
    target = world.task_ids[0]
    room = f"lesson-demo-{uuid.uuid4().hex[:8]}"
    world.job_request(target, "AJ_demo", room, asyncio.run(_create_room(world.livekit, room)), minutes_ago=30)
    try:
        _drain(world, target)
        world.run_service_scheduler()
        world.now += timedelta(hours=2)  # past the drain deadline
        report = world.invoke(schedule_event(world.now))
        assert [a for a in _actions(report) if a[1] == "stop"] == []
        assert f"hosts protected live room(s) {room}" in _candidate(report, target)["reason"]
        assert world.task(target)["lastStatus"] == "RUNNING"
        assert any(room in message for _, message in world.notifications())
    finally:
        # The session's livekit-server is shared: another test's reaper must not find this room.
        asyncio.run(_delete_room(world.livekit, room))


def test_a_stop_waits_for_the_replacement_to_run(world: DrainerWorld) -> None:
    target = world.task_ids[3]
    desired = world.desired_count()
    _drain(world, target)
    world.now += timedelta(minutes=1)
    waiting = world.invoke(schedule_event(world.now))
    assert _actions(waiting) == []
    assert "replacement not running yet" in _candidate(waiting, target)["reason"]
    world.run_service_scheduler()
    assert _actions(world.invoke(schedule_event(world.now))) == [(target, "stop", "done")]
    assert world.desired_count() == desired


def test_a_partial_run_says_what_failed_and_what_is_unknown(world: DrainerWorld) -> None:
    bad = world.task_ids[0]
    world.slow(bad, count=240, minutes=25)
    world.livekit_url = f"http://127.0.0.1:{free_port()}"
    report = world.invoke(alarm_event(at=world.now))
    assert report["status"] == "partial"
    ((subject, message),) = world.notifications()
    assert subject == f"[it/agents] PARTIAL: worker drainer cordoned task {bad[:8]}"
    assert "done 1 · already done 0 · refused 0 · failed 0 · unknown 0 · errors 1" in message
    assert "LiveKitUnavailable" in message
    assert "rooms unknown" in message
    assert "--function-name lkfr-it-agents-worker-drainer" in message
    assert f'"action":"undrain","task":"{bad}"' in message


def test_a_dry_run_notifies_what_it_would_have_done_once(world: DrainerWorld) -> None:
    bad = world.task_ids[0]
    world.slow(bad, count=240, minutes=25)
    world.set_mode("dry-run")
    desired = world.desired_count()
    first = world.invoke(alarm_event(at=world.now))
    assert first["actions"] == []
    ((subject, message),) = world.notifications()
    assert subject == f"[it/agents] DRY RUN - would have cordoned task {bad[:8]}"
    assert message.startswith(f"DRY RUN — would have cordoned task {bad[:8]}")
    assert f"would cordon {bad}" in message
    world.invoke(
        alarm_event(at=world.now)
    )  # the same condition again: told once per hour, as enforce would act once
    assert world.notifications() == []
    assert STATE_TAG not in world.tags(bad)
    assert world.desired_count() == desired


def test_a_guardrail_refusal_is_told(world: DrainerWorld) -> None:
    world.policy = {"max_draining_tasks": 1}
    _drain(world, world.task_ids[0])
    world.notifications()
    second = world.task_ids[1]
    world.slow(second, count=240, minutes=25)
    report = world.invoke(alarm_event(at=world.now))
    assert report["actions"] == []
    assert _candidate(report, second)["reason"].startswith("skip: guardrail")
    ((subject, message),) = world.notifications()
    refusal = "guardrail: 1 draining, at most 1 at once"
    assert subject == f"[it/agents] worker drainer skipped task {second[:8]}: {refusal}"
    assert "refused 1" in message


# --- the saga's last checks: a stop re-reads its replacement; a debt settles from what the task holds


def _drained(world: DrainerWorld, index: int) -> tuple[str, str]:
    """A task cordoned by hand with replacement capacity raised (its replacement not started yet)."""
    task_id, arn = world.task_ids[index], world.task_arns[index]
    report = world.invoke({"action": "drain", "task": task_id, "dry_run": False})
    assert _actions(report) == [(task_id, "cordon", "done")]
    return task_id, arn


def _ecs_as_written(world: DrainerWorld) -> TagsAsWritten:
    """The drainer's ECS as its executor reads it: with its own recent tag writes (ECS lags them)."""
    deps = world.dependencies()
    return tags_as_written(deps.ecs, deps.ledger, deps.clock)


def _saga(world: DrainerWorld) -> CordonSaga:
    deps = world.dependencies()
    ecs = _ecs_as_written(world)
    keeper = CapacityKeeper(ecs, deps.ledger, deps.clock)
    policy, reaper_policy = deps.settings.drainer.policy, deps.settings.reaper.policy
    return CordonSaga(ecs, keeper, policy, reaper_policy, deps.clock)


def test_a_stop_re_reads_that_the_replacement_runs_whatever_the_plan_saw(world: DrainerWorld) -> None:
    desired = world.desired_count()
    task_id, arn = _drained(world, 0)
    saga = _saga(world)
    step = PlannedStep(task_id, arn, Step.STOP, "drained: no active jobs", State.DRAINING)
    task = _ecs_as_written(world).describe_task(arn)
    assert task is not None

    refused = saga.stop(task, step)
    assert refused.outcome is Outcome.SKIPPED
    assert refused.reason.startswith("re-check: replacement not running yet")
    assert world.task(task_id)["lastStatus"] == "RUNNING"
    assert world.desired_count() == desired + 1

    world.run_service_scheduler()
    stopped = saga.stop(task, step)
    assert stopped.outcome is Outcome.DONE
    assert stopped.reason.startswith("stopped; ")
    assert world.task(task_id)["lastStatus"] == "STOPPED"
    assert world.desired_count() == desired


def test_a_raise_whose_confirmation_was_lost_is_confirmed_for_a_task_that_holds_it(
    world: DrainerWorld,
) -> None:
    desired = world.desired_count()
    task_id, _ = _drained(world, 1)
    ledger = world.dependencies().ledger
    raised = ledger.capacity_debt(task_id)
    assert raised is not None
    assert raised.phase is Phase.RAISED
    # The state a lost write of RAISED leaves: the service did raise the count.
    ledger.put_capacity_debt(raised.moved(Phase.RAISING, desired, desired + 1), expected=Phase.RAISED)

    world.now += timedelta(minutes=1)
    report = world.invoke(schedule_event(world.now))
    assert _actions(report) == [(task_id, "settle-capacity", "done")]
    assert world.desired_count() == desired + 1
    confirmed = ledger.capacity_debt(task_id)
    assert confirmed is not None
    assert confirmed.phase is Phase.RAISED


def test_capacity_a_task_no_longer_holds_is_given_back(world: DrainerWorld) -> None:
    desired = world.desired_count()
    task_id, arn = _drained(world, 2)
    # An operator took the drainer's state mark off by hand: the task is healthy again (its capacity
    # mark and its debt remain), so the capacity is no longer held for it.
    world.ecs_client.untag_resource(resourceArn=arn, tagKeys=[STATE_TAG])

    world.now += timedelta(minutes=1)
    report = world.invoke(schedule_event(world.now))
    assert _actions(report) == [(task_id, "settle-capacity", "done")]
    assert world.desired_count() == desired
    assert world.dependencies().ledger.capacity_debt(task_id) is None
    assert world.task(task_id)["lastStatus"] == "RUNNING"


def test_a_robot_undo_holds_a_cooldown_and_an_operators_undo_says_so(world: DrainerWorld) -> None:
    _, arn = _drained(world, 3)
    saga = _saga(world)
    task = _ecs_as_written(world).describe_task(arn)
    assert task is not None
    robot = saga.undo(task, by_operator=False)
    assert robot.outcome is Outcome.DONE
    assert "unmarked; cooldown until " in robot.reason
    task = _ecs_as_written(world).describe_task(arn)
    assert task is not None
    operator = saga.undo(task, by_operator=True)
    assert "unmarked; the operator's undrain holds until " in operator.reason


def test_a_reap_whose_every_delete_fails_is_a_failed_step_and_leaves_the_task_unmarked(
    world: DrainerWorld,
) -> None:
    bad = world.task_ids[0]
    room = f"lesson-reap-{uuid.uuid4().hex[:6]}"
    sid = asyncio.run(_create_room(world.livekit, room))
    try:
        world.job_request(bad, "AJ_reap", room, sid, minutes_ago=150)
        world.slow(bad, count=240, minutes=25)
        with FaultProxy("127.0.0.1", world.livekit.port) as proxy:
            proxy.inject(Fault.CUT_BEFORE_FORWARD, methods={"DeleteRoom"})
            world.livekit_url = proxy.url
            report = world.invoke(alarm_event(at=world.now))
        assert _actions(report) == [(bad, "reap", "failed")]
        error = report["actions"][0]["error"]
        assert (error["code"], error["resource"]) == ("LiveKitUnavailable", room)
        assert error["message"].startswith("LiveKit DeleteRoom at ")
        assert STATE_TAG not in world.tags(bad)  # not marked reaped: the next tick tries again
    finally:
        asyncio.run(_delete_room(world.livekit, room))


# --- the executor's re-checks right before each step, whatever the plan saw ------------------------


class _UnreadableSwitch:
    def read(self) -> Mode:
        raise KillSwitchError("cannot read kill switch /lkfr/it/mode: timed out", resource="/lkfr/it/mode")


def _executor(world: DrainerWorld, **changes: Any) -> DrainerExecutor:
    deps = world.dependencies()
    values: dict[str, Any] = {
        "ecs": deps.ecs,
        "ledger": deps.ledger,
        "mode_switch": deps.mode_switch,
        "room_service_factory": deps.room_service_factory,
        "policy": deps.settings.drainer.policy,
        "reaper_policy": deps.settings.reaper.policy,
        "service": SERVICE,
        "cluster": CLUSTER,
        "task_scope": deps.settings.drainer.task_action_scope,
        "invocation_id": str(uuid.uuid4()),
        "incident_id": "incident-1",
        "clock": deps.clock,
        "deadline": time.monotonic() + 60,
        "livekit_request_timeout_seconds": 2.0,
    }
    return DrainerExecutor(**(values | changes))


def _step(world: DrainerWorld, index: int, step: Step, seen: State = State.HEALTHY) -> PlannedStep:
    return PlannedStep(world.task_ids[index], world.task_arns[index], step, "planned by the test", seen)


def _execute(executor: DrainerExecutor, *steps: PlannedStep) -> list[tuple[str, str, str]]:
    report = ReportBuilder("worker_drainer", "test")
    executor.run(LadderPlan(tuple(steps), healthy_running=0, draining=0), report)
    return [(a.action, a.outcome.value, a.reason) for a in report.actions]


def test_each_step_re_reads_the_switch_and_its_time_left_right_before_it(world: DrainerWorld) -> None:
    cordon = _step(world, 0, Step.CORDON)
    assert _execute(_executor(world, mode_switch=FixedModeSwitch(Mode.DRY_RUN)), cordon) == [
        ("cordon", "skipped", "kill switch is now dry-run")
    ]
    assert _execute(_executor(world, mode_switch=_UnreadableSwitch()), cordon) == [
        ("cordon", "skipped", "kill switch unreadable: cannot read kill switch /lkfr/it/mode: timed out")
    ]
    no_time = _executor(world, deadline=time.monotonic() + DRAINER_STEP_BUDGET_SECONDS - 1)
    assert _execute(no_time, cordon) == [("cordon", "skipped", "not enough time left for this step")]
    assert STATE_TAG not in world.tags(world.task_ids[0])
    # Each refusal is in the journal too.
    assert [e["outcome"] for e in world.audit(world.task_ids[0])] == ["skipped"] * 3


def test_a_step_whose_task_changed_since_the_plan_is_not_applied(world: DrainerWorld) -> None:
    drained = world.task_ids[0]
    world.invoke({"action": "drain", "task": drained, "dry_run": False})
    world.ecs_client.tag_resource(resourceArn=world.task_arns[1], tags=[EXCLUDE])
    world.ecs_client.stop_task(cluster=CLUSTER, task=world.task_arns[2], reason="by hand")
    executor = _executor(world)
    assert _execute(
        executor,
        _step(world, 0, Step.CORDON),
        _step(world, 0, Step.COMPLETE_CORDON, State.DRAINING),
        _step(world, 1, Step.CORDON),
        _step(world, 2, Step.STOP, State.DRAINING),
        _step(world, 2, Step.CORDON),
        _step(world, 3, Step.UNDO, State.DRAINING),
        _step(world, 3, Step.STOP, State.DRAINING),
    ) == [
        ("cordon", "already-done", "task state changed from healthy to draining"),
        ("complete-cordon", "already-done", "cordon already complete"),
        ("cordon", "skipped", "re-check: the task is now excluded from the drainer"),
        ("stop", "already-done", "task already stopped"),
        ("cordon", "skipped", "task is no longer RUNNING"),
        ("undo", "already-done", "task state changed from draining to healthy"),
        ("stop", "skipped", "task state changed from draining to healthy"),
    ]
    # Capacity owed back for a task whose debt another run settled already: nothing left to do.
    revert = _step(world, 2, Step.REVERT_CAPACITY)
    ((action, outcome, _),) = _execute(_executor(world), revert)
    assert (action, outcome) == ("revert-capacity", "already-done")
    assert STATE_TAG not in world.tags(world.task_ids[1])
    assert world.task(world.task_ids[3])["lastStatus"] == "RUNNING"


def test_a_cordon_re_checks_the_guardrails_against_the_fleet_as_it_is_now(world: DrainerWorld) -> None:
    # Planned while the fleet was healthy; by the time the step runs another task is draining.
    world.invoke({"action": "drain", "task": world.task_ids[0], "dry_run": False})
    (result,) = _execute(_executor(world), _step(world, 1, Step.CORDON))
    assert result[:2] == ("cordon", "skipped")
    assert result[2].startswith("re-check: guardrail: 1 draining, at most 1 at once")
    assert STATE_TAG not in world.tags(world.task_ids[1])


def test_no_step_runs_without_its_intent_on_record(world: DrainerWorld) -> None:
    dynamodb = boto3.client("dynamodb")

    def refuse_audit(params: dict[str, Any], **_: Any) -> None:
        if params.get("Key", params.get("Item", {})).get("sk", {}).get("S", "").startswith("audit#"):
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException"}}, "PutItem")

    for operation in ("PutItem", "UpdateItem"):
        dynamodb.meta.events.register(f"provide-client-params.dynamodb.{operation}", refuse_audit)
    ledger = DynamoLedger(TABLE, SERVICE, client=dynamodb)
    ((action, outcome, reason),) = _execute(_executor(world, ledger=ledger), _step(world, 0, Step.CORDON))
    assert (action, outcome) == ("cordon", "skipped")
    assert reason.startswith("intent not recorded: ")
    assert STATE_TAG not in world.tags(world.task_ids[0])


def test_a_reap_with_one_delete_failed_of_two_is_done_for_the_room_that_went(world: DrainerWorld) -> None:
    bad = world.task_ids[0]
    rooms = [f"lesson-reap-{uuid.uuid4().hex[:6]}" for _ in range(2)]
    for index, room in enumerate(rooms):
        sid = asyncio.run(_create_room(world.livekit, room))
        world.job_request(bad, f"AJ_reap{index}", room, sid, minutes_ago=150)
    world.slow(bad, count=240, minutes=25)
    try:
        with FaultProxy("127.0.0.1", world.livekit.port) as proxy:
            proxy.inject(Fault.CUT_BEFORE_FORWARD, methods={"DeleteRoom"}, skip=1)
            world.livekit_url = proxy.url
            report = world.invoke(alarm_event(at=world.now))
        assert _actions(report) == [(bad, "reap", "done")]
        reason = report["actions"][0]["reason"]
        assert reason.startswith("reaped 1 room(s) (")
        assert all(room in reason for room in rooms)
        assert world.tags(bad)[STATE_TAG] == "reaped"
    finally:
        asyncio.run(_delete_rooms_left(world.livekit, rooms))


async def _delete_rooms_left(server: LocalLiveKit, names: list[str]) -> None:
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as client:
        left = await client.room.list_rooms(api.ListRoomsRequest(names=names))
        for room in left.rooms:
            await client.room.delete_room(api.DeleteRoomRequest(room=room.name))


class FailingTtsQueries(OfflineWorkerLogs):
    """The offline worker logs whose TTS-outcome query fails as Logs Insights would (a typed error),
    recording the deadline each query was given."""

    def __init__(self, world: DrainerWorld) -> None:
        super().__init__(world.events, SignalCatalog.default().slow_vad)
        self.deadlines: list[float] = []

    def tts_outcomes(self, log_stream: str, start: Any, end: Any, deadline: float) -> list[Any]:
        self.deadlines.append(deadline)
        raise AwsApiError("Logs GetQueryResults failed: ThrottlingException", aws_code="ThrottlingException")


def test_unknown_tts_evidence_keeps_a_suspect_cordoned_and_is_reported(world: DrainerWorld) -> None:
    suspect = world.task_ids[1]
    assert _actions(world.invoke(suspect_event(suspect, world.now))) == [(suspect, "cordon", "done")]
    world.now += timedelta(minutes=11)
    for n in range(3):
        world.tts_job(suspect, f"AJ_after_{n}", reached=True, minutes_ago=2)
    deps = world.dependencies()
    deps.worker_logs = failing = FailingTtsQueries(world)
    started = time.monotonic()
    report = world.invoke(schedule_event(world.now), deps)
    assert [a for a in _actions(report) if a[1] == "undo"] == []
    assert [e["code"] for e in report["errors"]] == ["AwsApiError"]
    assert world.tags(suspect)[STATE_TAG] == "draining"
    # The query was bounded by the drainer's own Insights timeout.
    (deadline,) = failing.deadlines
    assert deadline <= started + deps.settings.drainer.insights_timeout_seconds + 1
