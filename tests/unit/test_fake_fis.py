"""The explicit FIS of ``lkfr drill --via fis``'s tests answers only what FIS's model allows: an
answer with a member, a value or a required member FIS's output shape refuses fails the test that
provoked it instead of passing through."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from devkit.fakes.fis import check_reply


def _experiment(**state: str) -> dict[str, object]:
    return {"experiment": {"id": "EXP1", "state": state, "creationTime": datetime.now(UTC)}}


def test_an_answer_the_model_allows_passes() -> None:
    check_reply("GetExperiment", _experiment(status="running", reason="Experiment is running."))


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (_experiment(status="exploded"), "'exploded' is not one of the allowed values"),
        ({"experiment": {"id": "EXP1", "colour": "red"}}, "no API member of that name"),
        ({"resolvedTargets": [{"targetInformation": "arn"}]}, "not a map"),
    ],
)
def test_an_answer_the_model_refuses_fails_naming_what(answer: dict[str, object], said: str) -> None:
    name = "ListExperimentResolvedTargets" if "resolvedTargets" in answer else "GetExperiment"
    with pytest.raises(AssertionError, match=said):
        check_reply(name, answer)
