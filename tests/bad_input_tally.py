"""The bad-input suite's tally: each input it sends records whether the function refused it (one
report failed with a typed error) and whether it stayed without a side effect; the session prints
the counts per function and a last line ``bad inputs: N sent, N refused ..., 0 acted on``. An input
neither refused nor acted on was let through and did nothing (say, taken as a recovery)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest

FUNCTIONS = {"reaper": "zombie_reaper", "tts": "tts_reach_alarm", "drainer": "worker_drainer"}


@dataclass
class Tally:
    sent: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    acted_on: Counter[str] = field(default_factory=Counter)

    def record(self, nodeid: str, refused: bool, quiet: bool) -> None:
        test = nodeid.split("::")[-1]
        function = next((name for key, name in FUNCTIONS.items() if f"_{key}_" in test), "other")
        self.sent[function] += 1
        self.refused[function] += refused and quiet
        self.acted_on[function] += not quiet

    def lines(self) -> list[str]:
        rows = [
            f"  {function:<16} {self.sent[function]:4} sent, {self.refused[function]:4} refused, "
            f"{self.acted_on[function]:4} acted on"
            for function in sorted(self.sent)
        ]
        sent, refused, acted_on = (sum(c.values()) for c in (self.sent, self.refused, self.acted_on))
        summary = (
            f"bad inputs: {sent} sent, {refused} refused with a typed error and no side effect, "
            f"{acted_on} acted on, {sent - refused - acted_on} let through without a side effect"
        )
        return [*rows, summary]


TALLY = pytest.StashKey[Tally]()


def tally(config: pytest.Config) -> Tally:
    return config.stash.setdefault(TALLY, Tally())


def write_tally(terminalreporter: pytest.TerminalReporter) -> None:
    found = terminalreporter.config.stash.get(TALLY, None)
    if found is None:
        return
    terminalreporter.write_line("")
    for line in found.lines():
        terminalreporter.write_line(line)
