"""Attribution on incident-shaped statistics: the resident worker, fleet-wide slowness, warm-ups."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fleet_remediation.contract.policies import DrainerPolicy
from fleet_remediation.contract.signals import SignalCatalog
from livekit_fleet_remediation.offline.log_export import read_events
from livekit_fleet_remediation.offline.worker_logs import OfflineWorkerLogs
from worker_drainer.adapters.worker_logs import SlowVadStats
from worker_drainer.decide.attribution import Pattern, assess_fleet, classify

FIXTURE = Path(__file__).parent.parent / "fixtures" / "incident-2026-09-15.jsonl"
BAD_TASK = "b9238a5f30f04c3a9207df1601ba88bf"
T0 = datetime(2026, 9, 15, 17, 0, tzinfo=UTC)
POLICY = DrainerPolicy()


def stats(stream: str, warnings: int, span_s: float, max_delay: float, jobs: int = 1) -> SlowVadStats:
    return SlowVadStats(stream, warnings, max_delay, T0, T0 + timedelta(seconds=span_s), jobs)


def fleet(*rows: SlowVadStats, size: int = 10) -> tuple[dict[str, str], list[str]]:
    ids = [f"task{i}" for i in range(size)]
    return {f"agent/c/{task_id}": task_id for task_id in ids}, ids


@pytest.fixture(scope="module")
def incident_logs() -> OfflineWorkerLogs:
    with FIXTURE.open(encoding="utf-8") as handle:
        events = read_events(handle)
    return OfflineWorkerLogs(events, SignalCatalog.default().slow_vad)


def incident_fleet(logs: OfflineWorkerLogs, now: datetime) -> tuple[dict[str, str], list[str]]:
    streams = sorted({e.stream for e in logs.events})
    return {s: s.rsplit("/", 1)[1] for s in streams}, [s.rsplit("/", 1)[1] for s in streams]


def test_the_incident_worker_is_the_one_degraded_worker_during_the_failing_lessons(
    incident_logs: OfflineWorkerLogs,
) -> None:
    now = datetime(2026, 9, 15, 17, 45, tzinfo=UTC)
    streams, ids = incident_fleet(incident_logs, now)
    rows = incident_logs.worker_stats(now - timedelta(minutes=POLICY.window_minutes), now, 0)
    result = assess_fleet(rows, streams, ids, POLICY)
    assert [w.task_id for w in result.degraded] == [BAD_TASK]
    bad = result.for_task(BAD_TASK)
    assert bad is not None
    assert bad.pattern is Pattern.RESIDENT
    assert not result.fleet_wide
    assert len(ids) == 10


def test_after_the_zombie_exits_nobody_is_degraded(incident_logs: OfflineWorkerLogs) -> None:
    now = datetime(2026, 9, 15, 18, 45, tzinfo=UTC)
    streams, ids = incident_fleet(incident_logs, now)
    rows = incident_logs.worker_stats(now - timedelta(minutes=POLICY.window_minutes), now, 0)
    assert assess_fleet(rows, streams, ids, POLICY).degraded == ()


def test_hundreds_over_tens_of_minutes_is_resident_and_one_or_two_short_warnings_are_normal() -> None:
    assert classify(stats("s", 300, 30 * 60, 40.0), POLICY)[0] is Pattern.RESIDENT
    assert classify(stats("s", 2, 5, 0.7), POLICY)[0] is Pattern.NORMAL
    assert classify(stats("s", 1, 0, 0.25), POLICY)[0] is Pattern.NORMAL
    assert classify(None, POLICY)[0] is Pattern.QUIET


def test_tens_of_warnings_over_tens_of_seconds_alone_are_not_a_resident_problem() -> None:
    pattern, rate = classify(stats("s", 40, 40, 8.0), POLICY)
    assert pattern is Pattern.SUB_THRESHOLD
    assert not pattern.elevated
    assert rate == pytest.approx(40 / POLICY.window_minutes)


def test_a_warm_up_burst_is_normal_even_when_it_is_the_only_noise_in_the_fleet() -> None:
    streams, ids = fleet()
    burst = stats("agent/c/task3", 8, 6, 1.2)
    result = assess_fleet([burst], streams, ids, POLICY)
    assert result.for_task("task3").pattern is Pattern.WARM_UP  # type: ignore[union-attr]
    assert result.degraded == ()


def test_rates_are_compared_per_minute_against_the_fleet() -> None:
    streams, ids = fleet()
    # Everyone has a steady trickle; task0 is elevated but only 1.5x the others: not an outlier.
    rows = [stats(f"agent/c/task{i}", 60, 25 * 60, 3.0) for i in range(1, 10)]
    rows.append(stats("agent/c/task0", 90, 25 * 60, 9.0))
    result = assess_fleet(rows, streams, ids, DrainerPolicy(fleet_wide_fraction=1.0))
    assert result.for_task("task0").pattern is Pattern.ELEVATED  # type: ignore[union-attr]
    assert result.degraded == ()
    assert "not an outlier" in result.for_task("task0").reason  # type: ignore[union-attr]


def test_most_of_the_fleet_slow_is_fleet_wide_and_nobody_is_degraded() -> None:
    streams, ids = fleet()
    rows = [stats(f"agent/c/task{i}", 250, 28 * 60, 30.0) for i in range(6)]
    result = assess_fleet(rows, streams, ids, POLICY)
    assert result.fleet_wide
    assert result.degraded == ()
    assert "fleet-wide" in result.reason


def test_a_stream_of_no_running_task_is_reported_not_attributed() -> None:
    streams, ids = fleet(size=3)
    result = assess_fleet([stats("agent/c/gone", 300, 1800, 50.0)], streams, ids, POLICY)
    assert result.unattributed_streams == ("agent/c/gone",)
    assert result.degraded == ()
