"""The service-behaviour profile: every number has a source, the docs table shows the profile as it
is, and its helpers compute what its docstrings say."""

from __future__ import annotations

import random
from dataclasses import fields
from pathlib import Path

import pytest

from livekit_fleet_remediation.offline.service_profile import (
    ASSUMPTION,
    AWS_PROFILE,
    SOURCES,
    Percentiles,
    RateLimiter,
    SimulatedClock,
    TokenBucket,
    profile_rows,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "development" / "service-profile.md"


def test_every_behaviour_has_a_source_and_every_source_a_behaviour() -> None:
    behaviours = {spec.name for spec in fields(AWS_PROFILE)} - {"name", "version"}
    assert set(SOURCES) == behaviours
    for name, source in SOURCES.items():
        assert source.startswith(ASSUMPTION) or "https://docs.aws.amazon.com/" in source, name


def test_the_docs_table_is_the_profile() -> None:
    text = DOCS.read_text(encoding="utf-8")
    table = [line for line in text.splitlines() if line.startswith("| `")]
    expected = [f"| `{name}` | {number} | {source} |" for name, number, source in profile_rows()]
    assert table == expected
    assert f"`{AWS_PROFILE.name}`" in text
    assert f"version {AWS_PROFILE.version}" in text


def test_percentiles_are_pinned_at_p50_and_p99_and_grow_between() -> None:
    delay = Percentiles(p50=2.0, p99=20.0)
    assert delay.at(0.5) == pytest.approx(2.0)
    assert delay.at(0.99) == pytest.approx(20.0)
    assert delay.at(0.1) < delay.at(0.5) < delay.at(0.9) < delay.at(0.99) < delay.at(0.999)
    draws = [delay.draw(random.Random(seed)) for seed in range(400)]
    assert 1.0 < sorted(draws)[200] < 4.0
    with pytest.raises(ValueError, match="strictly between"):
        delay.at(1.0)


def test_insights_time_grows_with_the_bytes_scanned() -> None:
    small = AWS_PROFILE.insights_queue_and_run_seconds(1e6, 0.99)
    large = AWS_PROFILE.insights_queue_and_run_seconds(5e9, 0.99)
    assert small == pytest.approx(6.0 + 4.0 + 0.01)
    assert large - small == pytest.approx(10.0 * (5e9 - 1e6) / 1e9)
    assert AWS_PROFILE.insights_queue_and_run_seconds(1e6, 0.5) < small


def test_alarm_delay_and_lambda_retries() -> None:
    assert AWS_PROFILE.alarm_evaluation_delay_seconds(0.99) == pytest.approx(30 + 120 + 0.99 * 60)
    assert AWS_PROFILE.lambda_retry_schedule_seconds() == (60.0, 180.0)
    assert AWS_PROFILE.ecs_throttle("DescribeTasks") == AWS_PROFILE.ecs_read
    assert AWS_PROFILE.ecs_throttle("UpdateTaskProtection") == AWS_PROFILE.ecs_write


def test_rate_limiter_allows_the_burst_then_the_refill_rate() -> None:
    limiter = RateLimiter(TokenBucket(burst=3, per_second=2))
    assert [limiter.take(0.0) for _ in range(4)] == [True, True, True, False]
    assert limiter.take(0.5)
    assert not limiter.take(0.5)


def test_simulated_clock_sleeps_without_waiting() -> None:
    clock = SimulatedClock(start_epoch_seconds=100.0)
    clock.sleep(3600.0)
    assert clock.monotonic() == 3600.0
    assert clock.time() == 3700.0


def test_documented_numbers_are_the_pages_numbers() -> None:
    assert AWS_PROFILE.insights_concurrent_queries == 100
    assert AWS_PROFILE.insights_query_timeout_seconds == 3600
    assert (AWS_PROFILE.insights_results_per_page, AWS_PROFILE.insights_results_max) == (10_000, 100_000)
    assert AWS_PROFILE.ecs_stop_timeout_seconds == 30
    assert (AWS_PROFILE.ecs_rolling_minimum_healthy_percent, AWS_PROFILE.ecs_rolling_maximum_percent) == (
        100,
        200,
    )
    assert AWS_PROFILE.eventbridge_retry_hours == 24
    assert AWS_PROFILE.lambda_max_event_age_seconds == 6 * 3600


def test_delivery_chains_add_their_parts() -> None:
    q = 0.99
    cold = AWS_PROFILE.lambda_cold_start_seconds.at(q)
    assert AWS_PROFILE.event_to_handler_seconds(q) == pytest.approx(5.0 + cold)
    assert AWS_PROFILE.tick_start_seconds(q) == pytest.approx(30.0 + cold)
    assert AWS_PROFILE.notification_seconds(q) == pytest.approx(5.0)
