"""``make mutation --survivors`` re-tests what a new test may now kill: the survivors and the mutants no
test reached (mutmut keeps a "no tests" verdict after a new test reaches the function)."""

from __future__ import annotations

import pytest

from devkit import mutation
from devkit.mutation_modules import by_name


def test_the_survivors_to_re_test_are_the_survivors_and_the_mutants_no_test_reached(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    verdicts = {
        "a.x_f__mutmut_1": "killed",
        "a.x_f__mutmut_2": "survived",
        "a.x_g__mutmut_1": "no tests",
        "a.x_g__mutmut_2": "timeout",
        "a.x_h__mutmut_1": "not checked",
    }
    monkeypatch.setattr(mutation, "results", lambda staging: verdicts)
    assert mutation.survivors(by_name("routing")) == ["a.x_f__mutmut_2", "a.x_g__mutmut_1"]
