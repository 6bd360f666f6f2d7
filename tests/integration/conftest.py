"""The integration suite's session summary: the bad-input tally (``tests/bad_input_tally.py``)."""

from __future__ import annotations

import pytest

from tests.bad_input_tally import write_tally


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    write_tally(terminalreporter)
