"""The room decisions and the executor, record by record: every verdict with its numbers, every
outcome with its reason, error and action, every journal entry (the reports and notifications are
built from exactly these)."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devkit.fakes.livekit import InMemoryRoomService, room
from fleet_remediation.contract.policies import ReaperPolicy, RoomRule
from fleet_remediation.core.errors import (
    LiveKitApiError,
    LiveKitTimeoutError,
    RemediationError,
)
from fleet_remediation.core.report_model import Intent, Outcome
from fleet_remediation.domain.reap_executor import ReapExecutor, ReapResult, may_have_acted
from fleet_remediation.domain.reaping import (
    DEADLINE_REASON,
    DELETE,
    UNDER_AGE_REASON,
    WARN,
    RoomDecision,
    Verdict,
    plan_reap,
)
from fleet_remediation.domain.room_warnings import WARNED_AT_KEY, read_warning, warning_message, with_warning

NOW = datetime(2026, 9, 15, 18, 0, tzinfo=UTC)
HOUR = 3600.0
GRACE = 600.0
POLICY = ReaperPolicy(
    managed_room_pattern="^lesson-.+$",
    max_age_minutes=60,
    rules=(RoomRule(name_pattern="^lesson-demo-.*$", protected=True),),
)


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


def decide(live: Any, grace: float | None = GRACE) -> RoomDecision:
    (decision,) = plan_reap([live], POLICY, NOW, live_room_grace_seconds=grace).decisions
    return decision


# --- decisions --------------------------------------------------------------------------------------


def test_every_verdict_with_its_reason_and_numbers() -> None:
    unmanaged = room("ops", ago(9 * HOUR))
    assert decide(unmanaged) == RoomDecision(
        unmanaged, Verdict.UNMANAGED, "name outside the managed room pattern"
    )
    demo = room("lesson-demo-1", ago(9 * HOUR))
    assert decide(demo) == RoomDecision(
        demo, Verdict.PROTECTED, "protected by rules[0] ^lesson-demo-.*$", rule="rules[0] ^lesson-demo-.*$"
    )
    missing = room("lesson-a", None)
    assert decide(missing) == RoomDecision(
        missing, Verdict.CREATION_MISSING, "room has no creation time", rule="default"
    )
    future = room("lesson-b", NOW + timedelta(seconds=30))
    assert decide(future) == RoomDecision(
        future, Verdict.CREATION_IN_FUTURE, "creation time is 30s in the future", -30.0, HOUR, "default"
    )
    fresh = room("lesson-c", NOW)
    assert decide(fresh) == RoomDecision(fresh, Verdict.UNDER_AGE, UNDER_AGE_REASON, 0.0, HOUR, "default")
    empty = room("lesson-d", ago(HOUR))
    assert decide(empty) == RoomDecision(
        empty, Verdict.REAP, "age 3600s >= max 3600s, no participants", HOUR, HOUR, "default"
    )
    assert decide(empty, grace=None) == RoomDecision(
        empty, Verdict.REAP, "age 3600s >= max 3600s", HOUR, HOUR, "default"
    )


def test_live_rooms_warned_in_grace_and_reaped_with_their_numbers() -> None:
    over = "age 7200s >= max 3600s, 2 participant(s)"
    new = room("lesson-w", ago(2 * HOUR), participants=2)
    assert decide(new) == RoomDecision(
        new, Verdict.WARN, f"{over}: warned now, deleted after 600s of grace", 2 * HOUR, HOUR, "default", True
    )
    waiting = room(
        "lesson-g", ago(2 * HOUR), participants=2, metadata=with_warning("", NOW - timedelta(seconds=100))
    )
    assert decide(waiting) == RoomDecision(
        waiting, Verdict.IN_GRACE, f"{over}, warned 100s ago: 500s of grace left", 2 * HOUR, HOUR, "default"
    )
    done = room(
        "lesson-r", ago(2 * HOUR), participants=2, metadata=with_warning("", NOW - timedelta(seconds=600))
    )
    assert decide(done) == RoomDecision(
        done, Verdict.REAP, f"{over}, warned 600s ago: grace of 600s over", 2 * HOUR, HOUR, "default"
    )
    # The application's own text: never overwritten; the grace runs from the max age.
    text = room("lesson-t", ago(HOUR + 100), participants=2, metadata="blue")
    assert decide(text) == RoomDecision(
        text,
        Verdict.WARN,
        "age 3700s >= max 3600s, 2 participant(s): warned (message only), deleted after 500s",
        HOUR + 100,
        HOUR,
        "default",
    )
    old_text = room("lesson-u", ago(HOUR + 600), participants=2, metadata="blue")
    assert decide(old_text).verdict is Verdict.REAP


def test_the_cap_trims_the_newest_and_keeps_their_numbers() -> None:
    rooms = [room(f"lesson-{i}", ago(2 * HOUR - i)) for i in range(3)]
    plan = plan_reap(rooms, POLICY.model_copy(update={"max_deletions_per_run": 2}), NOW)
    assert [d.room.name for d in plan.to_act] == ["lesson-0", "lesson-1"]
    (trimmed,) = [d for d in plan.decisions if d.verdict is Verdict.OVER_CAP]
    assert trimmed == RoomDecision(
        rooms[2],
        Verdict.OVER_CAP,
        "over the cap of 2 deletions and warnings per run (older rooms first)",
        2 * HOUR - 2,
        HOUR,
        "default",
    )
    assert plan.trimmed == 1


def test_rooms_of_equal_age_are_acted_on_by_name() -> None:
    rooms = [room("lesson-b", ago(2 * HOUR)), room("lesson-a", ago(2 * HOUR))]
    assert [d.room.name for d in plan_reap(rooms, POLICY, NOW).to_act] == ["lesson-a", "lesson-b"]


# --- the warning's record and message ----------------------------------------------------------------


def test_the_warning_record() -> None:
    assert with_warning('{"a": 1}', NOW) == f'{{"a":1,"{WARNED_AT_KEY}":{int(NOW.timestamp())}}}'
    assert read_warning(json.dumps({WARNED_AT_KEY: 1})).warned_at == datetime.fromtimestamp(1, tz=UTC)
    assert read_warning(json.dumps({WARNED_AT_KEY: 0})).warned_at is None
    assert read_warning(json.dumps({WARNED_AT_KEY: "soon"})).warned_at is None
    stamped = read_warning(with_warning("", NOW))
    assert stamped.writable
    assert stamped.warned_at == NOW
    assert not read_warning("   blue").writable
    assert read_warning("  ").writable


def test_the_warning_message() -> None:
    decision = decide(room("lesson-w", ago(2 * HOUR), participants=1))
    message = warning_message(decision.room.name, decision.age_seconds, decision.max_age_seconds, GRACE, NOW)
    assert json.loads(message) == {
        "type": "room-ending",
        "reason": "max-age",
        "room": "lesson-w",
        "age_seconds": 7200,
        "max_age_seconds": 3600.0,
        "ends_after": (NOW + timedelta(seconds=GRACE)).isoformat(),
    }


@pytest.mark.parametrize(
    ("status", "acted"), [(None, True), (499, False), (500, True), (403, False), (502, True)]
)
def test_which_errors_may_have_acted(status: int | None, acted: bool) -> None:
    assert may_have_acted(LiveKitApiError("x", twirp_code="unknown", http_status=status)) is acted


def test_a_typed_error_of_no_livekit_kind_has_not_acted() -> None:
    assert not may_have_acted(RemediationError("x"))
    assert may_have_acted(LiveKitTimeoutError("x"))


# --- the executor --------------------------------------------------------------------------------------


class Journal:
    """Records the executor's journal calls."""

    def __init__(self) -> None:
        self.entries: list[tuple[Any, ...]] = []

    def intend(self, resource: str, action: str, reason: str) -> Intent:
        self.entries.append(("intend", resource, action, reason))
        return Intent(len(self.entries), resource, action, reason)

    def resolve(
        self, intent: Intent, outcome: Outcome, reason: str = "", error: RemediationError | None = None
    ) -> None:
        self.entries.append(("resolve", intent.resource, intent.action, outcome, reason, error))

    def action(
        self,
        resource: str,
        action: str,
        outcome: Outcome,
        reason: str = "",
        error: RemediationError | None = None,
    ) -> None:
        self.entries.append(("action", resource, action, outcome, reason, error))


