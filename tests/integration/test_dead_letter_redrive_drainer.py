"""Dead letters of the worker drainer, end to end: a parked VAD alarm event (an EventBridge rule's
undeliverable target) is re-run by ``lkfr redrive`` as the drainer's ``plan`` through the drainer's
own handler, in the drainer's test world (moto ECS with its task-protection and managed-tags fakes,
a real livekit-server), and the message is gone once the plan's report came back ok. A plan never
acts: the degraded task it would cordon stays untouched, and the drainer's own tick does the work."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.moto_api import state_manager

from devkit.fakes.drainer_world import DrainerWorld, alarm_event, build_world
from devkit.livekit_local import LocalLiveKit
from livekit_fleet_remediation.cli import redrive
from livekit_fleet_remediation.cli.invoke import InvokeResult
from tests.dead_letters import deployed_function, with_dead_letter_config
from worker_drainer.decide.task_tags import STATE_TAG

pytestmark = pytest.mark.livekit

FUNCTION = "lkfr-it-agents-worker-drainer"
RULE_FAILURE = {
    "ERROR_CODE": {"DataType": "String", "StringValue": "SDK_CLIENT_ERROR"},
    "ERROR_MESSAGE": {"DataType": "String", "StringValue": "Rate exceeded"},
    "RULE_ARN": {"DataType": "String", "StringValue": "arn:aws:events:eu-west-1:123456789012:rule/vad"},
}


@pytest.fixture
def world(livekit_server: LocalLiveKit) -> Iterator[DrainerWorld]:
    # moto moves a described task one lifecycle step per DescribeTasks by default; keep them RUNNING.
    state_manager.set_transition("ecs::task", {"progression": "manual", "times": 1_000_000})
    try:
        with mock_aws():
            yield build_world(livekit_server, datetime.now(UTC) + timedelta(hours=2))
    finally:
        state_manager.unset_transition("ecs::task")


def test_a_parked_alarm_is_re_run_as_a_plan_and_then_gone(world: DrainerWorld) -> None:
    bad = world.task_ids[0]
    world.slow(bad, count=240, minutes=25)
    sqs = boto3.client("sqs")
    dlq_url = sqs.create_queue(QueueName=f"{FUNCTION}-dead-letters")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    deployed_function(FUNCTION, dlq_arn, timeout_seconds=150)
    sqs.send_message(QueueUrl=dlq_url, MessageBody=json.dumps(alarm_event()), MessageAttributes=RULE_FAILURE)
    reports: list[dict[str, Any]] = []

    def drainer_in_process(event: dict[str, Any]) -> InvokeResult:
        reports.append(json.loads(json.dumps(world.invoke(json.loads(json.dumps(event))))))
        return InvokeResult(report=reports[-1])

    printed: list[str] = []
    session = with_dead_letter_config(FUNCTION, dlq_arn)
    status = redrive.main(
        ["--function", FUNCTION, "--apply", "--enforce"], drainer_in_process, printed.append, session
    )

    assert status == 0, printed
    assert "eventbridge rule (SDK_CLIENT_ERROR)" in printed[1]
    assert "alarm livekit-it-agents-vad-slow-inference ALARM" in printed[1]
    assert printed[1].endswith("ok; deleted")
    (plan,) = reports
    assert plan["mode"] == "dry-run"
    assert plan["trigger"]["kind"] == "manual"
    assert plan["actions"] == []
    assert next(c for c in plan["candidates"] if c["resource"] == bad)["decision"] == "would-act"
    assert STATE_TAG not in world.tags(bad)
    remaining = sqs.get_queue_attributes(
        QueueUrl=dlq_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    assert remaining == {"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0"}
