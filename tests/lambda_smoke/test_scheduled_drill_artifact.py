"""The scheduled drill's deploy artifact, run as Lambda runs it.

The example ``staging`` with a weekly drill (``drills.schedule``: tts-silence, one minute) is
synthesized offline from the checkout; the ``scheduled_drill`` function's code asset, layers, handler
string and environment come from that template, and it runs under AWS's Lambda Runtime Interface
Emulator with ``awslambdaric``, invoked over the Invoke API with the event its own schedule rule
sends. AWS is moto in server mode on loopback: the template's stores and switches, and the agents'
ECS service, first with no running task, then with two. In its own dry run it names a task; then,
its switch set to enforce and started cold, it carries out a whole drill: it marks one task, watches
the product's record for the drill's minute (nothing here answers: no drainer runs), takes the mark
off and says the verdict, fail, in its report and on the topic.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from devkit.aws_standins import AwsStandIns, loopback_aws
from devkit.lambda_artifact import FunctionArtifact, synthesize
from devkit.lambda_emulator import (
    RIE_FUNCTION_ACCOUNT,
    RIE_FUNCTION_REGION,
    EmulatedFunction,
    emulated_from_template,
)
from fleet_remediation.contract.drills import DRILL_TAG
from fleet_remediation.contract.naming import FunctionName, function_log_group_name
from livekit_fleet_remediation.offline.eventbridge_events import schedule_event
from tests.example_environments import staging_with_drills

ENV_NAME = "staging"
DRILL = {"enabled": True, "schedule": {"fault": "tts-silence", "minutes": 1}}
INVOKE_TIMEOUT_SECONDS = 30.0
RIE_START_TIMEOUT_SECONDS = 10.0
PYTHON_OPTIONS = ("-W", "error::DeprecationWarning", "-W", "error::PendingDeprecationWarning")


@dataclass
class EnforcedDrill:
    """The drill carried out: its report, the tasks seen carrying the drill tag while it watched (read
    every second from outside), the tags left afterwards and what the topic delivered."""

    report: dict[str, Any]
    marked_while_watching: set[str]
    tags_after: list[str]
    published: list[str]
    took_seconds: float


@dataclass
class DrillRuns:
    """The function's reports in its own dry run, invoked in this order: with no running task, with a
    stale event, and with two running tasks; the drill tags on those tasks afterwards; then the drill
    carried out in enforce."""

    function: FunctionArtifact
    no_task: dict[str, Any]
    stale: dict[str, Any]
    dry_run: dict[str, Any]
    drill_tags: list[str]
    enforced: EnforcedDrill


def _invoke(
    emulated: EmulatedFunction, event: dict[str, Any], timeout: float = INVOKE_TIMEOUT_SECONDS
) -> dict[str, Any]:
    invocation = emulated.invoke(event, timeout=timeout)
    assert invocation.status_code == 200, emulated.log_tail()
    assert invocation.function_error is None, invocation.body
    report: dict[str, Any] = invocation.body
    return report


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DrillRuns]:
    workdir = tmp_path_factory.mktemp("scheduled-drill-smoke")
    config = workdir / "environments.json"
    config.write_text(json.dumps(staging_with_drills(DRILL)))
    assembly = synthesize(ENV_NAME, workdir / "cdk.out", config=config)
    (function,) = [f for f in assembly.functions() if f.package == "scheduled_drill"]
    (rule,) = assembly.schedule_rules(function)
    env = function.environment
    with contextlib.ExitStack() as stack:
        endpoint, xray_address = stack.enter_context(loopback_aws())
        # Started tasks stay RUNNING (moto otherwise moves a task one lifecycle step per DescribeTasks).
        requests.post(
            f"{endpoint}/moto-api/state-manager/set-transition",
            json={"model_name": "ecs::task", "transition": {"progression": "manual", "times": 1_000_000}},
            timeout=5,
        ).raise_for_status()
        standins = AwsStandIns(endpoint_url=endpoint, region=RIE_FUNCTION_REGION)
        standins.create_referenced(assembly, [function])
        standins.create_parameters(assembly)
        standins.create_ecs_service(env["ECS_CLUSTER"], env["ECS_SERVICE"])
        emulated = _cold_start(standins, function, workdir, "dry-run", xray_address)
        stack.callback(emulated.stop)
        rule_name = f"{assembly.stack_name}-{rule}"

        def event(at: datetime | None = None) -> dict[str, Any]:
            return schedule_event(rule_name, account=RIE_FUNCTION_ACCOUNT, region=RIE_FUNCTION_REGION, now=at)

        no_task = _invoke(emulated, event())
        stale = _invoke(emulated, event(datetime.now(UTC) - timedelta(minutes=30)))
        ecs = standins.client("ecs")
        (family,) = ecs.list_task_definitions(familyPrefix=env["ECS_SERVICE"])["taskDefinitionArns"]
        tasks = ecs.run_task(
            cluster=env["ECS_CLUSTER"],
            taskDefinition=family,
            count=2,
            launchType="FARGATE",
            group=f"service:{env['ECS_SERVICE']}",
        )["tasks"]
        dry_run = _invoke(emulated, event())
        arns = [task["taskArn"] for task in tasks]
        drill_tags = _drill_tags(ecs, arns)
        emulated.stop()
        enforced = _enforced_drill(standins, function, workdir, event(), arns, xray_address)
        yield DrillRuns(function, no_task, stale, dry_run, drill_tags, enforced)


def _cold_start(
    standins: AwsStandIns, function: FunctionArtifact, workdir: Path, mode: str, xray_address: str
) -> EmulatedFunction:
    """The function started in ``mode`` (its own switch, set before the start: a warm function keeps
    the switch it read)."""
    standins.client("ssm").put_parameter(
        Name=function.environment["FUNCTION_MODE_PARAMETER_NAME"], Value=mode, Overwrite=True
    )
    emulated = emulated_from_template(
        function,
        standins.resolve(function, {}),
        workdir,
        f"scheduled_drill_{mode}",
        region=RIE_FUNCTION_REGION,
        xray_daemon_address=xray_address,
        aws_endpoint_url=standins.endpoint_url,
        python_options=PYTHON_OPTIONS,
    )
    return emulated.start(RIE_START_TIMEOUT_SECONDS)


def _drill_tags(ecs: Any, task_arns: list[str]) -> list[str]:
    return [
        t["value"]
        for arn in task_arns
        for t in ecs.list_tags_for_resource(resourceArn=arn)["tags"]
        if t["key"] == DRILL_TAG
    ]


def _enforced_drill(
    standins: AwsStandIns,
    function: FunctionArtifact,
    workdir: Path,
    event: dict[str, Any],
    task_arns: list[str],
    xray_address: str,
) -> EnforcedDrill:
    """A cold start in enforce, one schedule event; the drainer's log group exists and is empty, and
    a queue subscribed to the topic keeps what is published."""
    env = function.environment
    standins.create_log_group(
        function_log_group_name(ENV_NAME, FunctionName.WORKER_DRAINER, env["DRILLED_SERVICE"])
    )
    sqs, sns = standins.client("sqs"), standins.client("sns")
    queue = sqs.create_queue(QueueName="published")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    for topic in sns.list_topics()["Topics"]:
        sns.subscribe(TopicArn=topic["TopicArn"], Protocol="sqs", Endpoint=queue_arn)
    emulated = _cold_start(standins, function, workdir, "enforce", xray_address)
    try:
        answer: dict[str, Any] = {}
        started = time.monotonic()
        call = threading.Thread(
            target=lambda: answer.update(
                report=_invoke(emulated, event, timeout=function.timeout_seconds + INVOKE_TIMEOUT_SECONDS)
            )
        )
        call.start()
        ecs, marked = standins.client("ecs"), set()
        while call.is_alive():
            marked |= {arn for arn in task_arns if _drill_tags(ecs, [arn])}
            call.join(timeout=1.0)
        took = time.monotonic() - started
    finally:
        emulated.stop()
    published = [
        json.loads(m["Body"])["Message"]
        for m in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
    ]
    return EnforcedDrill(answer["report"], marked, _drill_tags(ecs, task_arns), published, took)


def test_with_no_running_task_the_drill_is_refused_and_the_refusal_is_its_report(runs: DrillRuns) -> None:
    report = runs.no_task
    assert report["function"] == "scheduled_drill"
    assert report["environment"] == ENV_NAME
    assert report["trigger"]["kind"] == "schedule"
    assert [e["code"] for e in report["errors"]] == ["NoTaskToDrill"], report["errors"]
    assert report["actions"] == []


def test_an_event_older_than_its_route_admits_is_refused_at_the_door(runs: DrillRuns) -> None:
    assert [e["code"] for e in runs.stale["errors"]] == ["UntrustedEvent"], runs.stale["errors"]
    assert "stale" in runs.stale["errors"][0]["message"]
    assert runs.stale["actions"] == []


def test_in_its_own_dry_run_it_names_the_task_it_would_drill_and_tags_nothing(runs: DrillRuns) -> None:
    report = runs.dry_run
    assert report["errors"] == []
    assert report["mode"] == "dry-run"
    assert [c["decision"] for c in report["candidates"]] == ["would-act"], report["candidates"]
    assert report["actions"] == []
    assert runs.drill_tags == []


def test_in_enforce_it_marks_one_task_watches_its_minute_unmarks_it_and_says_fail(runs: DrillRuns) -> None:
    drill = runs.enforced
    report = drill.report
    assert report["mode"] == "enforce"
    assert report["errors"] == [], report["errors"]
    summary = report["summary"]
    assert (summary["fault"], summary["verdict"], summary["marker_removed"]) == ("tts-silence", "fail", True)
    assert summary["answered_after_seconds"] is None
    assert summary["missed_polls"] == 0
    assert [(a["action"], a["outcome"]) for a in report["actions"]] == [
        ("drill-mark", "done"),
        ("drill-unmark", "done"),
    ], report["actions"]
    assert {a["resource"] for a in report["actions"]} == {summary["task"]}
    assert drill.marked_while_watching == {summary["task"]}
    assert drill.tags_after == []
    # It ends the drill by itself at the marker's end, before Lambda's timeout would.
    assert drill.took_seconds < runs.function.timeout_seconds, drill.took_seconds


def test_the_verdict_is_told_on_the_topic(runs: DrillRuns) -> None:
    task_id = runs.enforced.report["summary"]["task"].rsplit("/", 1)[-1]
    (message,) = runs.enforced.published
    assert message.startswith(
        f"scheduled drill FAILED: tts-silence on task {task_id}, no answer from worker_drainer in 1 min\n"
    ), message
    assert "- marker removed\n" in message
