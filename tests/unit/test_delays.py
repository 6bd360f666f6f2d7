"""The timing model the replay and ``bench.detection`` share (``offline.delays``): seeded draws with
the profile's p50 and p99, an alarm that sees a minute only at its first once-a-minute evaluation
after the metric is visible, cold starts only after idling, Insights time growing with the bytes
scanned, late lines missing from a query's end; and the ``aws`` profile is the service profile's."""

from __future__ import annotations

import random
import statistics

import pytest

from livekit_fleet_remediation.offline.delay_profiles import PROFILES, profile_named
from livekit_fleet_remediation.offline.delays import INSTANT, DelayProfile, Delays, Spread
from livekit_fleet_remediation.offline.service_profile import AWS_PROFILE

AWS = profile_named("aws")


def test_draws_have_the_profiles_median_and_99th_percentile() -> None:
    spread = Spread(30.0, 120.0)
    rng = random.Random(7)
    draws = sorted(spread.draw(rng) for _ in range(20_000))
    assert statistics.median(draws) == pytest.approx(30.0, rel=0.05)
    assert draws[int(0.99 * len(draws))] == pytest.approx(120.0, rel=0.1)
    assert spread.share_within(30.0) == pytest.approx(0.5)
    assert spread.share_within(120.0) == pytest.approx(0.99)


def test_the_same_seed_draws_the_same_delays_and_another_seed_others() -> None:
    def draws(seed: int) -> list[float]:
        delays = Delays(AWS, seed)
        return [delays.alarm_sees("vad", 60.0 * m) for m in range(1, 20)]

    assert draws(3) == draws(3)
    assert draws(3) != draws(4)


def test_an_alarm_sees_a_minute_at_its_first_evaluation_after_the_metric_is_visible() -> None:
    delays = Delays(AWS, 1)
    seen = [delays.alarm_sees("vad", 600.0) for _ in range(200)]
    phase = seen[0] % 60
    # Always on the alarm's own once-a-minute evaluation, never before the period's end.
    assert all(abs((at - phase) % 60) < 1e-6 or abs((at - phase) % 60 - 60) < 1e-6 for at in seen)
    assert min(seen) > 600.0
    assert statistics.median(seen) - 600.0 >= AWS.metric_visible.p50


def test_the_instant_profile_decides_at_the_end_of_the_minute() -> None:
    delays = Delays(INSTANT, 1)
    assert delays.alarm_sees("vad", 600.0) == 600.0
    assert delays.invoked("drainer", 600.0) == 600.0
    assert delays.insights_seconds(5e9) == 0.0
    assert delays.share_visible(540.0, 600.0, 600.0) == 1.0


def test_a_cold_start_only_after_the_function_idled() -> None:
    profile = DelayProfile(
        name="cold", version="t", source="test", cold_start=Spread(2.0, 2.0), warm_minutes=5
    )
    delays = Delays(profile, 1)
    assert delays.invoked("drainer", 0.0) == 2.0  # the first invocation starts cold
    assert delays.invoked("drainer", 60.0) == 60.0  # warm a minute later
    assert delays.invoked("drainer", 60.0 + 6 * 60) == 60.0 + 6 * 60 + 2.0  # idle 6 minutes: cold again
    assert delays.invoked("responder", 421.0) == 423.0  # another function has its own environments


def test_insights_time_grows_with_the_bytes_scanned() -> None:
    profile = DelayProfile(
        name="scan",
        version="t",
        source="test",
        insights_run=Spread(1.0, 1.0),
        insights_seconds_per_gb=Spread(10.0, 10.0),
    )
    delays = Delays(profile, 1)
    assert delays.insights_seconds(0) == pytest.approx(1.0)
    assert delays.insights_seconds(3e9) == pytest.approx(31.0)


def test_a_query_misses_the_lines_not_yet_searchable_at_its_end() -> None:
    delays = Delays(AWS, 1)
    # A query at the minute's end finds most of it, not all; half a minute later nearly all.
    at_end = delays.share_visible(540.0, 600.0, 600.0)
    assert 0.5 < at_end < 1.0
    assert delays.share_visible(540.0, 600.0, 630.0) > at_end
    assert delays.share_visible(540.0, 600.0, 540.0) == 0.0


def test_the_aws_profile_is_the_service_profiles_timing() -> None:
    assert AWS.version == f"{AWS_PROFILE.name} v{AWS_PROFILE.version}"
    assert (AWS.metric_visible.p50, AWS.metric_visible.p99) == (
        AWS_PROFILE.metric_visible_seconds.p50,
        AWS_PROFILE.metric_visible_seconds.p99,
    )
    assert AWS.insights_queue.p99 == AWS_PROFILE.insights_queue_seconds.p99
    assert AWS.schedule_jitter.p99 == AWS_PROFILE.scheduled_tick_jitter_seconds.p99
    assert AWS.cold_start.p50 == AWS_PROFILE.lambda_cold_start_seconds.p50
    assert AWS.log_visible.p99 == AWS_PROFILE.log_ingestion_seconds.p99
    assert all(text.startswith(("ASSUMPTION", "the alarm")) for text in AWS.assumptions)
    assert set(PROFILES) == {"aws", "none"}
    with pytest.raises(ValueError, match="unknown delay profile"):
        profile_named("instant")
