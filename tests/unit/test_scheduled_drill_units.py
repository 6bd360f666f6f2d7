"""The scheduled drill's own units: where it reads the answer (``scheduled_drill.record``: the
answering function's reports since the drill began, at most ``DRILL_RECORD_PAGES_PER_POLL`` pages a
poll, and for the drainer the drilled task's ledger items) and what it tells (``scheduled_drill
.messages``: the verdict, a refusal, a failure, the dry run's words)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from fleet_remediation.contract.budgets import DRILL_RECORD_PAGES_PER_POLL
from fleet_remediation.contract.drills import DrillFault, DrillMarker
from fleet_remediation.contract.naming import (
    DrillFunctionName,
    FunctionName,
    function_log_group_name,
    function_mode_parameter_name,
    mode_parameter_name,
)
from fleet_remediation.contract.settings import ScheduledDrillSettings
from fleet_remediation.core.audit_timeline import ACTED, REPORT_MESSAGE, WOULD_ACT, Entry
from fleet_remediation.core.errors import AwsApiError
from fleet_remediation.core.messages import Severity
from fleet_remediation.domain.drill_steps import DrillRefusedError, DrillRun, DrillTarget
from scheduled_drill.messages import Said, _said, _stop_drills
from scheduled_drill.record import DrillRecord
from scheduled_drill.work import DrillOutcome, DrillPlan, DrillWork

SINCE = datetime(2026, 9, 15, 10, 0, tzinfo=UTC)
TASK = "arn:aws:ecs:eu-west-1:123456789012:task/agents/t1"
DRAINER_GROUP = function_log_group_name("staging", FunctionName.WORKER_DRAINER, "agents")
REAPER_GROUP = function_log_group_name("staging", FunctionName.ZOMBIE_REAPER)


def report_line(invocation: str, action: str = "cordon", function: str = "worker_drainer") -> str:
    return json.dumps(
        {
            "message": REPORT_MESSAGE,
            "report": {
                "function": function,
                "invocation_id": invocation,
                "started_at": "2026-09-15T10:01:00Z",
                "finished_at": "2026-09-15T10:01:01Z",
                "mode": "enforce",
                "status": "ok",
                "actions": [{"action": action, "resource": TASK, "outcome": "done"}],
                "candidates": [],
                "errors": [],
            },
        }
    )


class StubLogs:
    def __init__(self, pages: list[list[str]], error: Exception | None = None) -> None:
        self.pages = pages
        self.error = error
        self.requests: list[dict[str, Any]] = []

    def filter_log_events(self, **request: Any) -> dict[str, Any]:
        self.requests.append(dict(request))
        if self.error is not None:
            raise self.error
        index = len(self.requests) - 1
        answer: dict[str, Any] = {"events": [{"message": m} for m in self.pages[index]]}
        if index + 1 < len(self.pages):
            answer["nextToken"] = f"page-{index + 1}"
        return answer


class StubLedger:
    def __init__(self, items: list[dict[str, Any]], error: Exception | None = None) -> None:
        self.items = items
        self.error = error
        self.requests: list[dict[str, Any]] = []

    def query(self, **request: Any) -> dict[str, Any]:
        self.requests.append(request)
        if self.error is not None:
            raise self.error
        return {"Items": self.items}


def record(logs: StubLogs, ledger: StubLedger) -> DrillRecord:
    return DrillRecord(logs, ledger, "staging", "agents", "staging-drainer-ledger")


@pytest.mark.parametrize("fault", [DrillFault.TTS_SILENCE, DrillFault.CPU_STARVED])
def test_a_task_fault_reads_the_services_drainers_reports_and_the_tasks_ledger(fault: DrillFault) -> None:
    logs, ledger = StubLogs([[report_line("inv-1")]]), StubLedger([])
    (entry,) = record(logs, ledger).read(fault, "t1", SINCE)
    assert (entry.function, entry.action, entry.target, entry.invocation) == (
        "worker_drainer",
        "cordon",
        TASK,
        "inv-1",
    )
    assert logs.requests == [
        {
            "logGroupName": DRAINER_GROUP,
            "startTime": int(SINCE.timestamp() * 1000),
            "filterPattern": f'"{REPORT_MESSAGE}"',
        }
    ]
    assert ledger.requests == [
        {
            "TableName": "staging-drainer-ledger",
            "KeyConditionExpression": "pk = :task AND sk >= :since",
            "ExpressionAttributeValues": {
                ":task": {"S": "task#t1"},
                ":since": {"S": "audit#2026-09-15T10:00:00+00:00"},
            },
        }
    ]


def test_an_abandoned_session_reads_the_reapers_reports_and_no_ledger() -> None:
    logs, ledger = StubLogs([[report_line("inv-1", "delete-room", "zombie_reaper")]]), StubLedger([])
    (entry,) = record(logs, ledger).read(DrillFault.ABANDONED_SESSION, "t1", SINCE)
    assert (entry.function, entry.action) == ("zombie_reaper", "delete-room")
    assert [r["logGroupName"] for r in logs.requests] == [REAPER_GROUP]
    assert ledger.requests == []


def test_a_ledger_item_is_read_from_its_typed_attributes() -> None:
    item = {
        "pk": {"S": "task#t1"},
        "sk": {"S": "audit#2026-09-15T10:00:30+00:00#inv-9#0"},
        "action": {"S": "stop"},
        "outcome": {"S": "done"},
        "attempt": {"N": "2"},
    }
    (entry,) = record(StubLogs([[]]), StubLedger([item])).read(DrillFault.TTS_SILENCE, "t1", SINCE)
    assert (entry.action, entry.target, entry.invocation, entry.source) == ("stop", "t1", "inv-9", "ledger")


def test_lines_that_are_no_report_are_left_out() -> None:
    lines = ["not json", json.dumps({"message": "remediation report detail"}), report_line("inv-1")]
    entries = record(StubLogs([lines]), StubLedger([])).read(DrillFault.TTS_SILENCE, "t1", SINCE)
    assert [e.invocation for e in entries] == ["inv-1"]


def test_an_event_without_a_message_is_no_report() -> None:
    logs = StubLogs([[]])
    logs.filter_log_events = lambda **request: {"events": [{}]}  # type: ignore[method-assign]
    assert record(logs, StubLedger([])).read(DrillFault.TTS_SILENCE, "t1", SINCE) == []


def test_a_poll_follows_the_pages_up_to_its_cap_and_no_further() -> None:
    pages = [[report_line(f"inv-{i}")] for i in range(DRILL_RECORD_PAGES_PER_POLL + 1)]
    logs = StubLogs(pages)
    entries = record(logs, StubLedger([])).read(DrillFault.TTS_SILENCE, "t1", SINCE)
    assert sorted(e.invocation for e in entries) == [f"inv-{i}" for i in range(DRILL_RECORD_PAGES_PER_POLL)]
    assert [r.get("nextToken") for r in logs.requests] == [
        None,
        *(f"page-{i}" for i in range(1, DRILL_RECORD_PAGES_PER_POLL)),
    ]


def test_a_poll_at_its_cap_reads_every_page() -> None:
    pages = [[report_line(f"inv-{i}")] for i in range(DRILL_RECORD_PAGES_PER_POLL)]
    logs = StubLogs(pages)
    entries = record(logs, StubLedger([])).read(DrillFault.TTS_SILENCE, "t1", SINCE)
    assert len(entries) == DRILL_RECORD_PAGES_PER_POLL
    assert len(logs.requests) == DRILL_RECORD_PAGES_PER_POLL


def test_the_last_page_ends_the_poll() -> None:
    logs = StubLogs([[report_line("inv-1")]])
    record(logs, StubLedger([])).read(DrillFault.TTS_SILENCE, "t1", SINCE)
    assert len(logs.requests) == 1


def denied(operation: str) -> ClientError:
    return ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, operation)


def test_a_failed_read_of_the_reports_is_an_aws_error_naming_the_log_group() -> None:
    logs = StubLogs([], denied("FilterLogEvents"))
    with pytest.raises(AwsApiError) as failed:
        record(logs, StubLedger([])).read(DrillFault.TTS_SILENCE, "t1", SINCE)
    assert (failed.value.message, failed.value.resource) == (
        "CloudWatch Logs FilterLogEvents failed: AccessDeniedException: no",
        DRAINER_GROUP,
    )


def test_a_failed_read_of_the_ledger_is_an_aws_error_naming_the_table() -> None:
    with pytest.raises(AwsApiError) as failed:
        record(StubLogs([[]]), StubLedger([], denied("Query"))).read(DrillFault.TTS_SILENCE, "t1", SINCE)
    assert (failed.value.message, failed.value.resource) == (
        "DynamoDB Query failed: AccessDeniedException: no",
        "staging-drainer-ledger",
    )


# What it tells.


def drill_settings(**fields: Any) -> ScheduledDrillSettings:
    return ScheduledDrillSettings.model_validate(
        {
            "environment_name": "staging",
            "mode_parameter_name": mode_parameter_name("staging"),
            "notification_topic_arn": "arn:aws:sns:eu-west-1:123456789012:notify",
            "runbook_base_url": "https://docs.example.com",
            "drill": {"fault": "tts-silence", "minutes": 3},
            "drills_enabled": True,
            "drilled_service": "agents",
            "ecs_cluster": "agents",
            "ecs_service": "agents-svc",
            "ledger_table_name": "staging-drainer-ledger",
            **fields,
        }
    )


def a_run(mode: str = "enforce") -> DrillRun:
    marker = DrillMarker(DrillFault.TTS_SILENCE, int(SINCE.timestamp()) + 180, "drill-1789466400")
    return DrillRun(DrillFault.TTS_SILENCE, DrillTarget("agents", TASK), marker, SINCE, mode)


def seen(seconds: float, action: str = "cordon", kind: str = ACTED) -> Entry:
    return Entry(SINCE + timedelta(seconds=seconds), "worker_drainer", kind, action, TASK, "why")


def said_of(work: DrillWork, **fields: Any) -> Said:
    return _said(work, drill_settings(**fields))


def test_a_drill_answered_passes_naming_who_answered_and_after_how_long() -> None:
    run = a_run()
    run.look([seen(42)])
    run.marker_removed = True
    said = said_of(DrillWork(done=DrillOutcome(run)))
    assert (
        said.acted
        == said.would
        == ("scheduled drill passed: tts-silence on task t1 answered by worker_drainer cordon after 42 s")
    )
    assert (said.severity, said.resources) == (Severity.INFO, [TASK])
    assert said.why == [
        "2026-09-15T10:00:00+00:00 fault in effect (drill drill-1789466400)",
        f"2026-09-15T10:00:42+00:00 worker_drainer acted cordon {TASK}",
        "marker removed",
    ]


def test_a_drill_nobody_answered_fails_naming_the_answerer_and_the_minutes_as_a_warning() -> None:
    said = said_of(DrillWork(done=DrillOutcome(a_run(), missed_polls=2)))
    assert (
        said.acted == "scheduled drill FAILED: tts-silence on task t1, no answer from worker_drainer in 3 min"
    )
    assert said.severity is Severity.WARNING
    assert said.why[-2:] == ["marker NOT removed: it ends by itself", "2 read(s) of the record failed"]


def test_a_verdict_in_a_dry_run_service_says_it_was_judged_on_what_it_would_have_done() -> None:
    run = a_run("dry-run")
    run.look([seen(10, kind=WOULD_ACT)])
    said = said_of(DrillWork(done=DrillOutcome(run)))
    assert said.why[0] == "agents is in dry-run: judged on what it would have done"
    assert said.acted.startswith("scheduled drill passed:")


def test_a_verdict_shows_the_first_ten_steps_seen() -> None:
    run = a_run()
    run.look([seen(i, "undo") for i in range(12)])
    steps = [line for line in said_of(DrillWork(done=DrillOutcome(run))).why if "worker_drainer" in line]
    assert len(steps) == 10
    assert steps[-1].startswith("2026-09-15T10:00:09+00:00 ")


def test_a_refusal_is_a_warning_that_says_its_code_and_why() -> None:
    refused = DrillRefusedError("DrillHeld", "outside the disruption window")
    said = said_of(DrillWork(error=refused))
    assert (said.acted, said.would) == (
        "scheduled drill refused: DrillHeld",
        "drilled, but the drill refused: DrillHeld",
    )
    assert (said.why, said.severity) == (["DrillHeld: outside the disruption window"], Severity.WARNING)


@pytest.mark.parametrize(
    "error",
    [DrillRefusedError("DrillNotStarted", "could not mark task t1"), AwsApiError("ECS down", aws_code="X")],
    ids=["marker-not-written", "aws-error"],
)
def test_a_drill_that_could_not_start_or_run_failed_it_was_not_refused(error: Exception) -> None:
    said = said_of(DrillWork(error=error))  # type: ignore[arg-type]
    assert said.acted == f"scheduled drill failed: {error.code}"  # type: ignore[attr-defined]


def test_a_dry_run_of_the_drill_says_which_task_for_how_long() -> None:
    plan = DrillPlan(DrillFault.TTS_SILENCE, DrillTarget("agents", TASK), 0, "drill-1")
    said = said_of(DrillWork(plan=plan), drill={"fault": "cpu-starved", "minutes": 4})
    assert said.acted == said.would == "drilled task t1 (cpu-starved, 4 min)"
    assert said.resources == [TASK]
    unplanned = said_of(DrillWork())
    assert (unplanned.acted, unplanned.resources) == ("drilled task ? (tts-silence, 3 min)", [])


@pytest.mark.parametrize(
    ("region", "option"), [("eu-west-1", " --region eu-west-1"), (None, "")], ids=["region", "no-region"]
)
def test_the_undo_is_the_drills_own_switch_turned_off(region: str | None, option: str) -> None:
    undo = _stop_drills("staging", region)
    name = function_mode_parameter_name("staging", DrillFunctionName.SCHEDULED_DRILL)
    assert undo.command == f"aws ssm put-parameter --overwrite --name {name} --value off{option}"


class BareAnswers:
    """Logs and DynamoDB leave out what they have none of."""

    def filter_log_events(self, **_: Any) -> dict[str, Any]:
        return {}

    def query(self, **_: Any) -> dict[str, Any]:
        return {}


def test_a_poll_answered_without_events_or_items_reads_nothing() -> None:
    bare = BareAnswers()
    drill_record = DrillRecord(bare, bare, "staging", "agents", "staging-drainer-ledger")
    assert drill_record.read(DrillFault.TTS_SILENCE, "t1", SINCE) == []


def test_the_record_read_carries_each_steps_undo_in_the_drills_environment() -> None:
    (entry,) = record(StubLogs([[report_line("inv-1")]]), StubLedger([])).read(
        DrillFault.TTS_SILENCE, "t1", SINCE
    )
    assert entry.undo == f"lkfr undo --env staging --task {TASK}"