def execute(
    service: InMemoryRoomService, decisions: list[RoomDecision], seconds: float = 60.0
) -> tuple[list[ReapResult], Journal]:
    journal = Journal()
    executor = ReapExecutor(
        rooms=service,
        concurrency=1,
        deadline=time.monotonic() + seconds,
        request_timeout_seconds=1.0,
        journal=journal,
        live_room_grace_seconds=GRACE,
        now=NOW,
    )
    return asyncio.run(executor.run(decisions)), journal


OLD = room("lesson-old", ago(2 * HOUR))
LIVE = room("lesson-live", ago(2 * HOUR), participants=1)


def test_without_time_for_a_batch_nothing_starts() -> None:
    service = InMemoryRoomService([OLD, LIVE])
    reap, warn = decide(OLD), decide(LIVE)
    results, journal = execute(service, [reap, warn], seconds=2.9)
    assert results == [
        ReapResult(reap, Outcome.SKIPPED, DEADLINE_REASON, action=DELETE),
        ReapResult(warn, Outcome.SKIPPED, DEADLINE_REASON, action=WARN),
    ]
    assert journal.entries == [
        ("action", "lesson-old", DELETE, Outcome.SKIPPED, DEADLINE_REASON, None),
        ("action", "lesson-live", WARN, Outcome.SKIPPED, DEADLINE_REASON, None),
    ]
    assert service.calls == []


