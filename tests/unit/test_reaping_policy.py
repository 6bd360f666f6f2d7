"""The reaper's pure decision: ages against an injected clock, rule order, protection, the cap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from devkit.fakes.livekit import room
from fleet_remediation.contract.policies import ReaperPolicy, RoomRule
from fleet_remediation.domain.reaping import Verdict, opted_out, plan_reap

NOW = datetime(2026, 9, 15, 18, 12, 48, tzinfo=UTC)


def ago(minutes: float) -> datetime:
    return NOW - timedelta(minutes=minutes)


def verdicts(plan_rooms: list, policy: ReaperPolicy, **kwargs: float) -> dict[str, Verdict]:
    plan = plan_reap(plan_rooms, policy, NOW, **kwargs)
    return {d.room.name: d.verdict for d in plan.decisions}


def test_a_room_exactly_at_the_max_age_is_reaped_and_one_second_younger_is_not() -> None:
    policy = ReaperPolicy(max_age_minutes=60)
    result = verdicts(
        [room("lesson-at", NOW - timedelta(minutes=60)), room("lesson-young", NOW - timedelta(seconds=3599))],
        policy,
    )
    assert result == {"lesson-at": Verdict.REAP, "lesson-young": Verdict.UNDER_AGE}


def test_the_incident_zombie_is_reaped() -> None:
    # 15:08:03 → 18:12:48 is 3 h 04 min 45 s: far beyond the one-hour P0 cap.
    zombie = room("lesson-newpp01_up_wjv1", datetime(2026, 9, 15, 15, 8, 3, tzinfo=UTC))
    (decision,) = plan_reap([zombie], ReaperPolicy(), NOW).decisions
    assert decision.verdict is Verdict.REAP
    assert decision.age_seconds == 3 * 3600 + 4 * 60 + 45


def test_future_and_missing_creation_times_are_reported_not_reaped() -> None:
    plan = plan_reap(
        [room("lesson-future", NOW + timedelta(minutes=5)), room("lesson-unknown", None)], ReaperPolicy(), NOW
    )
    by_name = {d.room.name: d for d in plan.decisions}
    assert by_name["lesson-future"].verdict is Verdict.CREATION_IN_FUTURE
    assert "in the future" in by_name["lesson-future"].reason
    assert by_name["lesson-unknown"].verdict is Verdict.CREATION_MISSING
    assert plan.to_reap == ()


def test_rooms_outside_the_managed_pattern_are_ignored_even_when_ancient() -> None:
    policy = ReaperPolicy(managed_room_pattern=r"^lesson-.+$")
    assert verdicts([room("ops-console", ago(10_000))], policy) == {"ops-console": Verdict.UNMANAGED}


def test_the_first_matching_rule_wins() -> None:
    policy = ReaperPolicy(
        max_age_minutes=60,
        rules=(
            RoomRule(name_pattern=r"^lesson-test-vip-.*$", protected=True),
            RoomRule(name_pattern=r"^lesson-test-.*$", max_age_minutes=10),
            RoomRule(name_pattern=r"^lesson-.*$", max_age_minutes=120),
        ),
    )
    result = verdicts(
        [
            room("lesson-test-vip-1", ago(500)),
            room("lesson-test-2", ago(11)),
            room("lesson-real", ago(90)),
        ],
        policy,
    )
    assert result == {
        "lesson-test-vip-1": Verdict.PROTECTED,
        "lesson-test-2": Verdict.REAP,
        "lesson-real": Verdict.UNDER_AGE,
    }


def test_protected_rooms_are_never_reaped_even_with_a_manual_override() -> None:
    policy = ReaperPolicy(rules=(RoomRule(name_pattern=r"^lesson-demo$", protected=True),))
    result = verdicts([room("lesson-demo", ago(10_000))], policy, max_age_override_seconds=1)
    assert result == {"lesson-demo": Verdict.PROTECTED}


def test_a_manual_override_only_tightens_each_rule() -> None:
    policy = ReaperPolicy(max_age_minutes=60, rules=(RoomRule(name_pattern=r"^test-.*$", max_age_minutes=5),))
    plan = plan_reap(
        [room("test-a", ago(6)), room("lesson-b", ago(20))], policy, NOW, max_age_override_seconds=600
    )
    by_name = {d.room.name: d for d in plan.decisions}
    assert by_name["test-a"].max_age_seconds == 300  # the stricter rule still applies
    assert by_name["lesson-b"].max_age_seconds == 600
    assert by_name["lesson-b"].verdict is Verdict.REAP


def test_the_cap_keeps_the_oldest_rooms_and_trims_the_newest() -> None:
    policy = ReaperPolicy(max_age_minutes=60, max_deletions_per_run=2)
    rooms = [room(f"lesson-{age}", ago(age)) for age in (70, 400, 65, 90, 30)]
    plan = plan_reap(rooms, policy, NOW)
    assert [d.room.name for d in plan.to_reap] == ["lesson-400", "lesson-90"]
    trimmed = [d.room.name for d in plan.decisions if d.verdict is Verdict.OVER_CAP]
    assert trimmed == ["lesson-70", "lesson-65"]
    assert plan.trimmed == 2


def test_equal_ages_are_ordered_by_name_so_runs_are_deterministic() -> None:
    policy = ReaperPolicy(max_deletions_per_run=1)
    plan = plan_reap([room("lesson-b", ago(90)), room("lesson-a", ago(90))], policy, NOW)
    assert [d.room.name for d in plan.to_reap] == ["lesson-a"]


@pytest.mark.parametrize(
    "rule",
    [
        {"name_pattern": "x"},
        {"name_pattern": "x", "protected": True, "max_age_minutes": 5},
        {"name_pattern": "(", "protected": True},
        {"name_pattern": "x", "max_age_minutes": 0},
    ],
)
def test_a_rule_must_set_exactly_one_valid_limit(rule: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        RoomRule.model_validate(rule)


def test_a_room_opted_out_by_its_metadata_is_never_reaped_even_with_a_manual_max_age() -> None:
    opted = room("lesson-opted", ago(600))._replace(metadata='{"lkfr_reaper_protected": true, "tier": "vip"}')
    mentioned = room("lesson-mentions", ago(600))._replace(metadata='{"lkfr_reaper_protected": "yes"}')
    text = room("lesson-text", ago(600))._replace(metadata="lkfr_reaper_protected")
    plan = plan_reap(
        [opted, mentioned, text], ReaperPolicy(max_age_minutes=60), NOW, max_age_override_seconds=60
    )
    decisions = {d.room.name: d for d in plan.decisions}
    assert decisions["lesson-opted"].verdict is Verdict.PROTECTED
    assert "room metadata" in decisions["lesson-opted"].reason
    # Only a JSON true opts out: anything else leaves the room to its rules.
    assert decisions["lesson-mentions"].verdict is Verdict.REAP
    assert decisions["lesson-text"].verdict is Verdict.REAP


@pytest.mark.parametrize(
    ("override", "limit", "rule"),
    [
        (299, 299, "rules[0] ^test-.*$ + manual max_age_seconds"),
        (300, 300, "rules[0] ^test-.*$"),
        (301, 300, "rules[0] ^test-.*$"),
    ],
)
def test_a_manual_max_age_names_itself_only_where_it_is_stricter_than_the_rule(
    override: float, limit: float, rule: str
) -> None:
    policy = ReaperPolicy(max_age_minutes=60, rules=(RoomRule(name_pattern=r"^test-.*$", max_age_minutes=5),))
    (decision,) = plan_reap(
        [room("test-a", ago(1))], policy, NOW, max_age_override_seconds=override
    ).decisions
    assert (decision.max_age_seconds, decision.rule) == (limit, rule)


@pytest.mark.parametrize(
    ("metadata", "opted"),
    [
        ('{"lkfr_reaper_protected": true}', True),
        ("", False),
        ('{"tier": "vip"}', False),
        ('{"lkfr_reaper_protected": true', False),
        ('["lkfr_reaper_protected", true]', False),
        ('{"lkfr_reaper_protected": 1}', False),
    ],
    ids=["json-true", "empty", "without-the-key", "not-json", "not-an-object", "not-true"],
)
def test_only_the_key_set_to_json_true_opts_a_room_out(metadata: str, opted: bool) -> None:
    assert opted_out(metadata) is opted
