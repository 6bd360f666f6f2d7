"""The scheduled drill end to end on moto: a schedule event of ours starts one drill on one running
task of the service (the marker the agents' drill hook reads), the function watches the product's
own record (the drainer's reports in its log group, its ledger) until the answer or the marker's
end, takes the marker off, and tells the verdict as action events and one message; a refusal
(not named for drills, remediation off, outside the window, a second drill, the door's) changes
nothing and is a message too. The waits run on a simulated clock."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from fleet_remediation.contract.action_events import ActionEvent
from fleet_remediation.contract.agent_services import DEFAULT_AGENT_SERVICE
from fleet_remediation.contract.budgets import (
    ANNOUNCE_SECONDS,
    DRILL_POLL_SECONDS,
    NOTIFICATION_BUDGET_SECONDS,
    REPORT_MARGIN_SECONDS,
)
from fleet_remediation.contract.drills import DRILL_TAG, DrillFault, DrillMarker
from fleet_remediation.contract.naming import (
    DrillFunctionName,
    function_mode_parameter_name,
    mode_parameter_name,
    service_mode_parameter_name,
)
from fleet_remediation.contract.settings import ScheduledDrillSettings
from fleet_remediation.core.announce import Announced
from fleet_remediation.core.incidents import run_incident_id
from fleet_remediation.core.report_model import Mode
from livekit_fleet_remediation.offline.fixed_mode import FixedModeSwitch
from livekit_fleet_remediation.offline.lambda_context import LOCAL_ACCOUNT, LocalLambdaContext, local_region
from scheduled_drill.dependencies import DrillClients, DrillDependencies
from scheduled_drill.handler import lambda_handler
from scheduled_drill.work import AFTER_WATCH_SECONDS
from tests.drilled_fleet import CLUSTER, SERVICE, SimulatedClock, drainer_answers, running_fleet

ENV = "staging"
TABLE = "staging-drainer-ledger"


class Recorded:
    """What the function sent: its action events and its messages."""

    def __init__(self) -> None:
        self.events: list[ActionEvent] = []
        self.messages: list[tuple[str, str]] = []

    def put(self, events: list[ActionEvent]) -> Announced:
        self.events += events
        return Announced(sent=len(events))

    def publish(self, subject: str, message: str, attributes: dict[str, str] | None = None) -> str:
        self.messages.append((subject, message))
        return f"message-{len(self.messages)}"


@pytest.fixture
def fleet() -> Iterator[list[str]]:
    with running_fleet(ENV, TABLE) as tasks:
        yield tasks


def settings(**drills: Any) -> ScheduledDrillSettings:
    return ScheduledDrillSettings.model_validate(
        {
            "environment_name": ENV,
            "mode_parameter_name": mode_parameter_name(ENV),
            "function_mode_parameter_name": function_mode_parameter_name(
                ENV, DrillFunctionName.SCHEDULED_DRILL
            ),
            "notification_topic_arn": f"arn:aws:sns:{local_region()}:{LOCAL_ACCOUNT}:notify",
            "runbook_base_url": "https://docs.example.com",
            "drill": {"fault": "tts-silence", "minutes": 3, "poll_seconds": 30},
            "drills_enabled": True,
            "drilled_service": DEFAULT_AGENT_SERVICE,
            "ecs_cluster": CLUSTER,
            "ecs_service": SERVICE,
            "ledger_table_name": TABLE,
            **drills,
        }
    )


def dependencies(clock: SimulatedClock, sent: Recorded, **drills: Any) -> DrillDependencies:
    clients = DrillClients(
        boto3.client("ssm"),
        boto3.client("ecs"),
        boto3.client("ecs"),
        boto3.client("logs"),
        boto3.client("dynamodb"),
    )
    return DrillDependencies(
        settings=settings(**drills),
        mode_switch=FixedModeSwitch(Mode.ENFORCE),
        notifier=sent,
        clients=clients,
        action_events=sent,
        clock=lambda: clock.now,
        sleep=clock.sleep,
    )


def schedule_event(at: datetime, account: str = LOCAL_ACCOUNT) -> dict[str, Any]:
    region = local_region()
    return {
        "version": "0",
        "id": "weekly",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": account,
        "time": at.isoformat().replace("+00:00", "Z"),
        "region": region,
        "resources": [f"arn:aws:events:{region}:{account}:rule/lkfr-staging-drill"],
        "detail": {},
    }


def drill(clock: SimulatedClock, sent: Recorded, **drills: Any) -> dict[str, Any]:
    deps = dependencies(clock, sent, **drills)
    return lambda_handler(schedule_event(clock.now), LocalLambdaContext(), dependencies=deps)


def marked(fleet: list[str]) -> dict[str, str]:
    ecs = boto3.client("ecs")
    tags = {arn: ecs.list_tags_for_resource(resourceArn=arn)["tags"] for arn in fleet}
    return {arn: t["value"] for arn, listed in tags.items() for t in listed if t["key"] == DRILL_TAG}


def test_a_scheduled_drill_marks_one_task_and_passes_when_the_drainer_answers(fleet: list[str]) -> None:
    clock, sent = SimulatedClock(), Recorded()
    seen_marks: list[dict[str, str]] = []

    def on_sleep(sleeps: int) -> None:
        seen_marks.append(marked(fleet))
        if sleeps == 1:
            (task,) = seen_marks[0]
            drainer_answers(ENV, task, Mode.ENFORCE)

    clock.on_sleep = on_sleep
    report = drill(clock, sent)

    ((task, value),) = seen_marks[0].items()
    marker = DrillMarker.parse(value, clock.now.timestamp())
    assert marker is not None
    assert marker.fault is DrillFault.TTS_SILENCE
    assert marked(fleet) == {}, "the marker comes off"
    assert report["summary"]["verdict"] == "pass"
    assert report["summary"]["marker_removed"] is True
    assert [(a["action"], a["outcome"]) for a in report["actions"]] == [
        ("drill-mark", "done"),
        ("drill-unmark", "done"),
    ]
    # Its own two as it goes (as `lkfr drill` sends them), then the report's journal like any action's.
    assert [(e.function, e.action, e.outcome) for e in sent.events] == [
        ("scheduled_drill", "drill-start", "started"),
        ("scheduled_drill", "drill-verdict", "pass"),
        ("scheduled_drill", "drill-mark", "done"),
        ("scheduled_drill", "drill-unmark", "done"),
    ]
    assert all(e.resource == task for e in sent.events)
    assert {e.agent_service for e in sent.events} == {DEFAULT_AGENT_SERVICE}, "each names the drilled service"
    ((subject, text),) = sent.messages
    assert "scheduled drill passed: tts-silence" in subject
    assert "worker_drainer acted cordon" in text


def test_a_scheduled_drill_nobody_answers_fails_at_the_markers_end_and_still_unmarks(
    fleet: list[str],
) -> None:
    clock, sent = SimulatedClock(), Recorded()
    report = drill(clock, sent)

    assert sum(clock.slept) == pytest.approx(180, abs=1), "it watches the marker's three minutes"
    assert marked(fleet) == {}
    assert report["summary"]["verdict"] == "fail"
    assert [e.outcome for e in sent.events if e.action == "drill-verdict"] == ["fail"]
    ((subject, text),) = sent.messages
    assert "scheduled drill FAILED: tts-silence" in subject
    assert "no answer from worker_drainer in 3 min" in text


def test_the_drainers_ledger_answers_too(fleet: list[str]) -> None:
    clock, sent = SimulatedClock(), Recorded()

    def on_sleep(sleeps: int) -> None:
        if sleeps == 1:
            (task,) = marked(fleet)
            at = (clock.now - timedelta(seconds=5)).isoformat()
            item = {"pk": f"task#{task.rsplit('/', 1)[1]}", "sk": f"audit#{at}#inv-1#cordon"}
            item |= {"action": "cordon", "outcome": "done", "reason": "cordoned"}
            boto3.client("dynamodb").put_item(TableName=TABLE, Item={k: {"S": v} for k, v in item.items()})

    clock.on_sleep = on_sleep
    report = drill(clock, sent)
    assert report["summary"]["verdict"] == "pass"
    assert report["summary"]["timeline"][0].endswith(
        "worker_drainer acted cordon " + report["summary"]["task"].rsplit("/", 1)[1]
    )


def switch(name: str, value: str) -> None:
    boto3.client("ssm").put_parameter(Name=name, Value=value, Type="String", Overwrite=True)


@pytest.mark.parametrize(
    ("case", "code"),
    [
        ("not-enabled", "DrillNotAllowed"),
        ("off", "DrillNotAllowed"),
        ("window", "DrillHeld"),
        ("second", "DrillRunning"),
    ],
)
def test_a_drill_it_may_not_run_is_refused_with_a_message_and_marks_nothing(
    fleet: list[str], case: str, code: str
) -> None:
    clock, sent = SimulatedClock(), Recorded()
    drills: dict[str, Any] = {}
    if case == "not-enabled":
        drills["drills_enabled"] = False
    elif case == "off":
        switch(service_mode_parameter_name(ENV, DEFAULT_AGENT_SERVICE), "off")
    elif case == "window":
        closed = (clock.now + timedelta(hours=3)).strftime("%H:00")
        drills["disruption_window"] = {
            "start": closed,
            "end": (clock.now + timedelta(hours=4)).strftime("%H:00"),
        }
    else:
        other = DrillMarker(DrillFault.CPU_STARVED, int(clock.now.timestamp()) + 600, "other-drill")
        boto3.client("ecs").tag_resource(
            resourceArn=fleet[0], tags=[{"key": DRILL_TAG, "value": other.value()}]
        )
    before = marked(fleet)

    report = drill(clock, sent, **drills)

    assert [e["code"] for e in report["errors"]] == [code]
    assert marked(fleet) == before, "nothing is marked or unmarked"
    assert report["actions"] == []
    assert clock.slept == []
    assert [e.kind for e in sent.events] == [], "a refusal before any change sends no action event"
    ((subject, _),) = sent.messages
    assert f"scheduled drill refused: {code}" in subject


def test_in_a_dry_run_environment_it_drills_and_judges_what_the_drainer_would_have_done(
    fleet: list[str],
) -> None:
    switch(mode_parameter_name(ENV), "dry-run")
    clock, sent = SimulatedClock(), Recorded()
    report = drill(clock, sent)
    assert report["summary"]["drilled_mode"] == "dry-run"
    assert [e.mode for e in sent.events if e.action == "drill-start"] == ["dry-run"]
    assert marked(fleet) == {}


def test_its_own_switch_in_dry_run_says_which_task_it_would_drill_and_marks_nothing(fleet: list[str]) -> None:
    clock, sent = SimulatedClock(), Recorded()
    deps = dependencies(clock, sent)
    deps.mode_switch = FixedModeSwitch(Mode.DRY_RUN)
    report = lambda_handler(schedule_event(clock.now), LocalLambdaContext(), dependencies=deps)
    assert [c["decision"] for c in report["candidates"]] == ["would-act"]
    assert report["actions"] == []
    assert marked(fleet) == {}
    ((subject, _),) = sent.messages
    assert "DRY RUN - would have drilled task" in subject


@pytest.mark.parametrize(
    ("event", "said"),
    [
        (lambda at: schedule_event(at, account="999999999999"), "ours is 123456789012"),
        (lambda at: schedule_event(at - timedelta(minutes=30)), "stale"),
        (lambda at: {**schedule_event(at), "detail": {"fault": "cpu-starved"}}, "detail is empty"),
        (lambda at: {**schedule_event(at), "time": 1700000000}, "ISO 8601"),
    ],
)
def test_the_door_refuses_an_event_not_ours_and_nothing_is_read_or_changed(
    fleet: list[str], event: Callable[[datetime], dict[str, Any]], said: str
) -> None:
    clock, sent = SimulatedClock(), Recorded()
    report = lambda_handler(event(clock.now), LocalLambdaContext(), dependencies=dependencies(clock, sent))
    ((error,),) = [report["errors"]]
    assert said in error["message"]
    assert report["actions"] == []
    assert marked(fleet) == {}
    assert sent.events == []
    assert sent.messages == []


def test_the_watch_fits_one_lambda_invocation() -> None:
    assert settings().timeout_seconds < 900
    assert settings(drill={"minutes": 12, "poll_seconds": 5}).timeout_seconds <= 900
    with pytest.raises(ValueError, match="minutes"):
        settings(drill={"minutes": 13})
    assert json.loads(json.dumps(settings().to_lambda_environment()))["DRILL"]


class FailingMarker:
    """The marker's ECS client, refusing the call named ``failing`` (the rest go to moto)."""

    def __init__(self, failing: str) -> None:
        self.ecs, self.failing = boto3.client("ecs"), failing

    def __getattr__(self, name: str) -> Any:
        if name == self.failing:
            return self._refuse
        return getattr(self.ecs, name)

    def _refuse(self, **_: Any) -> None:
        error = {"Error": {"Code": "AccessDeniedException", "Message": "not allowed"}}
        raise ClientError(error, self.failing)


