"""The mutation check's stats plugin: every function the module's tests reached is credited to all
of them (a template built for the first test is read by the others), and nothing changes outside
mutmut's stats run."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from mutmut.state import state

from devkit import mutation_fixture_hits


@pytest.fixture(autouse=True)
def _fresh_state() -> None:
    state()._stats.clear()
    state().tests_by_mangled_function_name.clear()
    mutation_fixture_hits._reached.clear()
    mutation_fixture_hits._tests.clear()


def _run(test: str, reached: set[str]) -> None:
    """One test as mutmut's stats collector sees it: its hits, then the teardowns (ours runs first,
    mutmut's credits the hits to the test and clears them)."""
    state()._stats.update(reached)
    mutation_fixture_hits.pytest_runtest_teardown(SimpleNamespace(nodeid=test))
    for function in state()._stats:
        state().tests_by_mangled_function_name[function].add(test)
    state()._stats.clear()


def test_what_the_first_test_built_is_credited_to_every_test(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MUTANT_UNDER_TEST", "stats")
    _run("tests/infra/test_a.py::test_builds", {"constructs.x_role", "constructs.x_table"})
    _run("tests/infra/test_b.py::test_reads_the_cache", set())
    _run("tests/infra/test_b.py::test_builds_more", {"constructs.x_rule"})

    mutation_fixture_hits.pytest_sessionfinish()

    everyone = {
        "tests/infra/test_a.py::test_builds",
        "tests/infra/test_b.py::test_reads_the_cache",
        "tests/infra/test_b.py::test_builds_more",
    }
    assert dict(state().tests_by_mangled_function_name) == {
        "constructs.x_role": everyone,
        "constructs.x_table": everyone,
        "constructs.x_rule": everyone,
    }


def test_a_hit_after_the_last_teardown_is_credited_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MUTANT_UNDER_TEST", "stats")
    _run("tests/infra/test_a.py::test_builds", set())
    state()._stats.add("constructs.x_finalizer")  # a session fixture's finalizer

    mutation_fixture_hits.pytest_sessionfinish()

    assert state().tests_by_mangled_function_name["constructs.x_finalizer"] == {
        "tests/infra/test_a.py::test_builds"
    }


def test_outside_the_stats_run_nothing_is_credited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MUTANT_UNDER_TEST", "constructs.x_role__mutmut_1")
    _run("tests/infra/test_a.py::test_builds", {"constructs.x_role"})
    state().tests_by_mangled_function_name.clear()

    mutation_fixture_hits.pytest_sessionfinish()

    assert dict(state().tests_by_mangled_function_name) == {}
    assert mutation_fixture_hits._reached == set()
