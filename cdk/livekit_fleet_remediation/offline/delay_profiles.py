"""The named delay profiles the replay and ``bench.detection`` run under (``--profile``): ``none``
(instant: every decision at the exact end of its minute, seeing every line) and ``aws``.

Where AWS publishes no number, the ``aws`` profile states an assumption (listed in its
``assumptions``), and the figures that depend on it say so.
"""

from __future__ import annotations

from livekit_fleet_remediation.offline.delays import INSTANT, DelayProfile, Spread

AWS_DELAYS = DelayProfile(
    name="aws",
    version="2026-12-02.1",
    source=(
        "CloudWatch alarm evaluation (docs: AlarmThatSendsEmail.html, 'Alarm evaluation'), metric "
        "filters (MonitoringLogData.html), EventBridge schedules (eb-scheduled-rule-pattern.html), "
        "Logs Insights (AnalyzingLogData.html), Lambda execution environments "
        "(lambda-runtime-environment.html), ECS deployments (deployment-type-ecs.html)"
    ),
    metric_visible=Spread(60.0, 180.0),
    alarm_minute_phase=True,
    event_delivery=Spread(0.5, 5.0),
    schedule_jitter=Spread(10.0, 55.0),
    log_visible=Spread(5.0, 30.0),
    insights_queue=Spread(0.5, 10.0),
    insights_run=Spread(1.5, 8.0),
    insights_seconds_per_gb=10.0,
    cold_start=Spread(1.0, 3.0),
    warm_minutes=5.0,
    task_start=Spread(45.0, 120.0),
    deployment=Spread(300.0, 900.0),
    assumptions=(
        "metric filter to alarm-visible datapoint p50 60 s, p99 180 s (AWS publishes no figure; the "
        "1-3 minutes operators report)",
        "alarms evaluate once a minute at their own offset; a datapoint not yet visible waits for the "
        "next evaluation",
        "EventBridge delivery p50 0.5 s, p99 5 s; a rate() schedule fires p50 10 s, p99 55 s after "
        "its minute (AWS: no second-level precision)",
        "a log line is searchable by Logs Insights p50 5 s, p99 30 s after its timestamp (the awslogs "
        "driver's 5 s flush, then ingestion)",
        "Logs Insights: queued p50 0.5 s, p99 10 s; running p50 1.5 s, p99 8 s plus 10 s per GB scanned",
        "Lambda cold start p50 1 s, p99 3 s; an environment idle over 5 minutes is gone",
        "a replacement task RUNNING p50 45 s, p99 120 s after the scheduler asks; a rolling deployment "
        "lasts p50 5 min, p99 15 min",
    ),
)

PROFILES: dict[str, DelayProfile] = {"aws": AWS_DELAYS, "none": INSTANT}


def profile_named(name: str) -> DelayProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown delay profile {name!r}: use one of {', '.join(PROFILES)}") from None
