"""The reaper service and handler with in-memory fakes: modes, re-checks, failures, one report."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devkit.fakes.livekit import InMemoryRoomService, room
from fleet_remediation.contract.agent_services import AgentService
from fleet_remediation.contract.policies import ReaperPolicy
from fleet_remediation.contract.sections import ReaperSection
from fleet_remediation.contract.settings import ReaperSettings
from fleet_remediation.core.report_model import Mode
from livekit_fleet_remediation.offline.fixed_mode import FixedModeSwitch
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from zombie_reaper import handler
from zombie_reaper.dependencies import ReaperDependencies

NOW = datetime(2026, 9, 15, 18, 0, tzinfo=UTC)
# Whose VAD alarm the reaper takes.
AGENT_SERVICE = AgentService(ecs_cluster="agents", ecs_service="agents", agent_log_group="/agents")
SCHEDULE_EVENT = {
    "version": "0",
    "id": "e-1",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "123456789012",
    "time": "2026-09-15T18:00:00Z",
    "region": "eu-west-1",
    "resources": ["arn:aws:events:eu-west-1:123456789012:rule/lkfr-staging-reaper"],
    "detail": {},
}


class RecordingNotifier:
    def __init__(self) -> None:
        self.messages: list[tuple[str, str]] = []

    def publish(self, subject: str, message: str, attributes: dict[str, str] | None = None) -> str:
        self.messages.append((subject, message))
        return f"msg-{len(self.messages)}"


def make_deps(
    rooms: InMemoryRoomService, mode: Mode = Mode.ENFORCE, **policy: Any
) -> tuple[ReaperDependencies, RecordingNotifier]:
    notifier = RecordingNotifier()
    settings = ReaperSettings.model_validate(
        dict(
            environment_name="unit",
            mode_parameter_name="/livekit-fleet-remediation/unit/mode",
            notification_topic_arn="arn:aws:sns:eu-west-1:123456789012:t",
            runbook_base_url="https://runbooks.example.com/repo",
            livekit_url="http://127.0.0.1:7880",
            livekit_secret_id="unit/livekit",
            reaper=ReaperSection(policy=ReaperPolicy(**policy)),
            agent_services=[AGENT_SERVICE],
        )
    )
    deps = ReaperDependencies(
        settings=settings,
        mode_switch=FixedModeSwitch(mode),
        notifier=notifier,
        room_service_factory=lambda: rooms,
        clock=lambda: NOW,
    )
    return deps, notifier


def invoke(event: Any, deps: ReaperDependencies, remaining_ms: int = 90_000) -> dict[str, Any]:
    return handler.lambda_handler(event, LocalLambdaContext(remaining_ms), dependencies=deps)


def old_and_new() -> InMemoryRoomService:
    return InMemoryRoomService(
        [room("lesson-zombie", NOW - timedelta(hours=3)), room("lesson-live", NOW - timedelta(minutes=5))]
    )


def test_a_manual_invoke_without_dry_run_is_a_dry_run_that_changes_nothing() -> None:
    rooms = old_and_new()
    deps, notifier = make_deps(rooms)
    report = invoke({}, deps)
    assert report["mode"] == "dry-run"
    assert report["trigger"]["kind"] == "manual"
    decisions = {c["resource"]: c["decision"] for c in report["candidates"]}
    assert decisions == {"lesson-zombie": "would-act", "lesson-live": "skip"}
    assert report["actions"] == []
    assert set(rooms.rooms) == {"lesson-zombie", "lesson-live"}
    assert notifier.messages == []


def test_dry_run_reports_the_same_decisions_as_an_enforcing_run() -> None:
    dry = invoke({"dry_run": True}, make_deps(old_and_new())[0])
    real = invoke({"dry_run": False}, make_deps(old_and_new())[0])
    strip = [(c["resource"], c["reason"]) for c in dry["candidates"]]
    assert strip == [(c["resource"], c["reason"]) for c in real["candidates"]]
    assert [c["decision"] for c in real["candidates"]] == ["act", "skip"]


def test_a_scheduled_run_in_enforce_mode_deletes_over_age_rooms_and_notifies() -> None:
    rooms = old_and_new()
    deps, notifier = make_deps(rooms)
    report = invoke(SCHEDULE_EVENT, deps)
    assert report["mode"] == "enforce"
    assert report["trigger"] == {
        "kind": "schedule",
        "source": "lkfr-staging-reaper",
        "detail": {"time": "2026-09-15T18:00:00+00:00"},
    }
    assert [(a["resource"], a["outcome"]) for a in report["actions"]] == [("lesson-zombie", "done")]
    assert set(rooms.rooms) == {"lesson-live"}
    ((subject, message),) = notifier.messages
    assert subject == "[unit] zombie reaper deleted 1 of 1 over-age room(s) (oldest lesson-zombie, 3h00m)"
    assert "lesson-zombie (RM_lesson-zombie): age 3h00m >= max 1h00m [default]" in message
    assert "done 1 · already done 0 · refused 0 · failed 0 · unknown 0" in message
    assert "Runbook: https://runbooks.example.com/repo/runbooks/zombie-reaper.html" in message
    stop = "aws ssm put-parameter --overwrite --name /livekit-fleet-remediation/unit/zombie-reaper/mode"
    assert f"{stop} --value off" in message
    assert report["notifications"] == ["msg-1"]


@pytest.mark.parametrize(("switch", "expected"), [(Mode.DRY_RUN, "dry-run"), (Mode.OFF, "off")])
def test_the_kill_switch_caps_a_manual_enforcing_run(switch: Mode, expected: str) -> None:
    rooms = old_and_new()
    deps, _ = make_deps(rooms, mode=switch)
    report = invoke({"dry_run": False}, deps)
    assert report["mode"] == expected
    assert len(rooms.rooms) == 2
    if switch is Mode.OFF:
        assert report["candidates"] == []
        assert rooms.calls == []


def test_the_re_check_skips_a_room_that_was_recreated_with_a_new_sid() -> None:
    rooms = old_and_new()
    deps, _ = make_deps(rooms)
    original = rooms.list_rooms

    async def list_then_recreate(names: Any = None) -> Any:
        result = await original(names)
        if names:  # the re-check: someone recreated the room between snapshot and delete
            rooms.rooms["lesson-zombie"] = room("lesson-zombie", NOW, sid="RM_new")
            return await original(names)
        return result

    rooms.list_rooms = list_then_recreate  # type: ignore[method-assign]
    report = invoke({"dry_run": False}, deps)
    (action,) = report["actions"]
    assert action["outcome"] == "skipped"
    assert "recreated" in action["reason"]
    assert "lesson-zombie" in rooms.rooms


def test_a_room_already_gone_counts_as_done_without_a_delete() -> None:
    rooms = old_and_new()
    deps, notifier = make_deps(rooms)
    original = rooms.list_rooms

    async def vanish_before_recheck(names: Any = None) -> Any:
        if names:
            rooms.rooms.pop("lesson-zombie", None)
        return await original(names)

    rooms.list_rooms = vanish_before_recheck  # type: ignore[method-assign]
    report = invoke({"dry_run": False}, deps)
    assert [(a["resource"], a["outcome"]) for a in report["actions"]] == [("lesson-zombie", "already-done")]
    assert ("DeleteRoom", "lesson-zombie") not in rooms.calls
    assert notifier.messages == []


def test_an_error_on_one_room_is_recorded_and_the_others_go_on() -> None:
    rooms = InMemoryRoomService([room(f"lesson-{i}", NOW - timedelta(hours=2, minutes=i)) for i in range(3)])
    rooms.fail_deletes.add("lesson-1")
    deps, notifier = make_deps(rooms)
    report = invoke({"dry_run": False}, deps)
    outcomes = {a["resource"]: a["outcome"] for a in report["actions"]}
    assert outcomes == {"lesson-0": "done", "lesson-1": "failed", "lesson-2": "done"}
    failed = next(a for a in report["actions"] if a["outcome"] == "failed")
    assert failed["error"]["code"] == "LiveKitApiError"
    assert report["status"] == "partial"
    subject, message = notifier.messages[0]
    assert subject.startswith("[unit] PARTIAL: zombie reaper deleted 2 of 3 over-age room(s)")
    assert "done 2 · already done 0 · refused 0 · failed 1 · unknown 0" in message
    assert "WARNING · run partly failed" in message


def test_a_trimmed_run_says_so_in_the_report() -> None:
    rooms = InMemoryRoomService([room(f"lesson-{i}", NOW - timedelta(hours=2, minutes=i)) for i in range(5)])
    deps, _ = make_deps(rooms, max_deletions_per_run=2)
    report = invoke({"dry_run": False}, deps)
    assert report["summary"]["trimmed_by_cap"] == 3
    assert report["summary"]["reaped"] == 2
    assert sorted(rooms.rooms) == ["lesson-0", "lesson-1", "lesson-2"]  # the newest stay


def test_no_time_left_skips_rooms_instead_of_being_killed_by_the_timeout() -> None:
    rooms = old_and_new()
    deps, _ = make_deps(rooms)
    report = invoke({"dry_run": False}, deps, remaining_ms=4_000)
    (action,) = report["actions"]
    assert action["outcome"] == "skipped"
    assert action["reason"].startswith("deadline")
    assert "lesson-zombie" in rooms.rooms


def test_livekit_down_is_a_typed_error_said_as_a_failure_never_as_success() -> None:
    rooms = old_and_new()
    rooms.unavailable = True
    deps, notifier = make_deps(rooms)
    report = invoke({"dry_run": False}, deps)
    assert report["status"] == "failed"
    assert [e["code"] for e in report["errors"]] == ["LiveKitUnavailable"]
    assert report["candidates"] == []
    assert report["actions"] == []
    ((subject, message),) = notifier.messages
    assert subject == (
        "[unit] FAILED: zombie reaper checked for over-age rooms, but the run failed: LiveKitUnavailable"
    )
    assert "CRITICAL · run failed" in message
    assert "done 0 · already done 0 · refused 0 · failed 0 · unknown 0 · errors 1" in message
    assert rooms.closed


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({"dry_run": "maybe"}, "dry_run"),
        ({"max_age_seconds": -5}, "max_age_seconds"),
        ({"max_age_seconds": 3600}, "must be stricter"),
        ({"surprise": 1}, "surprise"),
        (["not", "an", "object"], "JSON object"),
        ({**SCHEDULE_EVENT, "detail-type": "AWS API Call via CloudTrail"}, "does not handle"),
        ({**SCHEDULE_EVENT, "time": "yesterday"}, "malformed EventBridge event"),
    ],
)
def test_bad_events_give_a_typed_error_and_change_nothing(event: Any, message: str) -> None:
    rooms = old_and_new()
    deps, _ = make_deps(rooms)
    report = invoke(event, deps)
    (error,) = report["errors"]
    assert error["code"] == "InvalidEvent"
    assert message in error["message"]
    assert rooms.calls == []


def test_a_stricter_manual_max_age_reaps_younger_rooms() -> None:
    rooms = old_and_new()
    deps, _ = make_deps(rooms)
    report = invoke({"dry_run": False, "max_age_seconds": 60}, deps)
    assert sorted(a["resource"] for a in report["actions"]) == ["lesson-live", "lesson-zombie"]
    assert rooms.rooms == {}


def test_an_invalid_environment_yields_one_report_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    handler.lambda_handler.cache_clear()
    monkeypatch.setenv("ENVIRONMENT_NAME", "unit")
    monkeypatch.delenv("LIVEKIT_URL", raising=False)
    report = handler.lambda_handler({}, LocalLambdaContext())
    (error,) = report["errors"]
    assert error["code"] == "ConfigurationError"
    assert "LIVEKIT_URL" in error["message"]
    assert report["environment"] == "unit"


def test_an_unexpected_exception_is_reported_once_then_raised_for_the_dlq(
    caplog: pytest.LogCaptureFixture,
) -> None:
    deps, _ = make_deps(old_and_new())

    def broken_factory() -> InMemoryRoomService:
        raise RuntimeError("boom")

    deps.room_service_factory = broken_factory
    with pytest.raises(RuntimeError, match="boom"):
        invoke({}, deps)
    logged = [r for r in caplog.records if r.getMessage() == "remediation report"]
    assert len(logged) == 1
    assert logged[0].report["errors"][0]["code"] == "InternalError"  # type: ignore[attr-defined]


def alarm_event(name: str, state: str = "ALARM") -> dict[str, Any]:
    return {
        **SCHEDULE_EVENT,
        "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch",
        "resources": [f"arn:aws:cloudwatch:eu-west-1:123456789012:alarm:{name}"],
        "detail": {
            "alarmName": name,
            "state": {
                "value": state,
                "reason": "Threshold Crossed",
                "timestamp": "2026-09-15T17:14:00.000+0000",
            },
            "previousState": {"value": "OK", "reason": "", "timestamp": "2026-09-15T16:00:00.000+0000"},
            "configuration": {},
        },
    }


def test_the_vad_alarm_triggers_a_reap() -> None:
    rooms = old_and_new()
    deps, _ = make_deps(rooms)
    report = invoke(alarm_event("livekit-unit-agents-vad-slow-inference"), deps)
    assert report["trigger"]["kind"] == "alarm"
    assert report["trigger"]["source"] == "livekit-unit-agents-vad-slow-inference"
    assert [(a["resource"], a["outcome"]) for a in report["actions"]] == [("lesson-zombie", "done")]


def test_an_unknown_alarm_is_a_typed_error_and_reaps_nothing() -> None:
    rooms = old_and_new()
    deps, _ = make_deps(rooms)
    report = invoke(alarm_event("someone-elses-alarm"), deps)
    assert [e["code"] for e in report["errors"]] == ["UnknownAlarm"]
    assert rooms.calls == []


def test_a_malformed_alarm_event_is_a_typed_error() -> None:
    event = alarm_event("livekit-unit-agents-vad-slow-inference")
    del event["detail"]["state"]
    report = invoke(event, make_deps(old_and_new())[0])
    assert [e["code"] for e in report["errors"]] == ["InvalidEvent"]
    assert "state" in report["errors"][0]["message"]