def test_a_failed_re_check_fails_the_batch_with_its_error() -> None:
    service = InMemoryRoomService([OLD, LIVE])
    error = LiveKitTimeoutError("no answer")
    service.list_errors = [error]
    reap, warn = decide(OLD), decide(LIVE)
    results, journal = execute(service, [reap, warn])
    assert results == [
        ReapResult(reap, Outcome.FAILED, "re-check failed: no answer", error, DELETE),
        ReapResult(warn, Outcome.FAILED, "re-check failed: no answer", error, WARN),
    ]
    assert [entry[0] for entry in journal.entries] == ["action", "action"]


def test_a_failed_re_check_is_journaled_with_its_error_for_each_room() -> None:
    service = InMemoryRoomService([OLD, LIVE])
    error = LiveKitTimeoutError("no answer")
    service.list_errors = [error]
    _, journal = execute(service, [decide(OLD), decide(LIVE)])
    assert journal.entries == [
        ("action", "lesson-old", DELETE, Outcome.FAILED, "re-check failed: no answer", error),
        ("action", "lesson-live", WARN, Outcome.FAILED, "re-check failed: no answer", error),
    ]


def test_gone_or_recreated_rooms_at_the_re_check() -> None:
    service = InMemoryRoomService([room("lesson-old", ago(HOUR), sid="RM_new")])
    gone_live = decide(LIVE)
    reap = decide(OLD)
    results, journal = execute(service, [reap, gone_live])
    assert results == [
        ReapResult(reap, Outcome.SKIPPED, "room was recreated (sid RM_new != RM_lesson-old)", action=DELETE),
        ReapResult(gone_live, Outcome.SKIPPED, "room already gone", action=WARN),
    ]
    assert [entry[0] for entry in journal.entries] == ["action", "action"]
    assert not [call for call in service.calls if call[0] == "DeleteRoom"]
    gone = InMemoryRoomService([])
    results, _ = execute(gone, [reap])
    assert results == [ReapResult(reap, Outcome.ALREADY_DONE, "room already gone", action=DELETE)]


def test_a_delete_without_time_for_its_re_read_is_not_started() -> None:
    service = InMemoryRoomService([OLD])
    reap = decide(OLD)
    original = service.list_rooms

    async def slow_re_check(names: Any = None) -> Any:
        await asyncio.sleep(1.2)  # leaves less than the two requests a delete needs
        return await original(names)

    service.list_rooms = slow_re_check  # type: ignore[method-assign]
    results, journal = execute(service, [reap], seconds=3.05)
    assert results == [ReapResult(reap, Outcome.SKIPPED, DEADLINE_REASON)]
    assert journal.entries == [("action", "lesson-old", DELETE, Outcome.SKIPPED, DEADLINE_REASON, None)]


