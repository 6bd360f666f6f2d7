"""A kill switch with a fixed value, for local runs, benchmarks and tests (never deployed)."""

from __future__ import annotations

from fleet_remediation.core.report_model import Mode


class FixedModeSwitch:
    """A switch with a fixed value: local runs and tests."""

    def __init__(self, mode: Mode) -> None:
        self.mode = mode

    def read(self) -> Mode:
        return self.mode

    def cached(self) -> Mode:
        """Never stale, so never a blocking read (see ``SsmModeSwitch.cached``)."""
        return self.mode