def test_a_marker_that_cannot_come_off_is_said_in_the_verdict_with_the_command(fleet: list[str]) -> None:
    clock, sent = SimulatedClock(), Recorded()
    deps = dependencies(clock, sent)
    deps.clients.marker = FailingMarker("untag_resource")
    report = lambda_handler(schedule_event(clock.now), LocalLambdaContext(), dependencies=deps)

    assert report["summary"]["marker_removed"] is False
    assert [(a["action"], a["outcome"]) for a in report["actions"]] == [
        ("drill-mark", "done"),
        ("drill-unmark", "failed"),
    ]
    ((_subject, text),) = sent.messages
    assert "marker NOT removed" in text
    assert "aws ecs untag-resource --resource-arn" in text
    assert len(marked(fleet)) == 1, "moto's task still carries it: it ends at its until second"


def test_a_marker_that_cannot_be_written_is_a_drill_that_failed_to_start_and_is_still_taken_off(
    fleet: list[str],
) -> None:
    clock, sent = SimulatedClock(), Recorded()
    deps = dependencies(clock, sent)
    deps.clients.marker = FailingMarker("tag_resource")
    report = lambda_handler(schedule_event(clock.now), LocalLambdaContext(), dependencies=deps)

    assert [e["code"] for e in report["errors"]] == ["DrillNotStarted"]
    assert [(a["action"], a["outcome"]) for a in report["actions"]] == [
        ("drill-mark", "unknown"),
        ("drill-unmark", "done"),
    ]
    assert clock.slept == []
    assert marked(fleet) == {}
    assert [e.action for e in sent.events if e.action in ("drill-start", "drill-verdict")] == []
    ((subject, _),) = sent.messages
    assert "scheduled drill failed: DrillNotStarted" in subject


