"""One timeline of what the functions did, from their reports and the drainer's ledger: each step
taken, planned in a dry run, held or refused, with its outcome, incident and the undo where one
exists (``lkfr audit`` prints it; ``lkfr drill`` and the scheduled drill read their answer in it).
A step the ledger shows and no report does (a run that never logged its report) still appears: an
intent without an outcome is ``unknown``, never assumed done or not done."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any

from fleet_remediation.contract.drainer_steps import MARKING, Step
from fleet_remediation.contract.naming import FunctionName

# What became of a step, in the operator's words.
ACTED, WOULD_ACT, HELD, REFUSED, FAILED, UNKNOWN = (
    "acted",
    "would-act",
    "held",
    "refused",
    "failed",
    "unknown",
)
KIND_OF_OUTCOME = {
    "done": ACTED,
    "already-done": ACTED,
    "skipped": REFUSED,
    "failed": FAILED,
    "unknown": UNKNOWN,
    "intended": UNKNOWN,
}
KIND_OF_DECISION = {"would-act": WOULD_ACT, "held": HELD}
MARKING_STEPS = frozenset(step.value for step in MARKING)
# The message of the one line each invocation logs with its report.
REPORT_MESSAGE = "remediation report"


@dataclass(frozen=True)
class Entry:
    at: datetime
    function: str
    kind: str
    action: str
    target: str
    reason: str
    incident: str | None = None
    invocation: str | None = None
    mode: str | None = None
    undo: str | None = None
    source: str = "report"

    def document(self) -> dict[str, Any]:
        found = asdict(self)
        found["at"] = self.at.isoformat().replace("+00:00", "Z")
        return found


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _planned_action(function: str, reason: str) -> str:
    """A candidate names no action; its reason starts with the step (``cordon: ...``, ``warn: ...``)."""
    head, separator, _ = reason.partition(":")
    if separator and head and " " not in head:
        return "delete-room" if function == FunctionName.ZOMBIE_REAPER.value and head == "reap" else head
    return "act"


def report_of(message: str) -> dict[str, Any] | None:
    """The report a log line carries, if it is a ``remediation report`` line (not one of its
    ``detail`` lines, which the same search term also finds)."""
    try:
        line = json.loads(message)
    except ValueError:
        return None
    if not isinstance(line, dict) or line.get("message") != REPORT_MESSAGE:
        return None
    report = line.get("report")
    return report if isinstance(report, dict) else None


def from_report(report: dict[str, Any]) -> list[Entry]:
    """The report's actions, its dry-run and held decisions, and a failure that stopped the run."""
    run = Entry(
        at=_at(str(report.get("finished_at") or report["started_at"])),
        function=str(report["function"]),
        kind=UNKNOWN,
        action="",
        target="",
        reason="",
        incident=report.get("incident"),
        invocation=report.get("invocation_id"),
        mode=report.get("mode"),
    )
    planned = {c["resource"]: c["reason"] for c in report.get("candidates", []) if c["decision"] == "act"}
    entries = [
        replace(
            run,
            kind=KIND_OF_OUTCOME.get(action["outcome"], UNKNOWN),
            action=action["action"],
            target=action["resource"],
            # A done step's reason is left out of the report: then why it was planned.
            reason=action.get("reason")
            or (action.get("error") or {}).get("message")
            or planned.get(action["resource"], ""),
        )
        for action in report.get("actions", [])
    ]
    entries += [
        replace(
            run,
            kind=KIND_OF_DECISION[candidate["decision"]],
            action=_planned_action(run.function, candidate["reason"]),
            target=candidate["resource"],
            reason=candidate["reason"],
        )
        for candidate in report.get("candidates", [])
        if candidate["decision"] in KIND_OF_DECISION
    ]
    if report.get("status") == "failed" and not entries:
        entries += [
            replace(run, kind=FAILED, action="run", target=error.get("resource") or "-", reason=_said(error))
            for error in report.get("errors", [])[:1]
        ]
    return entries


def _said(error: dict[str, Any]) -> str:
    return f"{error.get('code')}: {' '.join(str(error.get('message', '')).split())}"


def from_ledger(item: dict[str, str]) -> Entry | None:
    """One ledger step (``sk`` = ``audit#<time>#<invocation>#<step>``); None for another item."""
    if not item.get("sk", "").startswith("audit#") or "action" not in item:
        return None
    moment, invocation, _ = item["sk"].removeprefix("audit#").rsplit("#", 2)
    outcome = item.get("outcome", "intended")
    reason = item.get("reason") or item.get("planned_because", "")
    if outcome == "intended":
        reason = f"intent recorded, no outcome (the run was interrupted): {reason}"
    return Entry(
        at=_at(moment),
        function=FunctionName.WORKER_DRAINER.value,
        kind=KIND_OF_OUTCOME.get(outcome, UNKNOWN),
        action=item["action"],
        target=item.get("pk", "").removeprefix("task#"),
        reason=reason,
        incident=item.get("incident"),
        invocation=invocation,
        source="ledger",
    )


def undo_command(entry: Entry, env: str, region: str | None) -> str | None:
    """The short undo of a drainer step that leaves a task out of rotation (``undrain``) or puts
    one back (``drain``); a deleted room or a stopped task has none."""
    if entry.function != FunctionName.WORKER_DRAINER.value or entry.kind not in (ACTED, UNKNOWN):
        return None
    region_option = f" --region {region}" if region else ""
    if entry.action in MARKING_STEPS:
        return f"lkfr undo --env {env} --task {entry.target}{region_option}"
    if entry.action == Step.UNDO.value:
        return f"lkfr undo --env {env} --task {entry.target} --drain{region_option}"
    return None


def timeline(
    reports: Iterable[dict[str, Any]], ledger: Iterable[dict[str, str]], env: str, region: str | None
) -> list[Entry]:
    """Newest first. A ledger step that a report also shows is one entry (``report+ledger``)."""
    entries = [entry for report in reports for entry in from_report(report)]
    by_step = {(e.invocation, e.target, e.action): i for i, e in enumerate(entries)}
    for item in ledger:
        found = from_ledger(item)
        if found is None:
            continue
        index = by_step.get((found.invocation, found.target, found.action))
        if index is None:
            entries.append(found)
        else:
            entries[index] = _merged(entries[index], found)
    newest_first = sorted(entries, key=lambda entry: entry.at, reverse=True)
    stopped: set[str] = set()
    shown = []
    for entry in newest_first:
        # A task stopped since has nothing left to undrain.
        shown.append(entry if entry.target in stopped else _with_undo(entry, env, region))
        if entry.action == Step.STOP.value and entry.kind == ACTED:
            stopped.add(entry.target)
    return shown


def _merged(report: Entry, ledger: Entry) -> Entry:
    return replace(report, incident=report.incident or ledger.incident, source="report+ledger")


def _with_undo(entry: Entry, env: str, region: str | None) -> Entry:
    return replace(entry, undo=undo_command(entry, env, region))
