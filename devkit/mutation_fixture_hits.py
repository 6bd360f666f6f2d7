"""A pytest plugin for mutmut's stats run: every function any of the module's tests reached counts
as reached by all of them.

mutmut credits a function to the test during which it ran. The construct's tests read templates
synthesized once per session (a session fixture, and a cache behind it), so only the first test to
ask for a template is credited with the code that built it; the others would never run against
those mutants, which would then survive tests that kill them. Loaded only for the modules that
name it (``Module.shared_fixtures`` in devkit/mutation_modules.py); inert outside the stats run.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from mutmut.state import state

_reached: set[str] = set()
_tests: set[str] = set()


def _collecting_stats() -> bool:
    return os.environ.get("MUTANT_UNDER_TEST") == "stats"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: Any) -> None:
    if _collecting_stats():
        _reached.update(state()._stats)
        _tests.add(item.nodeid.removeprefix("mutants/"))


def pytest_sessionfinish() -> None:
    if not _collecting_stats():
        return
    _reached.update(state()._stats)
    for function in _reached:
        state().tests_by_mangled_function_name[function].update(_tests)
