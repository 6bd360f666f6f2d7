"""Print the smoke run's table at the end of the pytest run (also under `make test`, which captures
output): function, event kind, report status, time per invoke."""

from __future__ import annotations

import pytest

SMOKE_ROWS = pytest.StashKey[list[tuple[str, ...]]]()
SMOKE_TITLE = pytest.StashKey[str]()
HEADER = ("function", "event", "HTTP", "status", "mode", "trigger", "errors", "invoke s", "init ms")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    rows = config.stash.get(SMOKE_ROWS, [])
    if not rows:
        return
    widths = [max(len(row[i]) for row in [HEADER, *rows]) for i in range(len(HEADER))]
    terminalreporter.section(
        config.stash.get(SMOKE_TITLE, "deploy artifact under the Lambda runtime emulator")
    )
    for row in [HEADER, *rows]:
        terminalreporter.write_line(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        )