def test_a_manual_invoke_is_a_dry_run_whose_message_stays_in_its_report(fleet: list[str]) -> None:
    clock, sent = SimulatedClock(), Recorded()
    report = lambda_handler({}, LocalLambdaContext(), dependencies=dependencies(clock, sent))
    assert report["mode"] == "dry-run"
    assert report["summary"]["would_notify"]["subject"].startswith(
        "[staging/agents] DRY RUN - would have drilled"
    )
    assert marked(fleet) == {}
    assert sent.messages == []


class UnreadableRecord:
    """The reports' log group, refusing every read."""

    def filter_log_events(self, **_: Any) -> None:
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "FilterLogEvents")


def test_a_record_it_cannot_read_is_each_poll_missed_counted_and_its_error_noted_once(
    fleet: list[str],
) -> None:
    clock, sent = SimulatedClock(), Recorded()
    deps = dependencies(clock, sent)
    deps.clients.logs = UnreadableRecord()
    report = lambda_handler(schedule_event(clock.now), LocalLambdaContext(), dependencies=deps)

    polls = len(clock.slept) + 1
    assert polls == 7, "every 30 s over the marker's three minutes"
    assert report["summary"]["verdict"] == "fail"
    assert report["summary"]["missed_polls"] == polls
    assert [e["message"] for e in report["errors"]] == [
        "CloudWatch Logs FilterLogEvents failed: AccessDeniedException: no"
    ]
    ((_subject, text),) = sent.messages
    assert f"{polls} read(s) of the record failed" in text
    assert marked(fleet) == {}
    drill_events = [e for e in sent.events if e.action in ("drill-start", "drill-verdict")]
    assert [e.agent_service for e in drill_events] == [DEFAULT_AGENT_SERVICE] * 2


