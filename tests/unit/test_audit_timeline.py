"""The audit's timeline in the unit that owns it (``core.audit_timeline``): a report's steps, its dry-run
and held decisions and a failure that stopped it; a ledger step, an intent without an outcome read as
unknown; the one entry a report and the ledger both show; the undo of each drainer step, and none for a
task stopped since."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from fleet_remediation.core.audit_timeline import (
    ACTED,
    FAILED,
    HELD,
    REFUSED,
    REPORT_MESSAGE,
    UNKNOWN,
    WOULD_ACT,
    Entry,
    from_ledger,
    from_report,
    report_of,
    timeline,
    undo_command,
)

DRAINER, REAPER = "worker_drainer", "zombie_reaper"
TASK = "arn:aws:ecs:eu-west-1:123456789012:task/agents/t1"


def report(function: str = DRAINER, **fields: Any) -> dict[str, Any]:
    return {
        "function": function,
        "invocation_id": "inv-1",
        "started_at": "2026-09-15T10:00:00Z",
        "finished_at": "2026-09-15T10:00:05Z",
        "mode": "enforce",
        "incident": "staging.vad",
        "status": "ok",
        "actions": [],
        "candidates": [],
        "errors": [],
        **fields,
    }


def action(outcome: str, name: str = "cordon", **fields: Any) -> dict[str, Any]:
    return {"action": name, "resource": TASK, "outcome": outcome, **fields}


# Which lines are reports.


def test_a_report_line_carries_its_report() -> None:
    line = json.dumps({"message": REPORT_MESSAGE, "report": {"function": DRAINER}})
    assert report_of(line) == {"function": DRAINER}


@pytest.mark.parametrize(
    "line",
    [
        "not json",
        json.dumps(["remediation report"]),
        json.dumps({"message": "remediation report detail", "report": {"function": DRAINER}}),
        json.dumps({"message": REPORT_MESSAGE, "report": "text"}),
        json.dumps({"message": REPORT_MESSAGE}),
    ],
    ids=["not-json", "not-an-object", "another-message", "report-not-an-object", "no-report"],
)
def test_any_other_line_carries_no_report(line: str) -> None:
    assert report_of(line) is None


# A report's entries.


@pytest.mark.parametrize(
    ("outcome", "kind"),
    [
        ("done", ACTED),
        ("already-done", ACTED),
        ("skipped", REFUSED),
        ("failed", FAILED),
        ("unknown", UNKNOWN),
        ("intended", UNKNOWN),
        ("something-new", UNKNOWN),
    ],
)
def test_each_outcome_of_a_step_is_its_kind_and_one_never_seen_is_unknown(outcome: str, kind: str) -> None:
    (entry,) = from_report(report(actions=[action(outcome, reason="why")]))
    assert (entry.kind, entry.action, entry.target, entry.reason) == (kind, "cordon", TASK, "why")


def test_an_entry_carries_its_runs_time_function_incident_invocation_and_mode() -> None:
    (entry,) = from_report(report(actions=[action("done")], mode="dry-run"))
    assert entry == Entry(
        at=datetime(2026, 9, 15, 10, 0, 5, tzinfo=UTC),
        function=DRAINER,
        kind=ACTED,
        action="cordon",
        target=TASK,
        reason="",
        incident="staging.vad",
        invocation="inv-1",
        mode="dry-run",
    )


def test_a_run_that_never_finished_is_placed_at_its_start() -> None:
    (entry,) = from_report(report(actions=[action("done")], finished_at=None))
    assert entry.at == datetime(2026, 9, 15, 10, 0, 0, tzinfo=UTC)


def test_a_steps_reason_is_its_own_else_its_errors_else_why_it_was_planned() -> None:
    planned = [{"resource": TASK, "decision": "act", "reason": "cordon: degraded"}]
    own = action("done", reason="own")
    failed = action("failed", error={"message": "denied"})
    done = action("done")
    reasons = [e.reason for e in from_report(report(actions=[own, failed, done], candidates=planned))]
    assert reasons == ["own", "denied", "cordon: degraded"]
    (unplanned,) = from_report(report(actions=[action("done")]))
    assert unplanned.reason == ""


@pytest.mark.parametrize(
    ("function", "reason", "step"),
    [
        (DRAINER, "cordon: degraded since 10:00", "cordon"),
        (REAPER, "reap: age 3365s >= max 1800s", "delete-room"),
        (REAPER, "warn: closing soon", "warn"),
        (DRAINER, "reap: the room of a stopped task", "reap"),
        (DRAINER, "no step named here", "act"),
        (DRAINER, "two words: not a step", "act"),
        (DRAINER, ": no step", "act"),
    ],
)
def test_a_decision_is_named_for_the_step_its_reason_starts_with(
    function: str, reason: str, step: str
) -> None:
    candidates = [{"resource": TASK, "decision": "would-act", "reason": reason}]
    (entry,) = from_report(report(function, candidates=candidates))
    assert (entry.kind, entry.action, entry.target, entry.reason) == (WOULD_ACT, step, TASK, reason)


def test_a_held_decision_is_held_and_a_planned_one_is_no_entry_of_its_own() -> None:
    candidates = [
        {"resource": "a", "decision": "held", "reason": "cordon: outside the window"},
        {"resource": "b", "decision": "act", "reason": "cordon: degraded"},
        {"resource": "c", "decision": "skip", "reason": "healthy"},
    ]
    assert [(e.kind, e.target) for e in from_report(report(candidates=candidates))] == [(HELD, "a")]


def test_a_failed_run_with_no_step_is_one_failed_entry_of_its_first_error() -> None:
    errors = [
        {"code": "AwsApiError", "message": "ECS ListTasks\n  failed", "resource": "agents"},
        {"code": "Other", "message": "second"},
    ]
    (entry,) = from_report(report(status="failed", errors=errors))
    assert (entry.kind, entry.action, entry.target, entry.reason) == (
        FAILED,
        "run",
        "agents",
        "AwsApiError: ECS ListTasks failed",
    )
    (unnamed,) = from_report(report(status="failed", errors=[{"code": "X", "message": "m"}]))
    assert unnamed.target == "-"


def test_a_failed_run_that_took_a_step_shows_the_step_and_an_ok_run_no_error() -> None:
    errors = [{"code": "X", "message": "m"}]
    assert [
        e.kind for e in from_report(report(status="failed", errors=errors, actions=[action("done")]))
    ] == [ACTED]
    assert from_report(report(status="ok", errors=errors)) == []


# The ledger.


def ledger_item(outcome: str | None = "done", **fields: str) -> dict[str, str]:
    item = {"pk": "task#t1", "sk": "audit#2026-09-15T10:00:03+00:00#inv-1#0", "action": "cordon", **fields}
    if outcome is not None:
        item["outcome"] = outcome
    return item


def test_a_ledger_step_is_the_drainers_on_its_task_at_its_time() -> None:
    entry = from_ledger(ledger_item(reason="degraded", incident="staging.vad"))
    assert entry == Entry(
        at=datetime(2026, 9, 15, 10, 0, 3, tzinfo=UTC),
        function=DRAINER,
        kind=ACTED,
        action="cordon",
        target="t1",
        reason="degraded",
        incident="staging.vad",
        invocation="inv-1",
        source="ledger",
    )


def test_an_intent_without_an_outcome_is_unknown_and_says_the_run_was_interrupted() -> None:
    for item in (
        ledger_item(None, planned_because="degraded"),
        ledger_item("intended", planned_because="degraded"),
    ):
        entry = from_ledger(item)
        assert entry is not None
        assert (entry.kind, entry.reason) == (
            UNKNOWN,
            "intent recorded, no outcome (the run was interrupted): degraded",
        )


def test_a_ledger_steps_reason_is_its_own_else_why_it_was_planned() -> None:
    entry = from_ledger(ledger_item("done", reason="", planned_because="degraded"))
    assert entry is not None
    assert entry.reason == "degraded"


@pytest.mark.parametrize(
    "item",
    [
        {"pk": "task#t1", "sk": "state", "action": "cordon"},
        {"pk": "task#t1", "sk": "audit#2026-09-15T10:00:03+00:00#inv-1#0"},
    ],
    ids=["not-an-audit-item", "no-action"],
)
def test_another_ledger_item_is_no_step(item: dict[str, str]) -> None:
    assert from_ledger(item) is None


# The undo of each step.


def at(action: str, kind: str = ACTED, function: str = DRAINER, target: str = "t1") -> Entry:
    return Entry(datetime(2026, 9, 15, 10, tzinfo=UTC), function, kind, action, target, "")


@pytest.mark.parametrize("step", ["cordon", "complete-cordon", "reap"])
@pytest.mark.parametrize("kind", [ACTED, UNKNOWN])
def test_a_step_that_took_the_task_out_or_may_have_is_undone_by_lkfr_undo(step: str, kind: str) -> None:
    assert undo_command(at(step, kind), "prod", None) == "lkfr undo --env prod --task t1"
    assert (
        undo_command(at(step, kind), "prod", "eu-west-1")
        == "lkfr undo --env prod --task t1 --region eu-west-1"
    )


def test_an_undo_is_undone_by_draining_again() -> None:
    assert (
        undo_command(at("undo"), "prod", "eu-west-1")
        == "lkfr undo --env prod --task t1 --drain --region eu-west-1"
    )


@pytest.mark.parametrize(
    "entry",
    [at("stop"), at("wait"), at("cordon", WOULD_ACT), at("cordon", FAILED), at("cordon", function=REAPER)],
    ids=["stop", "wait", "would-act", "failed", "reaper"],
)
def test_a_step_with_nothing_to_undo_has_no_undo(entry: Entry) -> None:
    assert undo_command(entry, "prod", None) is None


# One timeline.


def test_the_timeline_is_newest_first_with_each_steps_undo() -> None:
    reaped = report(REAPER, finished_at="2026-09-15T10:00:01Z", actions=[action("done", "delete-room")])
    entries = timeline([reaped, report(actions=[action("done")])], [], "prod", None)
    assert [(e.function, e.action, e.undo) for e in entries] == [
        (DRAINER, "cordon", f"lkfr undo --env prod --task {TASK}"),
        (REAPER, "delete-room", None),
    ]


def test_a_step_the_report_and_the_ledger_both_show_is_one_entry_with_the_reports_incident_first() -> None:
    shown = report(actions=[action("done")])
    shown["actions"][0]["resource"] = "t1"
    both = timeline([shown], [ledger_item(incident="ledger.incident")], "prod", None)
    assert [(e.source, e.incident, e.at) for e in both] == [
        ("report+ledger", "staging.vad", datetime(2026, 9, 15, 10, 0, 5, tzinfo=UTC))
    ]
    shown["incident"] = None
    (merged,) = timeline([shown], [ledger_item(incident="ledger.incident")], "prod", None)
    assert merged.incident == "ledger.incident"


def test_a_ledger_step_of_another_invocation_or_action_is_an_entry_of_its_own() -> None:
    shown = report(actions=[action("done")])
    shown["actions"][0]["resource"] = "t1"
    items = [
        ledger_item(sk="audit#2026-09-15T10:00:03+00:00#inv-2#0"),
        ledger_item(action="stop"),
        {"pk": "task#t1", "sk": "state"},
    ]
    entries = timeline([shown], items, "prod", None)
    assert sorted((e.source, e.invocation, e.action) for e in entries) == [
        ("ledger", "inv-1", "stop"),
        ("ledger", "inv-2", "cordon"),
        ("report", "inv-1", "cordon"),
    ]


def test_a_task_stopped_since_has_no_undo_but_one_stopped_before_does() -> None:
    items = [
        ledger_item(sk="audit#2026-09-15T10:00:01+00:00#inv-1#0"),
        ledger_item(action="stop", sk="audit#2026-09-15T10:00:02+00:00#inv-1#1"),
        ledger_item(sk="audit#2026-09-15T10:00:03+00:00#inv-2#0", pk="task#t2"),
    ]
    entries = timeline([], items, "prod", None)
    assert [(e.target, e.action, e.undo) for e in entries] == [
        ("t2", "cordon", "lkfr undo --env prod --task t2"),
        ("t1", "stop", None),
        ("t1", "cordon", None),
    ]


def test_a_stop_that_was_not_surely_taken_leaves_the_undo() -> None:
    items = [
        ledger_item(sk="audit#2026-09-15T10:00:01+00:00#inv-1#0"),
        ledger_item("failed", action="stop", sk="audit#2026-09-15T10:00:02+00:00#inv-1#1"),
    ]
    entries = timeline([], items, "prod", None)
    assert [e.undo for e in entries] == [None, "lkfr undo --env prod --task t1"]


def test_an_entrys_document_writes_its_time_in_utc_with_a_z() -> None:
    document = at("cordon").document()
    assert document["at"] == "2026-09-15T10:00:00Z"
    assert (document["action"], document["source"], document["undo"]) == ("cordon", "report", None)


def test_a_report_without_actions_candidates_or_errors_has_no_entries() -> None:
    bare = {"function": DRAINER, "started_at": "2026-09-15T10:00:00Z", "status": "failed"}
    assert from_report(bare) == []


def test_a_failed_runs_error_without_a_message_says_its_code_alone() -> None:
    (entry,) = from_report(report(status="failed", errors=[{"code": "InternalError"}]))
    assert entry.reason == "InternalError: "


def test_a_ledger_item_without_a_sort_key_or_a_task_is_read_as_empty() -> None:
    assert from_ledger({"action": "cordon"}) is None
    entry = from_ledger(
        {"sk": "audit#2026-09-15T10:00:03+00:00#inv-1#000", "action": "cordon", "outcome": "done"}
    )
    assert entry is not None
    assert (entry.target, entry.reason) == ("", "")


def test_a_ledger_outcome_never_seen_is_unknown() -> None:
    entry = from_ledger(ledger_item("something-new"))
    assert entry is not None
    assert entry.kind == UNKNOWN


def test_the_timelines_undo_names_the_region() -> None:
    (entry,) = timeline([], [ledger_item()], "prod", "eu-west-1")
    assert entry.undo == "lkfr undo --env prod --task t1 --region eu-west-1"


def test_an_item_that_is_no_step_before_the_steps_leaves_them_in_the_timeline() -> None:
    entries = timeline([], [{"pk": "task#t1", "sk": "state"}, ledger_item()], "prod", None)
    assert [(e.target, e.action) for e in entries] == [("t1", "cordon")]