def test_a_delete_with_time_for_itself_and_its_re_read_is_started() -> None:
    service = InMemoryRoomService([OLD])
    reap = decide(OLD)
    original = service.list_rooms

    async def slow_re_check(names: Any = None) -> Any:
        await asyncio.sleep(0.5)  # leaves more than two requests, less than three
        return await original(names)

    service.list_rooms = slow_re_check  # type: ignore[method-assign]
    results, _ = execute(service, [reap], seconds=3.05)
    assert results == [ReapResult(reap, Outcome.DONE, "")]


def test_deletes_resolved_done_gone_or_failed() -> None:
    gone, denied, fine = (room(f"lesson-{n}", ago(2 * HOUR)) for n in ("gone", "denied", "fine"))
    service = InMemoryRoomService([gone, denied, fine])
    refused = LiveKitApiError("denied", twirp_code="permission_denied", http_status=403)
    missing = LiveKitApiError("not found", twirp_code="not_found", http_status=404)
    service.delete_errors = {"lesson-gone": (missing, False), "lesson-denied": (refused, False)}
    decisions = [decide(gone), decide(denied), decide(fine)]
    results, journal = execute(service, decisions)
    assert results == [
        ReapResult(decisions[0], Outcome.ALREADY_DONE, "room already gone"),
        ReapResult(decisions[1], Outcome.FAILED, "denied", refused),
        ReapResult(decisions[2], Outcome.DONE, ""),
    ]
    reason = "age 7200s >= max 3600s, no participants"
    assert journal.entries == [
        ("intend", "lesson-gone", DELETE, reason),
        ("resolve", "lesson-gone", DELETE, Outcome.ALREADY_DONE, "room already gone", None),
        ("intend", "lesson-denied", DELETE, reason),
        ("resolve", "lesson-denied", DELETE, Outcome.FAILED, "denied", refused),
        ("intend", "lesson-fine", DELETE, reason),
        ("resolve", "lesson-fine", DELETE, Outcome.DONE, "", None),
    ]


def test_lost_replies_are_resolved_from_the_re_read() -> None:
    gone, kept, renewed = (room(f"lesson-{n}", ago(2 * HOUR)) for n in ("gone", "kept", "renewed"))
    service = InMemoryRoomService([gone, kept, renewed])
    timeout = LiveKitTimeoutError("no answer")
    service.delete_errors = {
        "lesson-gone": (timeout, True),
        "lesson-kept": (timeout, False),
        "lesson-renewed": (timeout, True),
    }
    original = service.delete_room

    async def recreate_after(name: str) -> None:
        try:
            await original(name)
        finally:
            if name == "lesson-renewed":
                service.rooms[name] = room(name, NOW, sid="RM_again")

    service.delete_room = recreate_after  # type: ignore[method-assign]
    decisions = [decide(gone), decide(kept), decide(renewed)]
    results, journal = execute(service, decisions)
    assert results == [
        ReapResult(decisions[0], Outcome.DONE, "deleted; the reply was lost (LiveKitTimeout); re-read: gone"),
        ReapResult(
            decisions[1],
            Outcome.FAILED,
            "not deleted (LiveKitTimeout: no answer); re-read: still there",
            timeout,
        ),
        ReapResult(
            decisions[2],
            Outcome.DONE,
            "deleted; the reply was lost (LiveKitTimeout); re-read: a new room of that name (RM_again)",
        ),
    ]
    assert [e[3] for e in journal.entries if e[0] == "resolve"] == [
        Outcome.DONE,
        Outcome.FAILED,
        Outcome.DONE,
    ]


def test_a_lost_reply_without_time_or_with_a_failed_re_read_is_unknown() -> None:
    service = InMemoryRoomService([OLD])
    timeout = LiveKitTimeoutError("no answer")
    service.delete_errors = {"lesson-old": (timeout, True)}
    reap = decide(OLD)
    original = service.delete_room

    async def slow_delete(name: str) -> None:
        await asyncio.sleep(2.1)  # the re-read no longer fits
        await original(name)

    service.delete_room = slow_delete  # type: ignore[method-assign]
    results, journal = execute(service, [reap], seconds=3.05)
    assert results == [
        ReapResult(
            reap,
            Outcome.UNKNOWN,
            "outcome unknown: the reply was lost (LiveKitTimeout) and no time left to re-read",
            timeout,
        )
    ]
    assert journal.entries[-1][3] is Outcome.UNKNOWN

    service = InMemoryRoomService([OLD])
    service.delete_errors = {"lesson-old": (timeout, True)}
    reread = LiveKitTimeoutError("re-read: no answer")
    original_list = service.list_rooms
    listings = 0

    async def failing_re_read(names: Any = None) -> Any:
        nonlocal listings
        listings += 1
        if listings == 2:
            raise reread
        return await original_list(names)

    service.list_rooms = failing_re_read  # type: ignore[method-assign]
    results, _ = execute(service, [reap])
    assert results == [
        ReapResult(
            reap,
            Outcome.UNKNOWN,
            "outcome unknown: the reply was lost (LiveKitTimeout) and re-read failed: LiveKitTimeout",
            reread,
        )
    ]