def test_a_drill_whose_invocation_has_no_time_for_another_poll_reads_once_and_still_unmarks(
    fleet: list[str],
) -> None:
    # Twelve seconds short of the report's reserve, the unmarking, the verdict and one more poll.
    reserved = REPORT_MARGIN_SECONDS + NOTIFICATION_BUDGET_SECONDS + ANNOUNCE_SECONDS
    remaining = reserved + AFTER_WATCH_SECONDS + DRILL_POLL_SECONDS - 12
    clock, sent = SimulatedClock(), Recorded()
    deps = dependencies(clock, sent)
    report = lambda_handler(
        schedule_event(clock.now), LocalLambdaContext(int(remaining * 1000)), dependencies=deps
    )
    assert clock.slept == []
    assert (report["summary"]["verdict"], report["summary"]["marker_removed"]) == ("fail", True)
    assert marked(fleet) == {}


def journal_intents(caplog: pytest.LogCaptureFixture, action: str) -> list[dict[str, Any]]:
    """The journal's intents of ``action`` logged so far (entries without an outcome)."""
    return [
        r.journal
        for r in caplog.records
        if getattr(r, "journal", {}).get("action") == action and "outcome" not in r.journal
    ]


def test_the_marks_intent_says_the_drill_and_a_mark_that_failed_keeps_its_error(
    fleet: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    clock, sent = SimulatedClock(), Recorded()
    deps = dependencies(clock, sent)
    deps.clients.marker = FailingMarker("tag_resource")
    report = lambda_handler(schedule_event(clock.now), LocalLambdaContext(), dependencies=deps)

    (intent,) = journal_intents(caplog, "drill-mark")
    task_id = report["summary"]["task"].rsplit("/", 1)[1]
    drill_id = report["summary"]["drill_id"]
    assert intent["reason"] == f"drill {drill_id}: tts-silence on task {task_id} for 3 min"
    (mark,) = [a for a in report["actions"] if a["action"] == "drill-mark"]
    assert mark["error"]["code"] == "DrillNotStarted"


def test_the_watch_reads_once_more_at_the_markers_end_however_little_of_it_is_left(fleet: list[str]) -> None:
    clock, sent = SimulatedClock(), Recorded()
    # The marker ends at the whole second a minute on: after one 59 s wait, less than a second is left.
    clock.now = clock.now.replace(microsecond=500_000)
    drill(clock, sent, drill={"fault": "tts-silence", "minutes": 1, "poll_seconds": 59})
    assert clock.slept == [59.0, pytest.approx(0.5)]


def test_the_unmarks_intent_names_the_drill_and_its_failure_says_when_the_marker_ends(
    fleet: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    clock, sent = SimulatedClock(), Recorded()
    deps = dependencies(clock, sent)
    deps.clients.marker = FailingMarker("untag_resource")
    started = clock.now
    report = lambda_handler(schedule_event(clock.now), LocalLambdaContext(), dependencies=deps)

    drill_id = report["summary"]["drill_id"]
    (intent,) = journal_intents(caplog, "drill-unmark")
    assert intent["reason"] == f"drill {drill_id} ends"
    until = datetime.fromtimestamp(int(started.timestamp()) + 180, UTC).isoformat()
    (unmark,) = [a for a in report["actions"] if a["action"] == "drill-unmark"]
    assert f"it ends by itself at {until}, or: aws ecs untag-resource" in unmark["reason"]


def test_a_marker_taken_off_is_an_unmark_event_without_a_reason(fleet: list[str]) -> None:
    clock, sent = SimulatedClock(), Recorded()
    drill(clock, sent)
    assert [e.reason for e in sent.events if e.action == "drill-unmark"] == [""]


def test_the_verdicts_message_carries_its_mode_counts_own_switch_runbook_and_invocation(
    fleet: list[str],
) -> None:
    clock, sent = SimulatedClock(), Recorded()
    report = drill(clock, sent)
    ((_subject, text),) = sent.messages
    switch_name = function_mode_parameter_name(ENV, DrillFunctionName.SCHEDULED_DRILL)
    for said in (
        "· mode enforce ·",
        f"aws ssm put-parameter --overwrite --name {switch_name} --value off",
        "done 2 · already done 0",
        "Runbook: https://docs.example.com/operations/drill.html",
        f"Invocation {report['invocation_id']} (scheduled_drill)",
    ):
        assert said in text


def test_a_passed_drills_message_is_of_the_scheduled_incident_with_its_regions_links(
    fleet: list[str],
) -> None:
    clock, sent = SimulatedClock(), Recorded()
    scheduled = clock.now

    def on_sleep(sleeps: int) -> None:
        if sleeps == 1:
            (task,) = marked(fleet)
            drainer_answers(ENV, task, Mode.ENFORCE)

    clock.on_sleep = on_sleep
    report = drill(clock, sent, aws_region="eu-west-1")
    ((_subject, text),) = sent.messages
    started = datetime.fromisoformat(report["started_at"].replace("Z", "+00:00")).replace(microsecond=0)
    window_start = started - timedelta(minutes=15)
    for said in (
        "INFO · run completed",
        # Named for the schedule's time, not the verdict's: a redelivered event is the same incident.
        f"Incident {run_incident_id(ENV, DrillFunctionName.SCHEDULED_DRILL, scheduled)}",
        "--value off --region eu-west-1",
        "region=eu-west-1#dashboards/dashboard/livekit-staging-fleet",
        "*2Faws*2Flambda*2Flkfr-staging-scheduled-drill",
        f"{window_start:%Y-%m-%dT%H}*3A{window_start:%M}*3A{window_start:%S}.000Z",
    ):
        assert said in text
    assert text.count(report["invocation_id"]) == 2, "in the report's link and the invocation line"


class UnsureEvents(Recorded):
    """Every put's reply was lost: may have landed, never re-sent."""

    def put(self, events: list[ActionEvent]) -> Announced:
        self.events += events
        return Announced(unknown=len(events), problems=["no reply"])


def test_a_passed_drill_whose_events_may_not_have_landed_is_a_warning_that_says_so(fleet: list[str]) -> None:
    clock, sent = SimulatedClock(), UnsureEvents()

    def on_sleep(sleeps: int) -> None:
        if sleeps == 1:
            (task,) = marked(fleet)
            drainer_answers(ENV, task, Mode.ENFORCE)

    clock.on_sleep = on_sleep
    report = drill(clock, sent)
    assert report["summary"]["verdict"] == "pass"
    ((_subject, text),) = sent.messages
    assert "WARNING · run completed" in text
    assert "the drill-start action event was not surely delivered (no reply)" in text


class BusyRecord:
    """The drainer's reports: one run that undid a task 21 times since the drill began (no answer)."""

    def __init__(self, since: datetime) -> None:
        self.since = since

    def filter_log_events(self, **_: Any) -> dict[str, Any]:
        at = (self.since + timedelta(seconds=1)).isoformat().replace("+00:00", "Z")
        actions = [{"action": "undo", "resource": f"task-{i}", "outcome": "done"} for i in range(21)]
        report = {
            "function": "worker_drainer",
            "invocation_id": "inv-1",
            "started_at": at,
            "actions": actions,
        }
        return {"events": [{"message": json.dumps({"message": "remediation report", "report": report})}]}


def test_the_report_summarises_the_drill_with_a_timeline_of_at_most_twenty_steps(fleet: list[str]) -> None:
    clock, sent = SimulatedClock(), Recorded()
    deps = dependencies(clock, sent)
    deps.clients.logs = BusyRecord(clock.now)
    report = lambda_handler(schedule_event(clock.now), LocalLambdaContext(), dependencies=deps)

    summary = report["summary"]
    task_id = summary["task"].rsplit("/", 1)[1]
    assert summary["task"] in fleet
    assert summary["drill_id"] == f"drill-{int(clock.now.timestamp()) - 180}"
    assert (summary["fault"], summary["drilled_mode"], summary["running_tasks"]) == (
        "tts-silence",
        "enforce",
        3,
    )
    assert (summary["verdict"], summary["answered_after_seconds"], summary["missed_polls"]) == (
        "fail",
        None,
        0,
    )
    assert len(summary["timeline"]) == 20
    assert [c["reason"] for c in report["candidates"]] == [
        f"drill {summary['drill_id']}: tts-silence on task {task_id} for 3 min"
    ]


def test_a_refused_drill_names_the_environment_or_the_service_it_refused(fleet: list[str]) -> None:
    clock, sent = SimulatedClock(), Recorded()
    report = drill(clock, sent, drills_enabled=False)
    assert [e["message"] for e in report["errors"]] == [
        "environment staging is not named for drills: set drills.enabled in its configuration"
    ]
    ecs = boto3.client("ecs")
    for arn in fleet:
        ecs.tag_resource(resourceArn=arn, tags=[{"key": "livekit-drainer:exclude", "value": "true"}])
    report = drill(clock, sent)
    assert [e["message"] for e in report["errors"]] == [
        f"service {DEFAULT_AGENT_SERVICE} has no running task a drill may touch"
    ]


def test_the_chat_message_names_the_drilled_task_as_its_resource(fleet: list[str]) -> None:
    clock, sent, chat = SimulatedClock(), Recorded(), Recorded()
    deps = dependencies(clock, sent)
    deps.chat_notifier = chat
    report = lambda_handler(schedule_event(clock.now), LocalLambdaContext(), dependencies=deps)
    ((_subject, payload),) = chat.messages
    assert json.loads(payload)["metadata"]["relatedResources"] == [report["summary"]["task"]]
