"""The reaper's grace for live users, its journal and its re-read of lost replies, with the
in-memory LiveKit (the same paths against the real server behind a fault proxy: tests/faults)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from devkit.fakes.livekit import InMemoryRoomService, room
from fleet_remediation.core.errors import (
    LiveKitApiError,
    LiveKitBadReplyError,
    LiveKitTimeoutError,
    LiveKitUnavailableError,
)
from fleet_remediation.domain.room_warnings import WARNED_AT_KEY, WARNING_TOPIC, read_warning, with_warning
from tests.unit.test_reaper_service import NOW, SCHEDULE_EVENT, invoke, make_deps

OLD = NOW - timedelta(hours=3)
GRACE_MINUTES = 10


def run_at(rooms: InMemoryRoomService, minutes_later: float = 0, **policy: Any) -> tuple[dict[str, Any], Any]:
    deps, notifier = make_deps(rooms, managed_room_pattern="^lesson-.+$", **policy)
    deps.clock = lambda: NOW + timedelta(minutes=minutes_later)
    return invoke(SCHEDULE_EVENT, deps), notifier


def actions(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((a["resource"], a["action"], a["outcome"]) for a in report["actions"])


# --- grace ---------------------------------------------------------------------------------------


def test_a_live_room_is_warned_then_deleted_after_the_grace_and_an_empty_one_at_once() -> None:
    rooms = InMemoryRoomService([room("lesson-live", OLD, participants=1), room("lesson-empty", OLD)])
    first, notifier = run_at(rooms)
    assert actions(first) == [("lesson-empty", "delete-room", "done"), ("lesson-live", "warn-room", "done")]
    assert set(rooms.rooms) == {"lesson-live"}
    record = read_warning(rooms.rooms["lesson-live"].metadata)
    assert record.warned_at == NOW
    ((name, topic, data),) = rooms.messages
    assert (name, topic) == ("lesson-live", WARNING_TOPIC)
    assert json.loads(data)["ends_after"] == (NOW + timedelta(minutes=GRACE_MINUTES)).isoformat()
    ((_, message),) = notifier.messages
    assert "deleted 1 of 1 over-age room(s)" in message
    assert "warned 1 of 1 room(s) with participants" in message
    assert "lesson-live: warn-room done" in message

    during, notifier = run_at(rooms, minutes_later=GRACE_MINUTES - 1)
    assert during["actions"] == []
    (candidate,) = [c for c in during["candidates"] if c["resource"] == "lesson-live"]
    assert candidate["decision"] == "skip"
    assert candidate["reason"].startswith("in-grace")
    assert notifier.messages == []
    assert len(rooms.messages) == 1, "warned once, not every run"

    after, _ = run_at(rooms, minutes_later=GRACE_MINUTES)
    assert actions(after) == [("lesson-live", "delete-room", "done")]
    assert rooms.rooms == {}


def test_a_run_that_only_warns_says_so_without_a_count_of_deletions() -> None:
    rooms = InMemoryRoomService([room("lesson-live", OLD, participants=1)])
    _, notifier = run_at(rooms)
    ((_, message),) = notifier.messages
    headline = message.splitlines()[0]
    assert headline.startswith("zombie reaper warned 1 of 1 room(s) with participants before deleting them")
    assert "deleted" not in headline
    assert "Deleted rooms cannot be restored" not in message


def test_the_warning_keeps_the_applications_json_metadata() -> None:
    rooms = InMemoryRoomService([room("lesson-a", OLD, participants=2, metadata='{"lesson": 7}')])
    run_at(rooms)
    metadata = json.loads(rooms.rooms["lesson-a"].metadata)
    assert metadata["lesson"] == 7
    assert metadata[WARNED_AT_KEY] == int(NOW.timestamp())


def test_metadata_that_is_not_json_is_never_overwritten_and_the_grace_runs_from_the_max_age() -> None:
    # Max age 60 min; this room passed it 5 min ago.
    rooms = InMemoryRoomService(
        [room("lesson-a", NOW - timedelta(minutes=65), participants=1, metadata="blue")]
    )
    first, _ = run_at(rooms)
    assert actions(first) == [("lesson-a", "warn-room", "done")]
    assert rooms.rooms["lesson-a"].metadata == "blue"
    assert ("UpdateRoomMetadata", "lesson-a") not in rooms.calls
    assert len(rooms.messages) == 1
    later, _ = run_at(rooms, minutes_later=5)
    assert actions(later) == [("lesson-a", "delete-room", "done")]


def test_a_grace_of_zero_deletes_live_rooms_at_once() -> None:
    rooms = InMemoryRoomService([room("lesson-live", OLD, participants=3)])
    report, _ = run_at(rooms, live_room_grace_minutes=0)
    assert actions(report) == [("lesson-live", "delete-room", "done")]
    assert rooms.messages == []


def test_someone_joining_an_empty_room_before_the_delete_is_warned_instead() -> None:
    rooms = InMemoryRoomService([room("lesson-a", OLD)])
    original = rooms.list_rooms

    async def joined_by_the_recheck(names: Any = None) -> Any:
        listed = await original(names)
        if names:  # the re-check: a child joined since the listing
            rooms.rooms["lesson-a"] = room("lesson-a", OLD, participants=1)
            return [rooms.rooms["lesson-a"]]
        return listed

    rooms.list_rooms = joined_by_the_recheck  # type: ignore[method-assign]
    report, _ = run_at(rooms)
    assert actions(report) == [("lesson-a", "warn-room", "done")]
    assert len(rooms.messages) == 1
    assert "lesson-a" in rooms.rooms


def test_a_room_emptied_before_its_warning_is_deleted_instead() -> None:
    rooms = InMemoryRoomService([room("lesson-a", OLD, participants=1)])
    original = rooms.list_rooms

    async def empty_by_the_recheck(names: Any = None) -> Any:
        if names:
            rooms.rooms["lesson-a"] = room("lesson-a", OLD, participants=0)
        return await original(names)

    rooms.list_rooms = empty_by_the_recheck  # type: ignore[method-assign]
    report, _ = run_at(rooms)
    assert actions(report) == [("lesson-a", "delete-room", "done")]
    assert rooms.messages == []


def test_warning_metadata_round_trips() -> None:
    assert read_warning("").writable
    assert read_warning("[1, 2]") == read_warning("not json")
    assert not read_warning("[1, 2]").writable
    assert read_warning(with_warning('{"a": 1}', NOW)).warned_at == NOW
    assert read_warning(json.dumps({WARNED_AT_KEY: True})).warned_at is None


# --- lost replies and the journal ----------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        LiveKitTimeoutError("no answer within 5s", resource="lesson-a"),
        LiveKitUnavailableError("connection reset", resource="lesson-a"),
        LiveKitBadReplyError("not a DeleteRoom reply", resource="lesson-a"),
        LiveKitApiError("HTTP 502", twirp_code="unknown", http_status=502, resource="lesson-a"),
    ],
    ids=["timeout", "reset", "corrupt-reply", "502"],
)
def test_a_reply_lost_after_the_server_acted_is_re_read_and_counted_done(error: Exception) -> None:
    rooms = InMemoryRoomService([room("lesson-a", OLD), room("lesson-b", OLD)])
    rooms.delete_errors["lesson-a"] = (error, True)  # type: ignore[assignment]
    report, notifier = run_at(rooms)
    assert actions(report) == [("lesson-a", "delete-room", "done"), ("lesson-b", "delete-room", "done")]
    (lost,) = [a for a in report["actions"] if a["resource"] == "lesson-a"]
    assert "re-read: gone" in lost["reason"]
    # One re-read: the re-check, then one ListRooms naming only the room whose reply was lost.
    assert [c for c in rooms.calls if c[0] == "ListRooms"][-1] == ("ListRooms", "lesson-a")
    assert report["summary"]["reaped"] == 2
    assert "deleted 2 of 2 over-age room(s)" in notifier.messages[0][0]


def test_a_reply_lost_before_the_server_acted_is_re_read_and_counted_failed() -> None:
    rooms = InMemoryRoomService([room("lesson-a", OLD)])
    rooms.delete_errors["lesson-a"] = (LiveKitTimeoutError("no answer", resource="lesson-a"), False)
    report, notifier = run_at(rooms)
    assert actions(report) == [("lesson-a", "delete-room", "failed")]
    assert "re-read: still there" in report["actions"][0]["reason"]
    assert report["actions"][0]["error"]["code"] == "LiveKitTimeout"
    assert report["status"] == "partial"
    assert "PARTIAL: zombie reaper deleted 0 of 1 over-age room(s)" in notifier.messages[0][0]


def test_a_lost_reply_whose_re_read_fails_is_unknown_and_still_notified() -> None:
    rooms = InMemoryRoomService([room("lesson-a", OLD)])
    rooms.delete_errors["lesson-a"] = (LiveKitTimeoutError("no answer", resource="lesson-a"), True)
    rooms.list_errors = [LiveKitTimeoutError("re-read: no answer")]
    original = rooms.list_rooms
    calls = 0

    async def fail_the_second_named_listing(names: Any = None) -> Any:
        nonlocal calls
        if names:
            calls += 1
            if calls == 1:  # the re-check passes
                saved, rooms.list_errors = rooms.list_errors, []
                try:
                    return await original(names)
                finally:
                    rooms.list_errors = saved
        return await original(names)

    rooms.list_rooms = fail_the_second_named_listing  # type: ignore[method-assign]
    report, notifier = run_at(rooms)
    assert actions(report) == [("lesson-a", "delete-room", "unknown")]
    assert "re-read failed" in report["actions"][0]["reason"]
    assert report["summary"]["unknown"] == 1
    assert (
        "deleted 0 of 1 over-age room(s) (oldest lesson-a, 3h00m), 1 of unknown outcome"
        in notifier.messages[0][1]
    )


def test_an_error_answer_of_the_server_is_failed_without_a_re_read() -> None:
    rooms = InMemoryRoomService([room("lesson-a", OLD)])
    denied = LiveKitApiError("denied", twirp_code="permission_denied", http_status=403, resource="lesson-a")
    rooms.delete_errors["lesson-a"] = (denied, False)
    report, _ = run_at(rooms)
    assert actions(report) == [("lesson-a", "delete-room", "failed")]
    assert [c for c in rooms.calls if c[0] == "ListRooms"] == [("ListRooms", None), ("ListRooms", "lesson-a")]


def test_every_delete_is_journaled_before_and_after(caplog: pytest.LogCaptureFixture) -> None:
    rooms = InMemoryRoomService([room("lesson-a", OLD), room("lesson-b", OLD, participants=1)])
    run_at(rooms)
    journal = _journal(caplog)
    intents = sorted((j["resource"], j["action"]) for j in journal if "outcome" not in j)
    outcomes = sorted((j["resource"], j["action"], j["outcome"]) for j in journal if "outcome" in j)
    assert intents == [("lesson-a", "delete-room"), ("lesson-b", "warn-room")]
    assert outcomes == [("lesson-a", "delete-room", "done"), ("lesson-b", "warn-room", "done")]


def _journal(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [r.journal for r in caplog.records if hasattr(r, "journal")]


def _reported(caplog: pytest.LogCaptureFixture) -> dict[str, Any]:
    (record,) = [r for r in caplog.records if r.getMessage() == "remediation report"]
    report: dict[str, Any] = record.report  # type: ignore[attr-defined]
    return report


def test_a_run_killed_between_two_deletes_leaves_its_intent_in_the_journal_and_the_next_run_finishes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rooms = InMemoryRoomService([room(f"lesson-{i}", OLD - timedelta(minutes=i)) for i in range(3)])
    original = rooms.delete_room

    async def killed_on_the_second(name: str) -> None:
        if len(rooms.rooms) == 2:  # one room is gone: the invocation dies inside the next DeleteRoom
            raise SystemExit("Lambda killed the invocation")
        await original(name)

    rooms.delete_room = killed_on_the_second  # type: ignore[method-assign]
    deps, _ = make_deps(rooms, managed_room_pattern="^lesson-.+$", delete_concurrency=1)
    with pytest.raises(SystemExit):
        invoke(SCHEDULE_EVENT, deps)
    # A killed process writes no report; its journal lines say what it had started.
    journal = _journal(caplog)
    started = [j["resource"] for j in journal if "outcome" not in j]
    finished = [j["resource"] for j in journal if "outcome" in j]
    assert started == ["lesson-2", "lesson-1"]
    assert finished == ["lesson-2"]
    assert set(rooms.rooms) == {"lesson-0", "lesson-1"}
    rooms.delete_room = original  # type: ignore[method-assign]
    report = invoke(SCHEDULE_EVENT, deps)
    assert actions(report) == [("lesson-0", "delete-room", "done"), ("lesson-1", "delete-room", "done")]
    assert rooms.rooms == {}


def test_a_crash_mid_run_reports_the_unresolved_delete_as_unknown(caplog: pytest.LogCaptureFixture) -> None:
    rooms = InMemoryRoomService([room(f"lesson-{i}", OLD - timedelta(minutes=i)) for i in range(4)])
    original = rooms.delete_room
    crashed = False

    async def bug_on_the_second(name: str) -> None:
        nonlocal crashed
        if len(rooms.rooms) == 3 and not crashed:
            crashed = True
            raise RuntimeError("a bug after the request went out")
        await original(name)

    rooms.delete_room = bug_on_the_second  # type: ignore[method-assign]
    deps, _ = make_deps(rooms, managed_room_pattern="^lesson-.+$", delete_concurrency=1)
    with pytest.raises(RuntimeError):
        invoke(SCHEDULE_EVENT, deps)
    report = _reported(caplog)
    recorded = {(a["resource"], a["outcome"]) for a in report["actions"]}
    assert {("lesson-3", "done"), ("lesson-2", "unknown")} <= recorded
    # Every room that is gone is in the report as done: no side effect without a record.
    for name in {f"lesson-{i}" for i in range(4)} - set(rooms.rooms):
        assert (name, "done") in recorded
    # The steps not yet started when the bug struck were cancelled, not started.
    assert "lesson-0" in rooms.rooms
    assert [e["code"] for e in report["errors"]] == ["InternalError"]
    assert report["status"] == "partial"
