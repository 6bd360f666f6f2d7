"""The named delay profiles the replay and ``bench.detection`` run under (``--profile``): ``aws``, the
timing part of the service-behaviour profile (``service_profile.AWS_PROFILE``, its sources in
docs/development/service-profile.md), and ``none`` (instant: every decision at the exact end of its
minute, seeing every line, for comparison).
"""

from __future__ import annotations

from livekit_fleet_remediation.offline.delays import INSTANT, DelayProfile, Spread
from livekit_fleet_remediation.offline.service_profile import AWS_PROFILE, Percentiles, ServiceProfile

# What the service profile does not hold, stated as assumptions (AWS publishes neither figure).
WARM_MINUTES = 5.0
DEPLOYMENT = Spread(300.0, 900.0)
TIMING_ASSUMPTIONS = (
    f"ASSUMPTION: a Lambda environment idle for more than {WARM_MINUTES:g} minutes is gone (the next "
    "invocation starts cold); AWS publishes no idle lifetime",
    f"ASSUMPTION: a rolling deployment lasts p50 {DEPLOYMENT.p50 / 60:g} min, "
    f"p99 {DEPLOYMENT.p99 / 60:g} min",
    "the alarm's datapoint for a minute is visible after the lines' ingestion and the metric's own delay; "
    "the alarm evaluates once a minute at its own offset (the next evaluation after it is visible)",
)


def _spread(delay: Percentiles) -> Spread:
    return Spread(delay.p50, delay.p99)


def delays_of(profile: ServiceProfile) -> DelayProfile:
    """The delays the timing model needs, from one service profile."""
    return DelayProfile(
        name="aws",
        version=f"{profile.name} v{profile.version}",
        source="livekit_fleet_remediation.offline.service_profile (docs/development/service-profile.md)",
        metric_visible=_spread(profile.metric_visible_seconds),
        alarm_minute_phase=profile.alarm_evaluation_interval_seconds == 60.0,
        event_delivery=_spread(profile.eventbridge_delivery_seconds),
        schedule_jitter=_spread(profile.scheduled_tick_jitter_seconds),
        log_visible=_spread(profile.log_ingestion_seconds),
        insights_queue=_spread(profile.insights_queue_seconds),
        insights_run=_spread(profile.insights_run_base_seconds),
        insights_seconds_per_gb=_spread(profile.insights_seconds_per_gb),
        cold_start=_spread(profile.lambda_cold_start_seconds),
        warm_minutes=WARM_MINUTES,
        task_start=_spread(profile.ecs_task_start_seconds),
        deployment=DEPLOYMENT,
        assumptions=TIMING_ASSUMPTIONS,
    )


PROFILES: dict[str, DelayProfile] = {"aws": delays_of(AWS_PROFILE), "none": INSTANT}


def profile_named(name: str) -> DelayProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown delay profile {name!r}: use one of {', '.join(PROFILES)}") from None
