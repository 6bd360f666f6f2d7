"""The disruption window (quiet hours): when new disruption may start, in the window's own zone,
across midnight, and the reaper holding outside it unless a person runs it by hand."""

from __future__ import annotations

from datetime import UTC, datetime, time

import pytest
from pydantic import ValidationError

from devkit.fakes.livekit import InMemoryRoomService
from fleet_remediation.contract.disruption_window import DisruptionWindow, Weekday, outside_window
from livekit_fleet_remediation.offline.lambda_context import LOCAL_ACCOUNT, local_region
from tests.unit.test_reaper_service import NOW, invoke, make_deps, old_and_new

WORKDAYS = (Weekday.MON, Weekday.TUE, Weekday.WED, Weekday.THU, Weekday.FRI)
OFFICE = DisruptionWindow(days=WORKDAYS, start=time(9), end=time(18), timezone="Asia/Seoul")


@pytest.mark.parametrize(
    ("utc", "allowed"),
    [
        (datetime(2026, 9, 15, 0, 0, tzinfo=UTC), True),  # Tue 09:00 in Seoul: opens
        (datetime(2026, 9, 15, 8, 59, tzinfo=UTC), True),  # Tue 17:59
        (datetime(2026, 9, 15, 9, 0, tzinfo=UTC), False),  # Tue 18:00: closed
        (datetime(2026, 9, 14, 23, 59, tzinfo=UTC), False),  # Mon 08:59
        (datetime(2026, 9, 19, 3, 0, tzinfo=UTC), False),  # Sat 12:00
    ],
)
def test_the_window_is_read_in_its_own_time_zone(utc: datetime, allowed: bool) -> None:
    assert OFFICE.allows(utc) is allowed


def test_a_window_that_spans_midnight_belongs_to_the_day_it_opens() -> None:
    nights = DisruptionWindow(days=(Weekday.FRI,), start=time(22), end=time(6), timezone="UTC")
    assert nights.allows(datetime(2026, 9, 18, 23, 0, tzinfo=UTC))  # Fri 23:00
    assert nights.allows(datetime(2026, 9, 19, 5, 59, tzinfo=UTC))  # Sat 05:59, Friday's night
    assert not nights.allows(datetime(2026, 9, 19, 23, 0, tzinfo=UTC))  # Sat 23:00
    assert not nights.allows(datetime(2026, 9, 18, 5, 0, tzinfo=UTC))  # Fri 05:00, Thursday's night


def test_a_bad_window_fails_at_synth_with_what_to_fix() -> None:
    with pytest.raises(ValidationError, match="is not an IANA time zone"):
        DisruptionWindow(start=time(9), end=time(18), timezone="Seoul")
    with pytest.raises(ValidationError, match="the window would never open"):
        DisruptionWindow(start=time(9), end=time(9))
    assert outside_window(None, NOW) is None
    assert outside_window(OFFICE, datetime(2026, 9, 19, 3, tzinfo=UTC)) == (
        "outside the disruption window (Mon, Tue, Wed, Thu, Fri 09:00-18:00 Asia/Seoul)"
    )


def test_the_reaper_holds_outside_the_window_and_a_manual_run_overrides_it() -> None:
    closed = DisruptionWindow(start=time(3), end=time(4), timezone="UTC")
    assert not closed.allows(NOW)
    rooms: InMemoryRoomService = old_and_new()
    deps, _ = make_deps(rooms)
    deps.settings = deps.settings.model_copy(update={"disruption_window": closed})
    scheduled = {
        "version": "0",
        "id": "s",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": LOCAL_ACCOUNT,
        "time": NOW.isoformat(),
        "region": local_region(),
        "resources": [f"arn:aws:events:{local_region()}:{LOCAL_ACCOUNT}:rule/reaper"],
        "detail": {},
    }
    held = invoke(scheduled, deps)
    assert [(c["resource"], c["decision"]) for c in held["candidates"] if c["decision"] != "skip"] == [
        ("lesson-zombie", "held")
    ]
    assert held["summary"]["held"].startswith("outside the disruption window")
    assert held["actions"] == []
    assert "lesson-zombie" in rooms.rooms
    manual = invoke({"dry_run": False}, deps)
    assert [a["resource"] for a in manual["actions"]] == ["lesson-zombie"]
    assert "lesson-zombie" not in rooms.rooms


def test_a_window_across_midnight_opens_at_exactly_its_start_and_is_closed_at_exactly_its_end() -> None:
    nights = DisruptionWindow(days=(Weekday.FRI,), start=time(22), end=time(6), timezone="UTC")
    assert not nights.allows(datetime(2026, 9, 18, 21, 59, tzinfo=UTC))  # Fri 21:59
    assert nights.allows(datetime(2026, 9, 18, 22, 0, tzinfo=UTC))  # Fri 22:00
    assert nights.allows(datetime(2026, 9, 19, 5, 59, tzinfo=UTC))  # Sat 05:59
    assert not nights.allows(datetime(2026, 9, 19, 6, 0, tzinfo=UTC))  # Sat 06:00


def test_a_sundays_night_window_goes_on_into_monday_morning() -> None:
    # Monday's previous day wraps round the week to Sunday.
    sundays = DisruptionWindow(days=(Weekday.SUN,), start=time(22), end=time(6), timezone="UTC")
    assert sundays.allows(datetime(2026, 9, 21, 3, 0, tzinfo=UTC))  # Mon 03:00
    assert not sundays.allows(datetime(2026, 9, 22, 3, 0, tzinfo=UTC))  # Tue 03:00


def test_a_window_of_every_day_reads_every_day_and_one_of_some_days_lists_them() -> None:
    assert DisruptionWindow(start=time(9), end=time(18)).describe() == "every day 09:00-18:00 UTC"
    weekend = DisruptionWindow(days=(Weekday.SAT, Weekday.SUN), start=time(22), end=time(6))
    assert weekend.describe() == "Sat, Sun 22:00-06:00 UTC"
