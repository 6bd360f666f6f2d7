"""The agent package's log bytes as the cost model prices them (decision 0015)."""

from __future__ import annotations

import math

import pytest

from fleet_remediation.contract.agent_lines import (
    PER_RESPONSE_LINES_BYTES,
    SUMMARY_LINE_BYTES,
    TIMEOUT_LINE_BYTES,
    agent_signal_bytes,
    per_response_signal_bytes,
)


def test_a_busy_job_writes_one_summary_per_interval() -> None:
    # 1 task, 1 job, 600 responses a minute: every 30-s interval has a response, two summaries a minute.
    got = agent_signal_bytes(1, 600, 30.0, jobs_per_task=1, timeout_rate=0.0)
    assert got == pytest.approx(2 * SUMMARY_LINE_BYTES)


def test_a_quiet_job_writes_a_summary_only_for_intervals_with_a_response() -> None:
    # One response a minute on one job: an interval of 30 s holds one with probability 1 - e^-0.5.
    got = agent_signal_bytes(1, 1, 30.0, jobs_per_task=1, timeout_rate=0.0)
    assert got == pytest.approx(2 * (1 - math.exp(-0.5)) * SUMMARY_LINE_BYTES)
    assert agent_signal_bytes(0, 100) == agent_signal_bytes(10, 0) == 0.0


def test_timeouts_are_one_line_each_and_the_summary_is_a_fraction_of_per_response_lines() -> None:
    assert agent_signal_bytes(1, 600, jobs_per_task=1, timeout_rate=0.5) == pytest.approx(
        2 * SUMMARY_LINE_BYTES + 300 * TIMEOUT_LINE_BYTES
    )
    # 50 tasks, 2,000 responses a minute: under a tenth of the per-response lines' bytes.
    assert agent_signal_bytes(50, 2000) < 0.1 * per_response_signal_bytes(2000)
    assert per_response_signal_bytes(1, timeout_rate=0.0) == PER_RESPONSE_LINES_BYTES


@pytest.mark.parametrize("args", [(-1, 10, 30.0), (1, -1, 30.0), (1, 10, 0.0)])
def test_bad_inputs_are_refused(args: tuple[int, float, float]) -> None:
    with pytest.raises(ValueError, match="must be"):
        agent_signal_bytes(*args)
