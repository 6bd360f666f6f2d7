"""Every side-effecting AWS call under the three faults after which its caller cannot know whether it
acted (``devkit.fakes.aws_faults.Ambiguous``): it took effect, then the reply was a 5xx; a reset
whose retries were throttled; or nothing (a hang). The call is carried out by in-process moto (or
the explicit fake of an operation moto lacks) for real, per botocore attempt.

For each row: the faulted invocation reports no step that took effect as ``failed``; within two
ticks the world is consistent (a draining task is fully cordoned and owes exactly one task of
capacity, anything else owes none); the desired count never exceeds its pre-cordon count plus the
one owed, and ends at the pre-cordon count once the drain is over; no message or event goes out
twice, within the invocation or on Lambda's retry of it (the same request id).

``SIDE_EFFECT_ROWS`` names the scenario that reaches each call; ``test_every_side_effect_has_its_rows``
fails when a call the code can make (``aws_clients.SIDE_EFFECTS``) or a write the IAM constants grant
has none, ``tests/infra/test_side_effect_rows.py`` when a write the synthesized stack grants has
none, and ``test_every_livekit_side_effect_has_its_rows`` when a LiveKit call that changes something
lacks its rows in the reaper's fault suite.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from devkit.fakes.aws_faults import Ambiguous, TookEffect
from devkit.fakes.drainer_world import TABLE, DrainerWorld, alarm_event, moto_world, schedule_event
from devkit.fakes.ecs_fakes import EcsManagedTagsSetting, FakeEcsTaskProtection
from devkit.livekit_local import LocalLiveKit
from devkit.process_work import own_time
from fleet_remediation.adapters.action_events import EventBridgeActionEvents
from fleet_remediation.adapters.aws_clients import SIDE_EFFECTS, aws_client
from fleet_remediation.adapters.idempotency import DynamoDBOnceGuard
from fleet_remediation.adapters.livekit_rooms import RoomService
from fleet_remediation.contract import budgets
from fleet_remediation.contract.action_events import ActionEvent, ActionKind, event_id
from fleet_remediation.contract.events import SuspectWorkerDetail, TimeWindow
from fleet_remediation.core.announce import announce
from fleet_remediation.core.report import ReportBuilder
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from tests.faults.table import FaultRecorder
from tests.faults.test_reaper_livekit_faults import AMBIGUOUS, DELETE_FAULTS
from tts_reach_alarm.adapters.event_bus import EventBridgePublisher, put_at_most_once
from worker_drainer.adapters.capacity_debts import Phase
from worker_drainer.adapters.ecs_tasks import (
    ECS_SERVICE_ACTIONS,
    ECS_TASK_CHANGE_ACTIONS,
    ECS_TASK_TAG_ACTIONS,
)
from worker_drainer.adapters.ledger import LEDGER_ACTIONS
from worker_drainer.adapters.outbox import OUTBOX_ACTIONS, DynamoOutbox, ledger_once_guard
from worker_drainer.decide.task_tags import CORDON_TAG, STATE_TAG

pytestmark = [pytest.mark.livekit, pytest.mark.timeout(90)]
AFTER_THE_LEASE = timedelta(minutes=3)
ECS_TIMEOUT_SECONDS = 2.0
# One invocation, a hung attempt included: its own time, not its queue for a core.
INVOCATION_BOUND_SECONDS = 10.0
# Writes the stacks grant that the functions' code never calls on its own (Powertools' records are
# PutItem, UpdateItem and DeleteItem; BatchWriteItem comes with ``grant_read_write_data``).
GRANTED_NOT_CALLED = frozenset({"dynamodb:BatchWriteItem"})


@pytest.fixture
def world(livekit_server: LocalLiveKit) -> Iterator[DrainerWorld]:
    with moto_world(livekit_server) as built:
        yield built


@dataclasses.dataclass
class Faulted:
    """One drainer invocation's clients, for a fault to hook into, and the dependencies using them."""

    world: DrainerWorld
    ecs: Any = None
    dynamodb: Any = None
    sns: Any = None
    fakes: list[TookEffect] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        # The drainer's ECS budget at a 2 s request timeout (the setting's default is 5 s): a hung
        # attempt costs 2 s, which keeps the suite fast.
        self.ecs = aws_client(budgets.ecs_call(ECS_TIMEOUT_SECONDS))
        FakeEcsTaskProtection(self.ecs, shared_with=self.world.protection)
        EcsManagedTagsSetting(self.ecs, shared_with=self.world.managed_tags)
        self.dynamodb = aws_client(budgets.LEDGER_CALL)
        self.sns = aws_client(budgets.SNS_PUBLISH_ATTEMPT)

    def inject(self, operation: str, fault: Ambiguous) -> None:
        service = operation.split(".")[0]
        client = {"ecs": self.ecs, "dynamodb": self.dynamodb, "sns": self.sns}[service]
        serve = self.world.protection.serve if operation.endswith("TaskProtection") else None
        self.fakes.append(TookEffect(client, operation, fault, **({"serve": serve} if serve else {})))

    def dependencies(self) -> Any:
        deps = self.world.dependencies(
            ecs_client=self.ecs, dynamodb_client=self.dynamodb, sns_client=self.sns
        )
        return dataclasses.replace(
            deps,
            once=ledger_once_guard(TABLE, client=self.dynamodb),
            outbox=DynamoOutbox(TABLE, client=self.dynamodb),
        )


