"""The responder's concentration test (``tts_reach_alarm.analysis``) at each of its edges and one
step either side, on the unit that owns it: the family-wise p-value against alpha (``p < alpha``:
at alpha is fleet-wide), the Bonferroni bound past the analysis deadline against alpha, the minimum
failed jobs in all and on the top worker, and the two workers it takes to compare; and the tail
p-value (``hypergeometric``) at the bounds of its counts and of its support, and the family-wise
p-value at its deadline."""

from __future__ import annotations

import math
import time
from types import SimpleNamespace

import pytest

from devkit import exact_concentration as exact
from fleet_remediation.domain.job_outcomes import JobOutcome
from tts_reach_alarm import hypergeometric
from tts_reach_alarm.analysis import Verdict, assess_concentration
from tts_reach_alarm.hypergeometric import (
    AnalysisDeadline,
    family_wise_p_value,
    hypergeometric_tail,
    log_hypergeometric_tail,
)

HEALTHY = {f"w{i}": n for i, n in enumerate([2, 2, 2, 2, 2, 2, 1, 1, 1])}


def jobs(failed_on: dict[str, int], healthy_on: dict[str, int]) -> list[JobOutcome]:
    out = []
    for stream, count in failed_on.items():
        out += [JobOutcome(f"AJ_f{stream}{i}", stream, responses=3, first_frames=0) for i in range(count)]
    for stream, count in healthy_on.items():
        out += [JobOutcome(f"AJ_h{stream}{i}", stream, responses=3, first_frames=3) for i in range(count)]
    return out


def _alpha_around(value: float, step: int) -> float:
    return value if step == 0 else math.nextafter(value, math.inf if step > 0 else -math.inf)


@pytest.mark.parametrize(
    ("step", "verdict"),
    [(-1, Verdict.FLEET_WIDE), (0, Verdict.FLEET_WIDE), (1, Verdict.CONCENTRATED)],
    ids=["alpha-under-p", "alpha-at-p", "alpha-over-p"],
)
def test_a_concentration_needs_a_family_wise_p_strictly_below_alpha(step: int, verdict: Verdict) -> None:
    window = jobs({"bad": 4}, HEALTHY)
    corrected = assess_concentration(window, alpha=0.05, min_failed_jobs=2).p_value_family
    assert corrected is not None
    found = assess_concentration(window, alpha=_alpha_around(corrected, step), min_failed_jobs=2)
    assert found.verdict is verdict
    assert found.p_value_family == corrected


@pytest.mark.parametrize(
    ("step", "verdict"),
    [(-1, Verdict.INCONCLUSIVE), (0, Verdict.INCONCLUSIVE), (1, Verdict.CONCENTRATED)],
    ids=["alpha-under-bound", "alpha-at-bound", "alpha-over-bound"],
)
def test_past_the_deadline_the_bound_must_be_strictly_below_alpha(step: int, verdict: Verdict) -> None:
    window = jobs({"bad": 4}, HEALTHY)
    past = time.monotonic() - 1
    bound = assess_concentration(window, alpha=0.05, min_failed_jobs=2, deadline=past).p_value_family
    assert bound is not None
    found = assess_concentration(window, alpha=_alpha_around(bound, step), min_failed_jobs=2, deadline=past)
    assert found.verdict is verdict


@pytest.mark.parametrize(
    ("least", "verdict"),
    [(3, Verdict.CONCENTRATED), (4, Verdict.CONCENTRATED), (5, Verdict.INCONCLUSIVE)],
    ids=["minimum-under", "minimum-at", "minimum-over"],
)
def test_the_minimum_failed_jobs_in_all_at_its_edge(least: int, verdict: Verdict) -> None:
    # Four failures, all on one worker among ten: significant at any of these minimums.
    found = assess_concentration(jobs({"bad": 4}, HEALTHY), alpha=0.05, min_failed_jobs=least)
    assert found.verdict is verdict


@pytest.mark.parametrize(
    ("least", "verdict"),
    [(2, Verdict.CONCENTRATED), (3, Verdict.CONCENTRATED), (4, Verdict.FLEET_WIDE)],
    ids=["top-minimum-under", "top-minimum-at", "top-minimum-over"],
)
def test_the_minimum_failed_jobs_on_the_top_worker_at_its_edge(least: int, verdict: Verdict) -> None:
    # Six failures, three on the top worker (of its three jobs), one each on three others.
    window = jobs({"bad": 3, "w0": 1, "w1": 1, "w2": 1}, {f"w{i}": 6 for i in range(3, 40)})
    found = assess_concentration(window, alpha=0.05, min_failed_jobs=least)
    assert found.verdict is verdict, found.reason


@pytest.mark.parametrize(("workers", "compared"), [(1, False), (2, True)], ids=["one-worker", "two-workers"])
def test_it_takes_two_workers_to_compare(workers: int, compared: bool) -> None:
    window = jobs({"bad": 4}, {"w0": 6} if workers == 2 else {"bad": 6})
    found = assess_concentration(window, alpha=0.05, min_failed_jobs=2)
    assert (found.p_value is not None) is compared
    assert (found.verdict is Verdict.INCONCLUSIVE) is not compared


