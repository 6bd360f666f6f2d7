"""The bounded report: every act listed, skips counted with a sample, strings and collections cut,
a hard size cap that keeps the logged line inside one CloudWatch Logs event, and the detail lines
that carry what the cap pushed out."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devkit.fakes.livekit import InMemoryRoomService, room
from fleet_remediation.contract.models import MAX_ECHO_CHARS
from fleet_remediation.core.errors import InvalidEventError
from fleet_remediation.core.observability import logger
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_bounds import (
    MAX_COLLECTION_ITEMS,
    MAX_REPORT_BYTES,
    MAX_SKIP_REASONS,
    MAX_STRING_CHARS,
    OTHER_REASONS,
    SKIPPED_SAMPLE_SIZE,
)
from fleet_remediation.core.report_model import Decision, Outcome, Trigger, TriggerKind
from tests.unit.test_reaper_service import NOW, invoke, make_deps

# One CloudWatch Logs event before 2025 (the stricter of the two limits).
LOG_EVENT_LIMIT = 256 * 1024


def test_skips_are_counted_by_reason_and_only_a_sample_is_listed() -> None:
    builder = ReportBuilder("f", "id")
    for i in range(500):
        builder.candidate(f"young-{i}", Decision.SKIP, f"under-age: age {i}s")
    for i in range(3):
        builder.candidate(f"other-{i}", Decision.SKIP, "unmanaged: outside the pattern")
    builder.candidate("old", Decision.WOULD_ACT, "reap: age 4000s >= max 3600s")
    report = builder.finish()
    assert report.skipped == {"under-age": 500, "unmanaged": 3}
    listed = [c.resource for c in report.candidates]
    assert listed == [f"young-{i}" for i in range(SKIPPED_SAMPLE_SIZE)] + [f"other-{i}" for i in range(3)] + [
        "old"
    ]
    assert report.truncated == {"candidates": 500 - SKIPPED_SAMPLE_SIZE}


def test_skip_sample_room_and_count_skip_agree_with_candidate() -> None:
    by_candidate, by_count = ReportBuilder("f", "id"), ReportBuilder("f", "id")
    for i in range(50):
        by_candidate.candidate(f"r-{i}", Decision.SKIP, "under-age")
    room_left = by_count.skip_sample_room("under-age")
    for i in range(room_left):
        by_count.candidate(f"r-{i}", Decision.SKIP, "under-age")
    by_count.count_skip("under-age", 50 - room_left)
    assert room_left == SKIPPED_SAMPLE_SIZE
    assert by_count.skip_sample_room("under-age") == 0
    assert by_candidate.finish().model_dump(
        exclude={"started_at", "finished_at"}
    ) == by_count.finish().model_dump(exclude={"started_at", "finished_at"})


def test_distinct_skip_reasons_are_capped() -> None:
    builder = ReportBuilder("f", "id")
    for i in range(MAX_SKIP_REASONS + 5):
        builder.candidate(f"task-{i}", Decision.SKIP, f"reason number {i}")
    report = builder.finish()
    assert len(report.skipped) == MAX_SKIP_REASONS + 1
    assert report.skipped[OTHER_REASONS] == 5


def test_huge_strings_and_collections_are_cut_everywhere_and_counted() -> None:
    huge = "x" * 1_000_000
    builder = ReportBuilder("f", "id")
    builder.trigger = Trigger(kind=TriggerKind.MANUAL, source=huge, detail={"task": huge, huge: 1})
    builder.candidate(huge, Decision.WOULD_ACT, huge, ids=list(range(5000)), nested={"deep": [huge]})
    builder.action(huge, "delete-room", Outcome.FAILED, huge, InvalidEventError(huge, resource=huge))
    builder.error(InvalidEventError(huge))
    builder.summary = {"message": huge, "streams": [str(i) for i in range(1000)]}
    report = builder.finish()
    serialized = report.model_dump_json()
    assert len(serialized) < 250_000
    assert "x" * (MAX_STRING_CHARS + 1) not in serialized
    assert f"...[{1_000_000 - MAX_STRING_CHARS} more characters]" in serialized
    assert report.truncated["strings"] == 12
    assert report.truncated["collection_items"] == (5000 - MAX_COLLECTION_ITEMS) + (
        1000 - MAX_COLLECTION_ITEMS
    )
    assert report.candidates[0].facts["ids"] == list(range(MAX_COLLECTION_ITEMS))


def test_the_cap_drops_facts_before_any_act_and_logs_them_as_detail() -> None:
    builder = ReportBuilder("f", "id")
    # A thousand deletions (the largest cap) of rooms with typical names (the incident's is 22 long).
    names = [f"lesson-{i:04d}-up_wjv1xyz" for i in range(1000)]
    for name in names:
        builder.candidate(
            name,
            Decision.ACT,
            "reap: age 4000s >= max 3600s",
            sid="RM_" + "s" * 12,
            age_seconds=4000.5,
            max_age_seconds=3600.0,
            rule="default",
            participants=0,
        )
        builder.action(name, "delete-room", Outcome.DONE)
    builder.candidate("young", Decision.SKIP, "under-age")
    report = builder.finish()
    assert report.serialized_bytes() <= MAX_REPORT_BYTES
    assert [c.resource for c in report.candidates] == names
    assert [a.resource for a in report.actions] == names
    assert report.truncated == {"candidates": 1, "candidate_facts": 1000}
    detail = [item for line in builder.detail_lines() for item in line]
    assert {item["resource"] for item in detail} == set(names)
    assert all(item["facts"]["rule"] == "default" for item in detail)


def test_in_the_extreme_the_tails_go_to_the_detail_lines_and_the_report_says_how_many() -> None:
    builder = ReportBuilder("f", "id")
    names = [f"{'n' * 2000}-{i:04d}" for i in range(300)]
    for name in names:
        builder.candidate(name, Decision.ACT, "reap")
        builder.action(name, "delete-room", Outcome.DONE, "deleted")
    report = builder.finish()
    assert report.serialized_bytes() <= MAX_REPORT_BYTES
    listed = len(report.actions) + len(report.candidates)
    assert report.truncated["actions"] + report.truncated["candidates"] == 600 - listed
    assert len(report.actions) == 300 - report.truncated.get("actions", 0)  # actions are kept first
    lines = list(builder.detail_lines())
    assert all(len(json.dumps(line).encode()) <= 64_000 + 2_100 for line in lines)
    assert sum(len(line) for line in lines) == 600 - listed


def test_full_detail_keeps_every_skip_for_the_detail_lines() -> None:
    builder = ReportBuilder("f", "id", full_detail=True)
    for i in range(100):
        builder.candidate(f"young-{i}", Decision.SKIP, "under-age")
    report = builder.finish()
    assert len(report.candidates) == SKIPPED_SAMPLE_SIZE
    detail = [item["resource"] for line in builder.detail_lines() for item in line]
    assert detail == [f"young-{i}" for i in range(SKIPPED_SAMPLE_SIZE, 100)]


def _logged(caplog: pytest.LogCaptureFixture, message: str) -> list[str]:
    """The lines as the Powertools logger writes them to CloudWatch Logs."""
    formatter = logger.registered_formatter
    return [formatter.format(r) for r in caplog.records if r.getMessage() == message]


def test_a_reaper_run_over_20k_rooms_lists_every_deletion_in_one_log_event(
    caplog: pytest.LogCaptureFixture,
) -> None:
    old = [room(f"lesson-old-{i:05d}", NOW - timedelta(hours=2, seconds=i)) for i in range(1000)]
    young = [room(f"lesson-new-{i:05d}", NOW - timedelta(minutes=5)) for i in range(19_000)]
    elsewhere = [room(f"ops-{i}", NOW - timedelta(days=3)) for i in range(50)]
    rooms = InMemoryRoomService([*old, *young, *elsewhere])
    deps, _ = make_deps(rooms, managed_room_pattern="^lesson-.+$", max_deletions_per_run=1000)
    report = invoke({"dry_run": False}, deps)
    oldest_first = [r.name for r in reversed(old)]
    # Actions are journaled as the concurrent deletes complete; the candidates keep the plan's order.
    done = [a["resource"] for a in report["actions"] if a["outcome"] == "done"]
    assert sorted(done) == sorted(oldest_first)
    assert len(done) == len(oldest_first)
    assert [c["resource"] for c in report["candidates"] if c["decision"] == "act"] == oldest_first
    assert report["skipped"] == {"under-age": 19_000, "unmanaged": 50}
    assert report["truncated"]["candidates"] >= 19_050
    (line,) = _logged(caplog, "remediation report")
    assert len(line.encode()) <= LOG_EVENT_LIMIT - 32 * 1024
    assert json.loads(line)["report"]["summary"]["reaped"] == 1000
    # Re-checks in batches: one list, ten re-checks of 100 names, one delete per room.
    assert sum(1 for call, _ in rooms.calls if call == "ListRooms") == 11


def test_a_1mb_manual_payload_is_not_echoed(caplog: pytest.LogCaptureFixture) -> None:
    deps, _ = make_deps(InMemoryRoomService([]))
    report = invoke({"dry_run": True, "k" * 1_000_000: "v" * 1_000_000}, deps)
    assert [e["code"] for e in report["errors"]] == ["InvalidEvent"]
    (line,) = _logged(caplog, "remediation report")
    assert len(line.encode()) < 3 * MAX_STRING_CHARS
    # The error message quotes the 1 MB key as an excerpt (contract.models.excerpt) before the
    # report's own bounds would have to cut it.
    assert len(report["errors"][0]["message"]) <= 2 * MAX_ECHO_CHARS


def test_report_fields_are_stable_for_small_runs() -> None:
    """A run with nothing to bound looks as it always did, plus two empty-or-small fields."""
    deps, _ = make_deps(
        InMemoryRoomService([room("lesson-zombie", NOW - timedelta(hours=3)), room("lesson-live", NOW)])
    )
    report: dict[str, Any] = invoke({}, deps)
    assert report["truncated"] == {}
    assert report["skipped"] == {"under-age": 1}
    assert len(report["candidates"]) == 2
    assert datetime.fromisoformat(report["finished_at"]) >= datetime(2026, 1, 1, tzinfo=UTC)
