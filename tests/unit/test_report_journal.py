"""The journal in the report: every destructive step is announced before it runs and resolved after;
a step that never came back is reported as ``unknown``, never as done or not done."""

from __future__ import annotations

import logging

import pytest

from fleet_remediation.core.errors import LiveKitUnavailableError
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Outcome


def _journal_lines(records: list[logging.LogRecord]) -> list[dict[str, object]]:
    return [record.__dict__["journal"] for record in records if "journal" in record.__dict__]


def test_an_announced_step_that_never_resolves_is_reported_unknown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    report = ReportBuilder("zombie_reaper", "req-1")
    report.intend("lesson-1", "delete-room", "age 3h >= max 1h")
    intent = report.intend("lesson-2", "delete-room", "age 2h >= max 1h")
    report.resolve(intent, Outcome.DONE, "deleted")

    finished = report.finish()

    outcomes = {a.resource: a.outcome for a in finished.actions}
    assert outcomes == {"lesson-2": Outcome.DONE, "lesson-1": Outcome.UNKNOWN}
    assert finished.status == "partial"
    journal = _journal_lines(caplog.records)
    # Both intents were logged before either outcome: a killed run still leaves them.
    assert [j.get("outcome") for j in journal[:2]] == [None, None]
    assert {"resource": "lesson-1", "outcome": "unknown"}.items() <= journal[-1].items()


def test_a_resolved_failure_carries_its_typed_error() -> None:
    report = ReportBuilder("zombie_reaper", "req-2")
    intent = report.intend("lesson-1", "delete-room", "over age")
    error = LiveKitUnavailableError("LiveKit DeleteRoom did not answer", resource="lesson-1")
    report.resolve(intent, Outcome.FAILED, error.message, error)

    (action,) = report.finish().actions

    assert action.outcome is Outcome.FAILED
    assert action.error is not None
    assert action.error.code == "LiveKitUnavailable"
