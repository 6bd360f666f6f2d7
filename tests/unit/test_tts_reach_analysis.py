"""The concentration test and the parsing of Logs Insights rows (pure functions)."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
import re
import time

import pytest

from devkit import exact_concentration as exact
from devkit.fakes.logs_insights import insights_row
from fleet_remediation.adapters.logs_insights import rows_from_results
from fleet_remediation.contract.signals import TTS_ENDPOINT_FIELD, SignalCatalog
from fleet_remediation.core.errors import AwsApiError
from fleet_remediation.domain.group_verdict import GroupEvent
from fleet_remediation.domain.job_outcomes import JobOutcome
from tts_reach_alarm.analysis import (
    FAILING_FILTER,
    MAX_JOBS,
    Verdict,
    assess_concentration,
    job_outcomes_query,
    job_rooms_query,
    parse_job_outcomes,
)
from tts_reach_alarm.hypergeometric import (
    RELATIVE_PRECISION,
    AnalysisDeadline,
    family_wise_p_value,
    hypergeometric_tail,
)
from tts_reach_alarm.investigation import recheck_alpha


def jobs(failed_on: dict[str, int], healthy_on: dict[str, int]) -> list[JobOutcome]:
    out = []
    for stream, count in failed_on.items():
        out += [JobOutcome(f"AJ_f{stream}{i}", stream, responses=3, first_frames=0) for i in range(count)]
    for stream, count in healthy_on.items():
        out += [JobOutcome(f"AJ_h{stream}{i}", stream, responses=3, first_frames=3) for i in range(count)]
    return out


def test_hypergeometric_tail_matches_direct_enumeration() -> None:
    # 19 rooms, 4 on the worker, 4 failures, all 4 on it: one way out of C(19, 4).
    assert hypergeometric_tail(19, 4, 4, 4) == pytest.approx(1 / math.comb(19, 4))
    assert hypergeometric_tail(10, 5, 3, 0) == 1.0
    expected = sum(math.comb(5, k) * math.comb(5, 3 - k) for k in (2, 3)) / math.comb(10, 3)
    assert hypergeometric_tail(10, 5, 3, 2) == pytest.approx(expected)


def test_incident_four_of_nineteen_on_one_of_ten_workers_is_concentrated() -> None:
    healthy = {f"w{i}": n for i, n in enumerate([2, 2, 2, 2, 2, 2, 1, 1, 1])}  # 15 rooms on 9 workers
    verdict = assess_concentration(jobs({"bad": 4}, healthy), alpha=0.05, min_failed_jobs=2)
    assert verdict.concentrated
    assert verdict.top is not None
    assert verdict.top.log_stream == "bad"
    # The incident report's "0.026 %": no other worker could have looked this bad.
    assert verdict.p_value == pytest.approx(1 / 3876)
    assert verdict.p_value_family == pytest.approx(1 / 3876)


def test_failures_spread_over_workers_are_fleet_wide() -> None:
    failed = {f"w{i}": 1 for i in range(6)}
    healthy = {f"w{i}": 2 for i in range(10)}
    verdict = assess_concentration(jobs(failed, healthy), alpha=0.05, min_failed_jobs=2)
    assert verdict.verdict is Verdict.FLEET_WIDE
    assert not verdict.concentrated
    assert verdict.reason.startswith("fleet-wide")
    assert "no worker with 2 or more" in verdict.reason


def test_provider_outage_every_job_fails_is_fleet_wide() -> None:
    verdict = assess_concentration(jobs({f"w{i}": 2 for i in range(10)}, {}), alpha=0.05, min_failed_jobs=2)
    assert verdict.verdict is Verdict.FLEET_WIDE
    assert verdict.p_value_family == pytest.approx(1.0)


def test_single_failure_is_inconclusive_neither_a_worker_nor_the_fleet() -> None:
    verdict = assess_concentration(jobs({"bad": 1}, {"w1": 1, "w2": 3}), alpha=0.99, min_failed_jobs=2)
    assert verdict.verdict is Verdict.INCONCLUSIVE
    assert verdict.reason.startswith("inconclusive: 1 of 1 failed jobs")
    assert "fewer than 2 in all" in verdict.reason


def test_no_failures_and_single_worker_are_inconclusive() -> None:
    quiet = assess_concentration(jobs({}, {"w1": 3}), alpha=0.05, min_failed_jobs=1)
    assert quiet.verdict is Verdict.INCONCLUSIVE
    lone = assess_concentration(jobs({"bad": 3}, {}), alpha=0.05, min_failed_jobs=1)
    assert lone.verdict is Verdict.INCONCLUSIVE
    assert "only one worker" in lone.reason


def test_family_wise_p_value_is_exact_for_a_small_case() -> None:
    # Workers with 2, 1, 1 jobs; 2 failures. Observed: both on the 2-job worker (p = 1/6).
    # Only that worker can reach p <= 1/6, so the family-wise p-value is also 1/6.
    assert family_wise_p_value([2, 1, 1], 2, 1 / 6) == pytest.approx(1 / 6)
    # Two 2-job workers: either could hold both failures: 2 of C(4, 2) = 6 assignments.
    assert family_wise_p_value([2, 2], 2, 1 / 6) == pytest.approx(2 / 6)


def test_a_p_value_of_zero_cannot_be_reached_by_chance() -> None:
    assert family_wise_p_value([2, 1, 1], 2, 0.0) == 0.0


def test_the_family_wise_p_value_stops_at_its_deadline() -> None:
    with pytest.raises(AnalysisDeadline):
        family_wise_p_value([30] * 40, 25, 1e-6, deadline=time.monotonic() - 1)


def test_rows_shaped_like_the_api_become_job_outcomes() -> None:
    results = [
        insights_row({"job_id": "AJ_1", "@logStream": "agent/c/abc", "responses": 4, "first_frames": 0}),
        insights_row({"job_id": "AJ_2", "@logStream": "agent/c/def", "responses": 2, "first_frames": 2}),
    ]
    outcomes = parse_job_outcomes(rows_from_results(results))
    assert outcomes == [JobOutcome("AJ_1", "agent/c/abc", 4, 0), JobOutcome("AJ_2", "agent/c/def", 2, 2)]
    assert [o.failed for o in outcomes] == [True, False]


def test_malformed_rows_are_typed_errors() -> None:
    with pytest.raises(AwsApiError):
        parse_job_outcomes([{"job_id": "AJ_1", "responses": "1"}])
    with pytest.raises(AwsApiError):
        parse_job_outcomes([{"job_id": "AJ_1", "@logStream": "s", "responses": "many"}])


@pytest.mark.parametrize(
    ("row", "names"),
    [
        ({"@logStream": "s", "responses": "1"}, "job_id or @logStream"),
        ({"job_id": "", "@logStream": "s"}, "job_id or @logStream"),
        ({"job_id": "AJ_1", "@logStream": ""}, "job_id or @logStream"),
        ({"job_id": "AJ_1", "@logStream": "s", "first_frames": "n/a"}, "non-numeric first_frames: 'n/a'"),
        ({"job_id": "AJ_1", "@logStream": "s", "timeouts": "x"}, "non-numeric timeouts: 'x'"),
    ],
)
def test_a_bad_row_names_what_is_wrong_as_a_bad_result(row: dict[str, str], names: str) -> None:
    with pytest.raises(AwsApiError, match=re.escape(names)) as raised:
        parse_job_outcomes([row])
    assert raised.value.aws_code == "BadResult"


def test_counts_absent_or_empty_are_zero_and_decimals_are_whole() -> None:
    rows = [
        {"job_id": "AJ_1", "@logStream": "s", "responses": "3.0", "first_frames": "", "timeouts": "1"},
        {"job_id": "AJ_2", "@logStream": "s"},
    ]
    assert parse_job_outcomes(rows) == [JobOutcome("AJ_1", "s", 3, 0, 1), JobOutcome("AJ_2", "s", 0, 0, 0)]


def test_the_rooms_query_asks_for_each_failed_job_by_id() -> None:
    assert job_rooms_query(["AJ_1", "AJ_2"]) == (
        'filter message = "received job request" and job_id in ["AJ_1", "AJ_2"]\n'
        "| stats latest(room) as room, latest(room_id) as room_id by job_id\n"
        f"| limit {MAX_JOBS}"
    )


def test_outcomes_query_uses_the_signal_definitions() -> None:
    query = job_outcomes_query(SignalCatalog.default(), failing_only=True)
    assert (
        'message = "agent_response_started" or message = "tts_node_first_audio_frame" '
        'or message = "tts_first_audio_timeout"'
    ) in query
    # The agent package's summary lines count too: their fields are summed.
    assert 'or message = "agent_tts_summary"' in query
    assert "sum(responses) as responses_summed" in query
    assert 'sum(strcontains(message, "tts_first_audio_timeout")) as timeouts' in query
    assert "by job_id, @logStream" in query
    assert "filter timeouts > late_frames + late_frames_summed or " in query


# --- exactness against the exact integer computation, deadline, truncation ------------------------


def _random_window(rng: random.Random) -> tuple[list[int], list[int]]:
    workers = rng.randint(2, 12)
    counts = [rng.randint(1, 30) for _ in range(workers)]
    failed = [rng.randint(0, count) if rng.random() < 0.3 else rng.randint(0, count // 4) for count in counts]
    return counts, failed


def _outcomes(counts: list[int], failed: list[int]) -> list[JobOutcome]:
    out = []
    for worker, (count, bad) in enumerate(zip(counts, failed, strict=True)):
        out += [
            JobOutcome(f"AJ_{worker}_{i}", f"w{worker:03d}", responses=2, first_frames=0 if i < bad else 2)
            for i in range(count)
        ]
    return out


def test_both_p_values_equal_the_exact_integer_computation_on_random_windows() -> None:
    rng = random.Random(20260915)
    checked = 0
    for _ in range(300):
        counts, failed = _random_window(rng)
        if sum(failed) == 0:
            continue
        expected_p, expected_family = exact.top_worker_p_values(counts, failed)
        verdict = assess_concentration(_outcomes(counts, failed), alpha=0.05, min_failed_jobs=1)
        assert verdict.p_value == pytest.approx(float(expected_p), rel=1e-9)
        assert verdict.p_value_family == pytest.approx(float(expected_family), rel=1e-9)
        assert verdict.p_value_family_exact
        checked += 1
    assert checked > 250


@pytest.mark.parametrize(
    ("counts", "failed"),
    [
        ([60] * 8, [40, 5, 4, 3, 3, 2, 2, 1]),  # about 1e-27
        ([120, 80, 80, 60, 40, 20], [70, 2, 1, 1, 0, 0]),  # about 1e-39
        ([50] * 10, [10, 9, 9, 8, 8, 8, 7, 7, 7, 6]),  # fleet-wide, many failures
        ([100, 5, 5, 5, 5], [3, 5, 0, 0, 0]),  # the small worker failing entirely
    ],
)
def test_tiny_and_large_p_values_keep_their_precision(counts: list[int], failed: list[int]) -> None:
    # The old float result was one minus a number near one: zero for anything below about 1e-16.
    expected_p, expected_family = exact.top_worker_p_values(counts, failed)
    verdict = assess_concentration(_outcomes(counts, failed), alpha=0.05, min_failed_jobs=1)
    assert verdict.p_value == pytest.approx(float(expected_p), rel=1e-9)
    assert verdict.p_value_family == pytest.approx(float(expected_family), rel=1e-9)


def test_five_thousand_jobs_take_well_under_a_second_of_cpu() -> None:
    rng = random.Random(5)
    jobs = [
        JobOutcome(
            f"AJ_{i}", f"w{(w := rng.randrange(20)):02d}", 2, 0 if rng.random() < (0.3 if w else 0.35) else 2
        )
        for i in range(MAX_JOBS)
    ]
    started = time.process_time()
    verdict = assess_concentration(jobs, alpha=0.05, min_failed_jobs=2)
    # Generous for a shared machine; the previous implementation had not finished after 45 s.
    assert time.process_time() - started < 1.0
    assert verdict.p_value_family_exact


def test_past_its_deadline_the_test_decides_on_bounds_and_never_guesses_a_concentration() -> None:
    healthy = {f"w{i}": n for i, n in enumerate([2, 2, 2, 2, 2, 2, 1, 1, 1])}
    incident = assess_concentration(
        jobs({"bad": 4}, healthy), alpha=0.05, min_failed_jobs=2, deadline=time.monotonic() - 1
    )
    # Ten workers: the Bonferroni bound 10/3876 is still far below alpha.
    assert incident.concentrated
    assert not incident.p_value_family_exact
    assert incident.p_value_family == pytest.approx(10 / 3876)
    assert "analysis deadline" in incident.reason
    spread = assess_concentration(
        jobs({f"w{i}": 2 for i in range(4)}, {f"w{i}": 3 for i in range(8)}),
        alpha=0.05,
        min_failed_jobs=2,
        deadline=time.monotonic() - 1,
    )
    assert not spread.concentrated
    assert spread.p_value_family is None
    assert "analysis deadline" in spread.reason


def test_a_window_cut_at_the_query_limit_is_never_decided_on() -> None:
    verdict = assess_concentration(jobs({"bad": 4}, {"w1": 9}), alpha=0.05, min_failed_jobs=2, truncated=True)
    assert verdict.verdict is Verdict.INCONCLUSIVE
    assert not verdict.concentrated
    assert "even split in time" in verdict.reason


def test_the_rechecks_of_one_incident_spend_at_most_alpha_together() -> None:
    alpha = 0.05
    levels = [recheck_alpha(alpha, look) for look in range(1, 100_001)]
    assert levels[:3] == pytest.approx([0.0304, 0.0076, 0.00338], rel=0.01)
    assert sum(levels) < alpha
    assert all(a > b for a, b in itertools.pairwise(levels))


def test_the_evidence_of_a_verdict_carries_every_figure_of_the_test() -> None:
    """What the report, the suspect event and the message show: the counts, both p-values, the
    level, and whether the corrected p-value is exact (a bound when the analysis ran out of time)."""
    jobs = [JobOutcome(f"AJ_bad{i}", "agent/c/bad", 3, 0) for i in range(4)]
    jobs += [JobOutcome(f"AJ_ok{i}", f"agent/c/w{i % 5}", 3, 3) for i in range(15)]
    verdict = assess_concentration(jobs, alpha=0.05, min_failed_jobs=2)
    assert verdict.concentrated
    evidence = verdict.evidence()
    assert evidence == {
        "jobs_in_window": 19,
        "failed_jobs": 4,
        "workers": 6,
        "jobs_on_worker": 4,
        "failed_jobs_on_worker": 4,
        "p_value_worker": verdict.p_value,
        "p_value": verdict.p_value_family,
        "alpha": 0.05,
        "p_value_exact": True,
        "test": "one-sided hypergeometric per worker; exact min-p over workers",
    }
    assert verdict.p_value is not None
    assert verdict.p_value_family is not None
    assert 0 < verdict.p_value <= verdict.p_value_family < 0.05


def test_the_evidence_of_a_verdict_without_a_top_worker_names_none() -> None:
    evidence = assess_concentration(jobs({}, {"w1": 3, "w2": 2}), alpha=0.05, min_failed_jobs=2).evidence()
    assert (evidence["jobs_on_worker"], evidence["failed_jobs_on_worker"]) == (None, None)
    assert "group" not in evidence


def test_the_evidence_of_a_group_verdict_carries_the_groups_figures() -> None:
    group = GroupEvent("zone", "eu-west-1a", ("w1", "w2"), 3, 2, 9, 0.01)
    verdict = assess_concentration(jobs({"w1": 1, "w2": 1}, {"w3": 3}), alpha=0.05, min_failed_jobs=2)
    evidence = dataclasses.replace(verdict, verdict=Verdict.GROUP, group=group).evidence()
    assert {key: evidence[key] for key in group.evidence()} == {
        "group": "zone=eu-west-1a",
        "failing_in_group": 2,
        "tasks_in_group": 3,
        "failing_in_fleet": 2,
        "p_value_group": 0.01,
    }


def test_a_p_value_below_negligible_is_reported_as_its_bonferroni_bound_not_as_exact() -> None:
    # 420 of 840 jobs fail, all on the worker that ran them: p = 1 / C(840, 420), about 5e-252.
    verdict = assess_concentration(jobs({"bad": 420}, {"w1": 420}), alpha=0.05, min_failed_jobs=2)
    assert verdict.concentrated
    # approx's default absolute tolerance (1e-12) would take any p-value this small.
    assert verdict.p_value == pytest.approx(1 / math.comb(840, 420), rel=1e-9, abs=0)
    assert verdict.p_value_family == pytest.approx(2 / math.comb(840, 420), rel=1e-9, abs=0)
    assert verdict.p_value_family_exact is False


NEAR_ONE = (
    [14, 18, 12, 23, 9, 25, 14, 25, 13, 1, 1, 17, 6, 12, 1, 16, 10, 9, 13, 16, 22, 39],
    [4, 6, 0, 7, 0, 3, 1, 6, 2, 0, 0, 5, 1, 2, 0, 1, 2, 2, 4, 1, 1, 7],
)
# A window whose placed probabilities sum to one plus a rounding: the result is capped at one.
# fmt: off
SUMS_PAST_ONE = (
    [39, 17, 20, 25, 7, 2, 37, 9, 20, 33, 15, 18, 16, 21, 12, 28, 7, 7, 39, 21, 22, 15, 29, 11, 6, 22,
     14, 37, 29],
    [4, 1, 6, 1, 0, 0, 5, 1, 6, 4, 2, 6, 5, 1, 4, 5, 2, 0, 6, 4, 4, 3, 5, 3, 1, 6, 4, 6, 0],
)
# fmt: on


def test_the_family_wise_p_value_holds_its_stated_relative_precision() -> None:
    counts, failed = NEAR_ONE
    _, expected = exact.top_worker_p_values(counts, failed)
    verdict = assess_concentration(_outcomes(counts, failed), alpha=0.05, min_failed_jobs=1)
    assert verdict.p_value_family == pytest.approx(float(expected), rel=RELATIVE_PRECISION)


def test_the_family_wise_p_value_is_never_above_one() -> None:
    verdict = assess_concentration(_outcomes(*SUMS_PAST_ONE), alpha=0.05, min_failed_jobs=1)
    assert verdict.p_value_family == 1.0


def test_a_p_value_every_worker_reaches_is_one_and_exact() -> None:
    # Every job fails: whichever worker holds the failures, its p-value is 1.
    verdict = assess_concentration(jobs({f"w{i}": 2 for i in range(10)}, {}), alpha=0.05, min_failed_jobs=2)
    assert (verdict.p_value_family, verdict.p_value_family_exact) == (1.0, True)


def test_a_worker_all_of_whose_jobs_fail_with_the_fleet_has_a_p_value_of_one() -> None:
    verdict = assess_concentration(jobs({f"w{i}": 2 for i in range(10)}, {}), alpha=0.05, min_failed_jobs=2)
    assert verdict.p_value == 1.0


def test_the_outcomes_query_reads_every_job_unless_asked_for_the_failing_ones() -> None:
    catalog = SignalCatalog.default()
    every = job_outcomes_query(catalog).split("\n| ")
    failing = job_outcomes_query(catalog, failing_only=True).split("\n| ")
    assert [line.split(" ", 1)[0] for line in every] == ["filter", "stats", "limit"]
    assert every[1].endswith(f"latest({TTS_ENDPOINT_FIELD}) as {TTS_ENDPOINT_FIELD} by job_id, @logStream")
    assert every[2] == f"limit {MAX_JOBS}"
    assert failing == [*every[:2], FAILING_FILTER, every[2]]


def test_a_lone_workers_verdict_names_it_and_nothing_is_bounded() -> None:
    lone = assess_concentration(jobs({"bad": 3}, {"bad": 2}), alpha=0.05, min_failed_jobs=1)
    assert lone.top is not None
    assert (lone.top.log_stream, lone.top.jobs, lone.top.failed_jobs) == ("bad", 5, 3)
    assert (lone.p_value, lone.p_value_family, lone.p_value_family_exact) == (None, None, True)
    quiet = assess_concentration(jobs({}, {"w1": 3, "w2": 2}), alpha=0.05, min_failed_jobs=1)
    assert (quiet.top, quiet.p_value_family_exact) == (None, True)