def invoke(
    world: DrainerWorld, event: dict[str, Any], deps: Any = None, context: Any = None
) -> dict[str, Any]:
    with own_time() as took:
        answer = world.invoke(event, deps, context)
    assert took.seconds < INVOCATION_BOUND_SECONDS, f"invocation took {took}"
    return answer


def drain(task_id: str) -> dict[str, Any]:
    return {"action": "drain", "task": task_id, "dry_run": False}


def outcomes(report: dict[str, Any]) -> list[str]:
    return [a["outcome"] for a in report["actions"]]


def debt_phase(world: DrainerWorld, task_id: str) -> Phase | None:
    found = world.dependencies().ledger.capacity_debt(task_id)
    return None if found is None else found.phase


def consistent(world: DrainerWorld, target: str, arn: str, pre: int) -> bool:
    """Nothing half done: a draining task is cordoned whole and owes one task; else nothing is owed."""
    stopped = world.task(target)["lastStatus"] == "STOPPED"
    tags = world.tags(target)
    if stopped or STATE_TAG not in tags:
        return world.desired_count() == pre and debt_phase(world, target) is None
    return (
        tags.get(CORDON_TAG) == "complete"
        and not world.protection.enabled(arn)
        and world.desired_count() == pre + 1
        and debt_phase(world, target) is Phase.RAISED
    )


def settle(world: DrainerWorld, target: str, arn: str, pre: int) -> int:
    """Ticks (at most two) until the world is consistent; the capacity bound holds after each."""
    for ticks in range(3):
        assert world.desired_count() <= pre + 1, "capacity above its pre-cordon count plus the one owed"
        if consistent(world, target, arn, pre):
            return ticks
        if ticks < 2:
            world.now += AFTER_THE_LEASE
            invoke(world, schedule_event(world.now))
    raise AssertionError(f"not consistent after two ticks: {world.tags(target)}, {world.desired_count()}")


def finish_the_drain(world: DrainerWorld, target: str, pre: int) -> None:
    """The rest of a drain in progress: the replacement runs, the task stops, capacity is given back."""
    if world.task(target)["lastStatus"] != "STOPPED" and STATE_TAG in world.tags(target):
        world.run_service_scheduler()
        for _ in range(2):
            world.now += AFTER_THE_LEASE
            invoke(world, schedule_event(world.now))
    assert world.desired_count() == pre, "capacity must end at its pre-cordon count"
    assert debt_phase(world, target) is None


