"""Work done once per event: a retry of the same event replays the first attempt's record.

Lambda retries an asynchronous event whose invocation failed after its report (e.g. SNS did not
take the message). The work (snapshot, decisions, actions, the message about them) runs under a
once-key of the invocation's request id; the retry finds the stored record, puts it into its own
report and delivers the message again, acting on nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, Field

from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import ActionRecord, Candidate, ErrorRecord, Refusal

if TYPE_CHECKING:
    from fleet_remediation.core.pipeline import Run

NoteT = TypeVar("NoteT", bound=BaseModel)
REPLAYED = "a retry of this event: the first attempt's results, not acted again"


class RunRecord(BaseModel):
    """What one run saw, decided and did, and its message: stored under the invocation's once-key."""

    candidates: list[Candidate] = Field(default_factory=list)
    actions: list[ActionRecord] = Field(default_factory=list)
    errors: list[ErrorRecord] = Field(default_factory=list)
    summary: dict[str, Any] = Field(default_factory=dict)
    note: dict[str, Any] | None = None
    refusals: list[tuple[str, str, str]] = Field(default_factory=list)
    # Skipped candidates counted by reason, and how many of them are not listed (a bounded report).
    skipped: dict[str, int] = Field(default_factory=dict)
    unlisted_skips: int = 0


def replay_once(
    run: Run[Any, Any],
    produce: Callable[[Run[Any, Any]], NoteT | None],
    note_type: type[NoteT],
    function: str,
) -> NoteT | None:
    """``produce`` on a scratch report under the invocation's once-key; its record goes into the
    real report (the first attempt's, on a retry)."""
    report = run.report
    scratch = ReportBuilder(report.function, report.invocation_id, report.started_at)
    scratch.mode, scratch.trigger = report.mode, report.trigger
    on_scratch = _with_report(run, scratch)

    def first_attempt() -> dict[str, Any]:
        note = produce(on_scratch)
        return _record_of(scratch, note).model_dump(mode="json")

    key = {"function": function, "request": report.invocation_id or "local", "step": "run"}
    try:
        stored, replayed = run.deps.once.run_once(key, first_attempt)
    except Exception:
        # What the broken run had done goes into the one report, its unfinished steps as unknown.
        scratch.resolve_unfinished()
        report.candidates.extend(scratch.candidates)
        report.actions.extend(scratch.actions)
        raise
    record = RunRecord.model_validate(stored)
    _into(report, record, replayed)
    return None if record.note is None else note_type.model_validate(record.note)


def _with_report(run: Run[Any, Any], report: ReportBuilder) -> Run[Any, Any]:
    return dataclasses.replace(run, report=report)


def _record_of(scratch: ReportBuilder, note: BaseModel | None) -> RunRecord:
    return RunRecord(
        candidates=scratch.candidates,
        actions=scratch.actions,
        errors=scratch.errors,
        summary=scratch.summary,
        note=None if note is None else note.model_dump(mode="json"),
        refusals=[(r.resource, r.action, r.reason) for r in scratch.refusals],
        skipped=dict(scratch.skipped),
        unlisted_skips=scratch.truncated["candidates"],
    )


def _into(report: ReportBuilder, record: RunRecord, replayed: bool) -> None:
    report.candidates.extend(record.candidates)
    report.actions.extend(record.actions)
    report.errors.extend(record.errors)
    report.refusals.extend(Refusal(*refusal) for refusal in record.refusals)
    report.skipped.update(record.skipped)
    if record.unlisted_skips:
        report.truncated["candidates"] += record.unlisted_skips
    report.summary = record.summary
    if replayed:
        report.summary["replayed"] = REPLAYED