def test_warnings_record_then_tell_and_failures_are_reported() -> None:
    text_room = room("lesson-text", ago(HOUR + 100), participants=1, metadata="blue")
    service = InMemoryRoomService([LIVE, text_room])
    warn, text = decide(LIVE), decide(service.rooms["lesson-text"])
    results, journal = execute(service, [warn, text])
    assert results == [
        ReapResult(warn, Outcome.DONE, "", action=WARN),
        ReapResult(text, Outcome.DONE, "", action=WARN),
    ]
    assert service.calls[-3:] == [
        ("UpdateRoomMetadata", "lesson-live"),
        ("SendData", "lesson-live"),
        ("SendData", "lesson-text"),
    ]
    assert read_warning(service.rooms["lesson-live"].metadata).warned_at == NOW
    assert journal.entries[0] == ("intend", "lesson-live", WARN, warn.reason)

    failing = InMemoryRoomService([])  # the room vanished between the re-check and the warning
    failing.rooms = {"lesson-live": LIVE}
    original = failing.update_room_metadata

    async def vanish(name: str, metadata: str) -> None:
        failing.rooms.clear()
        await original(name, metadata)

    failing.update_room_metadata = vanish  # type: ignore[method-assign]
    results, _ = execute(failing, [warn])
    ((result),) = results
    assert (result.outcome, result.action, result.reason) == (Outcome.FAILED, WARN, "room not found")
    assert isinstance(result.error, LiveKitApiError)


def test_a_room_that_changed_between_the_listing_and_the_re_check() -> None:
    # Decided empty, joined by the re-check: warned first, its record kept in the metadata.
    empty = room("lesson-a", ago(2 * HOUR))
    joined = room("lesson-a", ago(2 * HOUR), participants=1)
    service = InMemoryRoomService([joined])
    decision = decide(empty)
    results, journal = execute(service, [decision])
    expected = RoomDecision(
        joined,
        Verdict.WARN,
        f"{decision.reason}; 1 participant(s) joined since: warned first",
        2 * HOUR,
        HOUR,
        "default",
        True,
    )
    assert results == [ReapResult(expected, Outcome.DONE, "", action=WARN)]
    assert journal.entries[0] == ("intend", "lesson-a", WARN, expected.reason)
    # The same with the application's text as metadata: the message only.
    joined_text = room("lesson-a", ago(2 * HOUR), participants=1, metadata="blue")
    results, _ = execute(InMemoryRoomService([joined_text]), [decision])
    assert results[0].decision.record_warning is False
    # Decided live, empty by the re-check: deleted, with the numbers of the decision.
    warn = decide(LIVE)
    emptied = room("lesson-live", ago(2 * HOUR))
    service = InMemoryRoomService([emptied])
    results, journal = execute(service, [warn])
    expected = RoomDecision(emptied, Verdict.REAP, f"{warn.reason}; empty by now", 2 * HOUR, HOUR, "default")
    assert results == [ReapResult(expected, Outcome.DONE, "")]
    assert journal.entries[0] == ("intend", "lesson-live", DELETE, expected.reason)
    assert service.rooms == {}


def test_without_a_journal_the_results_carry_everything() -> None:
    service = InMemoryRoomService([OLD])
    reap = decide(OLD)
    executor = ReapExecutor(
        rooms=service, concurrency=2, deadline=time.monotonic() + 60, request_timeout_seconds=1.0
    )
    assert asyncio.run(executor.run([reap])) == [ReapResult(reap, Outcome.DONE, "")]
    assert executor.results == [ReapResult(reap, Outcome.DONE, "")]