@dataclasses.dataclass
class Inbox:
    """The e-mails of one test, by notification id: none may arrive twice."""

    world: DrainerWorld
    seen: list[str] = dataclasses.field(default_factory=list)

    def check(self) -> None:
        self.seen += [m["MessageAttributes"]["notification_id"]["Value"] for m in self.world.received()]
        assert len(self.seen) == len(set(self.seen)), f"a notification went out twice: {self.seen}"


# --- the scenarios: each reaches its call with the fault armed, and returns the faulted report ---


def cordon_with_fault(world: DrainerWorld, f: Faulted, target: str) -> dict[str, Any]:
    return drain(target)


def stop_with_fault(world: DrainerWorld, f: Faulted, target: str) -> dict[str, Any]:
    assert outcomes(invoke(world, drain(target))) == ["done"]
    world.run_service_scheduler()
    world.now += AFTER_THE_LEASE
    return schedule_event(world.now)


def undo_with_fault(world: DrainerWorld, f: Faulted, target: str) -> dict[str, Any]:
    world.slow(target, count=240, minutes=25)
    assert outcomes(invoke(world, alarm_event(at=world.now))) == ["done"]
    world.now += timedelta(minutes=11)  # quiet since: VAD evidence of recovery
    return schedule_event(world.now)


# Sets the world up to the faulted invocation and returns its event.
Scenario = Callable[[DrainerWorld, Faulted, str], dict[str, Any]]
# (IAM action, botocore operation, how the drainer reaches it, which call of the operation is faulted)
SIDE_EFFECT_ROWS: list[tuple[str, str, Scenario]] = [
    ("ecs:TagResource", "ecs.TagResource", cordon_with_fault),
    ("ecs:UpdateTaskProtection", "ecs.UpdateTaskProtection", cordon_with_fault),
    ("ecs:UpdateService", "ecs.UpdateService", cordon_with_fault),
    ("ecs:StopTask", "ecs.StopTask", stop_with_fault),
    ("ecs:UpdateService", "ecs.UpdateService", stop_with_fault),
    ("ecs:UntagResource", "ecs.UntagResource", undo_with_fault),
    ("dynamodb:PutItem", "dynamodb.PutItem", cordon_with_fault),
    ("dynamodb:UpdateItem", "dynamodb.UpdateItem", cordon_with_fault),
    ("dynamodb:DeleteItem", "dynamodb.DeleteItem", cordon_with_fault),
    ("sns:Publish", "sns.Publish", cordon_with_fault),
]
# Covered below on the responder's own path (PutEvents cannot be read back: counted at a target).
EVENT_ROWS = ["events:PutEvents"]
ROW_IDS = [
    f"{operation}-{scenario.__name__.removesuffix('_with_fault')}"
    for _, operation, scenario in SIDE_EFFECT_ROWS
]


@pytest.mark.parametrize("fault_kind", list(Ambiguous), ids=[f.name.lower() for f in Ambiguous])
@pytest.mark.parametrize(("action", "operation", "scenario"), SIDE_EFFECT_ROWS, ids=ROW_IDS)
def test_a_side_effect_that_took_effect_is_never_failed_nor_repeated(
    world: DrainerWorld,
    fault: FaultRecorder,
    action: str,
    operation: str,
    scenario: Scenario,
    fault_kind: Ambiguous,
) -> None:
    fault.describe(f"{operation} {fault_kind.value} ({scenario.__name__})", "worker_drainer")
    target, arn, pre = world.task_ids[0], world.task_arns[0], world.desired_count()
    faulted, inbox, context = Faulted(world), Inbox(world), LocalLambdaContext()
    event = scenario(world, faulted, target)
    inbox.check()
    faulted.inject(operation, fault_kind)
    deps = faulted.dependencies()
    with fault.timed():
        report = invoke(world, event, deps, context)
    (fake,) = faulted.fakes
    assert fake.took_effect == 1, f"{operation} was never reached"
    assert "failed" not in outcomes(report), report["actions"]
    assert "NotificationLost" not in [e["code"] for e in report["errors"]]
    inbox.check()
    # Lambda's retry of the same event (the same request id) sends nothing the first attempt sent.
    invoke(world, event, deps, context)
    inbox.check()
    if not operation.startswith("dynamodb."):
        # The task, service and notification writes: the request that took effect is never sent
        # again, by a botocore retry, the same invocation or Lambda's retry of it. (The ledger's
        # writes are conditional, their repeat is refused by their condition: not asserted here.)
        assert fake.repeated == 0, f"{operation}'s request that took effect was sent again"
    ticks = settle(world, target, arn, pre)
    finish_the_drain(world, target, pre)
    fault.outcome(
        f"{'/'.join(outcomes(report)) or 'no step'}; consistent after {ticks} tick(s); capacity back to {pre}"
    )


