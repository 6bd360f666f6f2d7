"""The fault table: each fault test records what it injected, into which function, how the function
came out and how long the faulted operation took; ``make faults`` loads this module as a pytest
plugin (``-p tests.faults.table``) to print the table and the tally after the run.

A row's outcome is the test's own verdict: a fault "survived" when every assertion of its test held
(bounded time, one report, every side effect journaled, nothing half done after the next run). A
fault test that does not describe itself through the ``fault`` fixture gets a row named after the
test, its function taken from the module's name, its time the test's own.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest


@dataclass
class FaultRow:
    nodeid: str
    fault: str = ""
    function: str = ""
    outcome: str = ""
    seconds: float | None = None
    survived: bool | None = None


ROWS: list[FaultRow] = []


@dataclass
class FaultRecorder:
    """Handed to a fault test by the ``fault`` fixture; one row per test."""

    row: FaultRow
    _started: float | None = field(default=None, repr=False)

    def describe(self, fault: str, function: str) -> None:
        self.row.fault, self.row.function = fault, function

    def outcome(self, text: str) -> None:
        self.row.outcome = text

    def took(self, seconds: float) -> None:
        self.row.seconds = seconds

    @contextmanager
    def timed(self) -> Iterator[None]:
        """Times the faulted operation (not the test's set-up)."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.row.seconds = time.monotonic() - started


def recorder_for(nodeid: str) -> FaultRecorder:
    row = FaultRow(nodeid)
    ROWS.append(row)
    return FaultRecorder(row)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    rows = [row for row in ROWS if row.nodeid == item.nodeid]
    if not rows and report.when == "call":
        rows = [_row_of_an_undescribed_test(item, report.duration)]
    for row in rows:
        if report.when == "call" or report.failed:
            # A failure in set-up, the test or tear-down is a fault not survived.
            row.survived = report.passed if row.survived is not False else False
    return report


def _row_of_an_undescribed_test(item: pytest.Item, seconds: float) -> FaultRow:
    module = item.path.stem
    function = next((name for name in FUNCTIONS if name.split("_")[-1] in module), "")
    row = FaultRow(item.nodeid, item.name.removeprefix("test_").replace("_", " "), function)
    row.seconds = seconds
    doc = getattr(getattr(item, "obj", None), "__doc__", None)
    row.outcome = doc.strip().splitlines()[0] if doc else ""
    ROWS.append(row)
    return row


FUNCTIONS = ("zombie_reaper", "worker_drainer", "tts_reach_alarm")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    rows = [row for row in ROWS if row.survived is not None]
    if not rows:
        return
    widths = (
        max(len("fault"), *(len(r.fault or r.nodeid) for r in rows)),
        max(len("function"), *(len(r.function) for r in rows)),
    )
    write = terminalreporter.write_line
    write("")
    write(f"{'fault':<{widths[0]}}  {'function':<{widths[1]}}  {'time':>7}  outcome")
    for r in rows:
        seconds = "-" if r.seconds is None else f"{r.seconds:6.2f}s"
        verdict = "survived" if r.survived else "NOT SURVIVED"
        outcome = f"{verdict}: {r.outcome}" if r.outcome else verdict
        write(f"{r.fault or r.nodeid:<{widths[0]}}  {r.function:<{widths[1]}}  {seconds:>7}  {outcome}")
    write(f"faults: {len(rows)} tried, {sum(bool(r.survived) for r in rows)} survived")