@pytest.mark.parametrize(
    ("least", "verdict"),
    [(3, Verdict.CONCENTRATED), (4, Verdict.CONCENTRATED), (5, Verdict.INCONCLUSIVE)],
    ids=["minimum-under", "minimum-at", "minimum-over"],
)
def test_past_the_deadline_the_minimum_failed_jobs_still_holds(least: int, verdict: Verdict) -> None:
    past = time.monotonic() - 1
    found = assess_concentration(jobs({"bad": 4}, HEALTHY), alpha=0.05, min_failed_jobs=least, deadline=past)
    assert found.verdict is verdict


def test_past_the_deadline_a_concentration_keeps_the_workers_own_p_and_its_bound() -> None:
    window = jobs({"bad": 4}, HEALTHY)
    found = assess_concentration(window, alpha=0.05, min_failed_jobs=2, deadline=time.monotonic() - 1)
    own = 1 / math.comb(19, 4)
    assert found.verdict is Verdict.CONCENTRATED
    assert found.top is not None
    assert found.top.log_stream == "bad"
    assert found.p_value == pytest.approx(own)
    # The Bonferroni bound over the ten workers, marked as a bound.
    assert found.p_value_family == pytest.approx(10 * own)
    assert found.p_value_family_exact is False


def test_past_the_deadline_an_unsettled_bracket_keeps_the_worker_and_its_own_p_and_no_family_p() -> None:
    # Two failures, both on a 2-job worker of fifty: its own p is below alpha, the bound over fifty is not.
    window = jobs({"bad": 2}, {f"w{i}": 2 for i in range(49)})
    found = assess_concentration(window, alpha=0.005, min_failed_jobs=2, deadline=time.monotonic() - 1)
    own = 1 / math.comb(100, 2)
    assert found.verdict is Verdict.INCONCLUSIVE
    assert found.top is not None
    assert found.top.log_stream == "bad"
    assert found.p_value == pytest.approx(own)
    assert (found.p_value_family, found.p_value_family_exact) == (None, False)
    assert found.reason.endswith("(p between 2.0e-04 and 0.01; analysis deadline)")


def test_past_the_deadline_the_bound_is_at_most_one() -> None:
    # Two failures on two of a hundred one-job workers: the bound's sum passes 1 and is capped there.
    window = jobs({"a": 1, "b": 1}, {f"w{i}": 1 for i in range(98)})
    found = assess_concentration(window, alpha=0.05, min_failed_jobs=1, deadline=time.monotonic() - 1)
    assert found.verdict is Verdict.INCONCLUSIVE
    assert found.reason.endswith("and 1; analysis deadline)")


BOUNDS = {
    "marked-under": (-1, 3, False),
    "marked-none": (0, 3, True),
    "marked-all": (10, 3, True),
    "marked-over": (11, 3, False),
    "draws-under": (4, -1, False),
    "draws-none": (4, 0, True),
    "draws-all": (4, 10, True),
    "draws-over": (4, 11, False),
}


@pytest.mark.parametrize(("marked", "draws", "valid"), BOUNDS.values(), ids=BOUNDS.keys())
def test_the_tail_takes_marked_and_draws_from_none_to_all(marked: int, draws: int, valid: bool) -> None:
    if valid:
        assert hypergeometric_tail(10, marked, draws, 0) == 1.0
    else:
        with pytest.raises(ValueError, match="within the population"):
            hypergeometric_tail(10, marked, draws, 0)


@pytest.mark.parametrize(
    "observed", [2, 3, 4, 5, 6], ids=["under-low", "low", "over-low", "high", "over-high"]
)
def test_the_tail_at_each_end_of_its_support(observed: int) -> None:
    # 8 of 10 marked, 5 drawn: at least 3 and at most 5 of the draws are marked.
    tail = hypergeometric_tail(10, 8, 5, observed)
    assert tail == pytest.approx(float(exact.hypergeometric_tail(10, 8, 5, observed)), rel=1e-12)
    assert (tail == 1.0) is (observed <= 3)
    assert (tail == 0.0) is (observed > 5)


@pytest.mark.parametrize(
    ("step", "stops"), [(-1, True), (0, False), (1, False)], ids=["deadline-passed", "at-deadline", "before"]
)
def test_the_family_wise_p_value_stops_only_once_its_deadline_has_passed(
    monkeypatch: pytest.MonkeyPatch, step: int, stops: bool
) -> None:
    now = 1000.0
    monkeypatch.setattr(hypergeometric, "time", SimpleNamespace(monotonic=lambda: now))
    deadline = now if step == 0 else math.nextafter(now, math.inf if step > 0 else -math.inf)
    # Two 2-job workers, two failures: either could hold both (2 of the 6 ways).
    if stops:
        with pytest.raises(AnalysisDeadline):
            family_wise_p_value([2, 2], 2, 1 / 6, deadline=deadline)
    else:
        assert family_wise_p_value([2, 2], 2, 1 / 6, deadline=deadline) == pytest.approx(2 / 6)


@pytest.mark.parametrize("observed", [2, 3], ids=["under-lowest", "lowest"])
def test_the_log_tail_is_zero_at_and_under_the_lowest_count(observed: int) -> None:
    assert log_hypergeometric_tail(10, 8, 5, observed) == 0.0


def test_a_tail_at_the_mode_sums_the_side_below_until_its_terms_are_negligible() -> None:
    # 250 of 500 draws from a half-marked 1,000: the terms below fall under 1e-17 of the sum long before 0.
    expected = float(exact.hypergeometric_tail(1000, 500, 500, 250))
    assert hypergeometric_tail(1000, 500, 500, 250) == pytest.approx(expected, rel=1e-9)