def _suspect() -> SuspectWorkerDetail:
    now = datetime.now(UTC)
    return SuspectWorkerDetail(
        environment="faults",
        agent_service="agents",
        log_stream="agent/agent/0123456789abcdef",
        task_id="0123456789abcdef",
        alarm_name="faults-tts-reach",
        p_value=0.001,
        window=TimeWindow(start=now - timedelta(minutes=30), end=now),
        incident_id="faults.tts-reach.1",
    )


@pytest.mark.parametrize("fault_kind", list(Ambiguous), ids=[f.name.lower() for f in Ambiguous])
def test_a_suspect_worker_event_that_may_have_landed_is_put_once(
    fault: FaultRecorder, fault_kind: Ambiguous
) -> None:
    """The responder's put (``put_at_most_once`` under its once-guard) on the bus, counted at a
    queue the bus delivers to; then Lambda's retry of the same event (the same once-key)."""
    fault.describe(f"events.PutEvents {fault_kind.value}", "tts_reach_alarm")
    from moto import mock_aws

    with mock_aws():
        queue = _bus_to_queue()
        _once_table()
        client = aws_client(budgets.SUSPECT_EVENT_PUT)
        fake = TookEffect(client, "eventbridge.PutEvents", fault_kind)
        publisher, guard, detail = (
            EventBridgePublisher("default", client),
            DynamoDBOnceGuard("once"),
            _suspect(),
        )
        key = {"alarm": "faults-tts-reach", "transition": "1", "action": "suspect-worker"}
        with fault.timed():
            first, replayed = guard.run_once(key, lambda: put_at_most_once(publisher, detail))
        again, replayed_again = guard.run_once(key, lambda: put_at_most_once(publisher, detail))
        assert fake.took_effect == 1
        assert first.get("unknown"), first  # recorded as unknown, not failed
        assert (replayed, replayed_again) == (False, True)
        assert again == first
        delivered = _drain_queue(queue)
        assert len(delivered) == 1, "the event went out once, never twice"
        assert json.loads(delivered[0])["detail"]["incident_id"] == detail.incident_id
    fault.outcome("unknown, recorded under its once-key; on the bus once, also after a retry")


def _once_table() -> None:
    boto3.client("dynamodb").create_table(
        TableName="once",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def _bus_to_queue() -> str:
    sqs, events = boto3.client("sqs"), boto3.client("events")
    url = sqs.create_queue(QueueName="suspects")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="suspects", EventPattern=json.dumps({"source": [{"prefix": ""}]}))
    events.put_targets(Rule="suspects", Targets=[{"Id": "queue", "Arn": arn}])
    return url


def _drain_queue(url: str) -> list[str]:
    sqs, bodies = boto3.client("sqs"), []
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in batch:
            bodies.append(message["Body"])
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return bodies


