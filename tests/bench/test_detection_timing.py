"""The fleet-scale detection benchmark under a delay profile: the same traffic (its own seed) is
decided later under ``aws`` than under ``none``, by what the recorded waits say, and the instant
profile decides at the end of the minute. One 60-task failure run per profile (a few seconds)."""

from __future__ import annotations

import functools

from bench import detection
from bench._detection_timing import BenchTiming
from bench._task_detection import FAILURE_RUN_MINUTES, Bench, Run
from devkit.fleet_counts import fleet
from fleet_remediation.contract.detection import DetectionConfig
from fleet_remediation.contract.task_reach import TaskReachSettings
from livekit_fleet_remediation.offline.delay_profiles import profile_named


@functools.cache
def silent_task_run(profile: str) -> Run:
    spec = fleet("tts-dead-worker", 60, 2000.0, FAILURE_RUN_MINUTES, 1)
    timing = BenchTiming(profile_named(profile), spec.seed, bytes_per_line=300.0)
    return Bench(spec, DetectionConfig(), TaskReachSettings(), timing).execute()


def test_the_tick_decides_after_its_jitter_and_query_and_never_before_the_instant_model() -> None:
    instant, aws = silent_task_run("none"), silent_task_run("aws")
    bad = instant.truth.bad_task
    assert bad is not None
    assert bad == aws.truth.bad_task
    assert instant.truth.onset_seconds == aws.truth.onset_seconds  # the same traffic
    at_once, delayed = instant.options["a_tick"], aws.options["a_tick"]
    assert bad in at_once.cordons
    assert bad in delayed.cordons
    # Instant: at the end of the minute the tick read, nothing waited for.
    assert at_once.cordons[bad] % 60 == 0
    assert all(wait == 0.0 for cause, wait in at_once.waits[bad].items() if cause != "minute_end")
    waits = delayed.waits[bad]
    added = sum(wait for cause, wait in waits.items() if cause != "minute_end")
    assert delayed.cordons[bad] == waits["minute_end"] + added
    assert waits["schedule"] > 0
    assert waits["insights"] > 0
    assert delayed.cordons[bad] > at_once.cordons[bad]


def test_an_alarm_driven_decision_waits_for_the_alarm_to_see_the_minute() -> None:
    aws = silent_task_run("aws")
    bad = aws.truth.bad_task
    assert bad is not None
    waits = aws.options["b_contributors"].waits[bad]
    assert waits["alarm"] > 0
    assert waits["delivery"] > 0
    assert aws.options["b_contributors"].cordons[bad] > waits["minute_end"] + waits["alarm"]


def test_a_page_counts_to_the_alarms_evaluation_of_the_breaching_minute() -> None:
    """The alarm tables: the same simulated traffic pages at the same minute; under the profile its
    latency adds the wait for the alarm's evaluation of that minute (over half a minute here)."""
    config = DetectionConfig()
    instant = detection.run("tts-dead-worker", 35, detection.FAILURE_RUN_MINUTES, 1, config)
    aws = detection.run("tts-dead-worker", 35, detection.FAILURE_RUN_MINUTES, 1, config, profile_named("aws"))
    assert instant.alarm_minutes == aws.alarm_minutes
    at_once, delayed = detection.latency(instant, "tts_new"), detection.latency(aws, "tts_new")
    assert at_once is not None
    assert delayed is not None
    assert delayed - at_once > 0.5
    assert all(seconds == 0.0 for seen in instant.seen_after.values() for seconds in seen.values())