def _iam_write_actions() -> set[str]:
    """The writes the stacks grant the three functions (the constants their CDK constructs use, and
    the grants the constructs name inline: sns:Publish, events:PutEvents)."""
    granted = {
        *ECS_TASK_CHANGE_ACTIONS,
        *ECS_TASK_TAG_ACTIONS,
        *ECS_SERVICE_ACTIONS,
        *LEDGER_ACTIONS,
        *OUTBOX_ACTIONS,
    }
    granted |= {"sns:Publish", "events:PutEvents", "dynamodb:BatchWriteItem"}
    reads = ("Describe", "Get", "List", "Query", "Scan", "BatchGet")
    return {action for action in granted if not action.split(":")[1].startswith(reads)}


def test_every_livekit_side_effect_has_its_rows() -> None:
    """The reaper's fault suite holds the three ambiguous faults (``devkit.fault_proxy``: a 5xx after
    the server acted, a reset after it answered, a hang after it answered) for every RoomService
    call that changes something."""
    changing = {
        name for name in vars(RoomService) if not name.startswith(("_", "list_")) and name != "aclose"
    }
    assert changing == {"delete_room", "update_room_metadata", "send_data"}
    on_delete = {kind for kind, _, _, _ in DELETE_FAULTS}
    assert set(AMBIGUOUS) <= on_delete
    assert len(AMBIGUOUS) == 3


def test_every_side_effect_has_its_rows() -> None:
    """Every call the code can make that changes something, and every write the IAM policies grant,
    has its three ambiguous-fault rows here (or is a grant the code never calls)."""
    service_of = {"ecs": "ecs", "dynamodb": "dynamodb", "sns": "sns", "eventbridge": "events"}
    rows = {action for action, _, _ in SIDE_EFFECT_ROWS} | set(EVENT_ROWS)
    called = {
        f"{service_of[service]}:{operation}" for service, ops in SIDE_EFFECTS.items() for operation in ops
    }
    assert called - rows == set(), "side-effecting calls without fault rows"
    assert _iam_write_actions() - rows - GRANTED_NOT_CALLED == set(), "granted writes without fault rows"
    assert len(list(Ambiguous)) == 3


def _action_event() -> ActionEvent:
    return ActionEvent(
        id=event_id("worker_drainer", "faults-request", "cordon"),
        environment="faults",
        function="worker_drainer",
        version="0.2.0",
        invocation_id="faults-request",
        mode="enforce",
        kind=ActionKind.ACTION,
        resource="0123456789abcdef0123456789abcdef",
        action="cordon",
        outcome="done",
        reason="slow inference on this worker only",
        at=datetime(2026, 9, 15, 17, 36, tzinfo=UTC),
    )


@pytest.mark.parametrize("fault_kind", list(Ambiguous), ids=[f.name.lower() for f in Ambiguous])
def test_an_action_event_that_may_have_landed_is_put_once(
    fault: FaultRecorder, fault_kind: Ambiguous
) -> None:
    """The pipeline's action-event stage (``announce``: one attempt, under the invocation's
    once-key) on the bus, counted at a queue the bus delivers to; then Lambda's retry of the same
    invocation."""
    fault.describe(f"events.PutEvents (action event) {fault_kind.value}", "every function")
    from moto import mock_aws

    with mock_aws():
        queue = _bus_to_queue()
        _once_table()
        client = aws_client(budgets.ACTION_EVENTS_PUT)
        fake = TookEffect(client, "eventbridge.PutEvents", fault_kind)
        sink, guard = EventBridgeActionEvents("default", client), DynamoDBOnceGuard("once")
        reports = [ReportBuilder("worker_drainer", "faults-request") for _ in range(2)]
        with fault.timed():
            announce(reports[0], [_action_event()], sink, guard)
        announce(reports[1], [_action_event()], sink, guard)
        first, retried = (report.summary["action_events"] for report in reports)
        assert fake.took_effect == 1
        assert (first["sent"], first["unknown"], first["failed"]) == (0, 1, 0), first
        assert retried["replayed"] is True
        delivered = _drain_queue(queue)
        assert len(delivered) == 1, "the event went out once, never twice"
        assert json.loads(delivered[0])["detail"]["id"] == _action_event().id
    fault.outcome("unknown, recorded under the invocation's once-key; on the bus once, also after a retry")
