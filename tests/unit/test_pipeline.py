"""The shared pipeline with a fourth function built from its stages alone (a room census that marks
crowded rooms), invoked through the shared handler: one report per invocation whatever the event,
the mode, a hold or a failing stage; the version in every report; the action events put once; what
a stage noted recorded in the order it happened, also when the stage fails."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from fleet_remediation import __version__
from fleet_remediation.contract.action_events import ActionEvent, action_event_schema
from fleet_remediation.contract.events import EventAges
from fleet_remediation.core.announce import Announced
from fleet_remediation.core.door import Door
from fleet_remediation.core.errors import LiveKitApiError, LiveKitTimeoutError, LiveKitUnavailableError
from fleet_remediation.core.handler import lambda_handler_for
from fleet_remediation.core.pipeline import Pipeline, Run, Work
from fleet_remediation.core.report_model import Mode, Outcome, Refusal
from fleet_remediation.core.routing import ManualEvent, ManualRoute, Routed, Router, ScheduleRoute
from fleet_remediation.core.stages import StageDefaults, Start
from livekit_fleet_remediation.offline.fixed_mode import FixedModeSwitch
from livekit_fleet_remediation.offline.lambda_context import LOCAL_ACCOUNT, LocalLambdaContext, local_region
from livekit_fleet_remediation.offline.replay_stores import SimulatedOnceGuard

NOW = datetime(2026, 9, 15, 17, 37, tzinfo=UTC)


@dataclass(frozen=True)
class Settings:
    environment_name: str = "unit"


@dataclass
class RecordingSink:
    events: list[ActionEvent] = field(default_factory=list)

    def put(self, events: list[ActionEvent]) -> Announced:
        self.events.extend(events)
        return Announced(sent=len(events))


@dataclass
class CensusDeps:
    rooms: dict[str, int]
    mode_switch: FixedModeSwitch
    settings: Settings = field(default_factory=Settings)
    clock: Any = lambda: NOW
    once: SimulatedOnceGuard = field(default_factory=SimulatedOnceGuard)
    action_events: RecordingSink = field(default_factory=RecordingSink)
    marked: list[str] = field(default_factory=list)
    told: list[str] = field(default_factory=list)
    read_fails: bool = False
    quiet: bool = False
    # The read notes a room it leaves alone and a probe it tolerates losing; the act journals an error.
    noting: bool = False
    act_fails: bool = False


CensusRun = Run[CensusDeps, Routed[ManualEvent]]
CensusWork = Work[dict[str, int], list[str], list[str]]


ROUTER: Router[ManualEvent] = Router("the census", [ScheduleRoute(), ManualRoute(ManualEvent)])


class CensusStages(StageDefaults[CensusDeps, Routed[ManualEvent], dict[str, int], list[str], list[str], str]):
    function = "room_census"

    def route(self, event: Any, deps: CensusDeps, door: Door) -> Routed[ManualEvent]:
        return ROUTER.route(event, door)

    def event_ages(self, deps: CensusDeps) -> EventAges:
        return EventAges(schedule_seconds=600)

    def begin(self, start: Start[CensusDeps]) -> Routed[ManualEvent]:
        routed: Routed[ManualEvent] = start.routed
        start.resolve_mode(routed.manual.dry_run if routed.manual else None)
        return routed

    def read(self, run: CensusRun) -> dict[str, int]:
        if run.deps.noting:
            run.noted.skip("lobby", "a lobby is never counted", people=40)
            run.noted.error(LiveKitTimeoutError("the probe room did not answer", resource="probe"))
        if run.deps.read_fails:
            raise LiveKitUnavailableError("the rooms could not be listed")
        return dict(run.deps.rooms)

    def decide(self, run: CensusRun, rooms: dict[str, int]) -> list[str]:
        return sorted(name for name, people in rooms.items() if people > 10)

    def hold(self, run: CensusRun, rooms: dict[str, int], plan: list[str]) -> tuple[list[str], str | None]:
        return ([], "quiet hours") if run.deps.quiet and run.event.manual is None else (plan, None)

    def act(self, run: CensusRun, rooms: dict[str, int], plan: list[str]) -> list[str]:
        for name in plan:
            run.deps.marked.append(name)
            run.report.action(name, "mark", Outcome.DONE)
            if run.deps.act_fails:
                run.report.error(
                    LiveKitApiError("the mark was refused", twirp_code="internal", resource=name)
                )
        return plan

    def record(self, run: CensusRun, work: CensusWork) -> None:
        for name in work.plan or []:
            held = name not in (work.acting or [])
            run.report.candidate(name, run.report.planned(held), "more than 10 people")
        run.report.summary["marked"] = len(work.done or [])

    def refusals(self, run: CensusRun, work: CensusWork) -> list[Refusal]:
        return [
            Refusal(name, "mark", "empty") for name, people in (work.snapshot or {}).items() if not people
        ]

    def compose(self, run: CensusRun, work: CensusWork) -> str | None:
        return f"error: {work.error.code}" if work.error else f"{len(work.plan or [])} crowded"

    def tell(self, run: CensusRun, note: str) -> None:
        run.deps.told.append(note)

    def incident_of(self, note: str) -> str:
        return "census-1"


CENSUS = Pipeline(CensusStages())
handler = lambda_handler_for("room_census", CENSUS, lambda: pytest.fail("tests inject their dependencies"))

SCHEDULE = {
    "version": "0",
    "id": "a",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": LOCAL_ACCOUNT,
    "time": "2026-09-15T17:37:00Z",
    "region": local_region(),
    "resources": [f"arn:aws:events:{local_region()}:{LOCAL_ACCOUNT}:rule/census"],
    "detail": {},
}


def census(mode: Mode = Mode.ENFORCE, **kwargs: Any) -> CensusDeps:
    return CensusDeps(rooms={"big": 12, "small": 2, "empty": 0}, mode_switch=FixedModeSwitch(mode), **kwargs)


def test_a_manual_dry_run_decides_records_and_tells_but_changes_nothing() -> None:
    deps = census()
    report = handler({"dry_run": True}, LocalLambdaContext(), dependencies=deps)
    assert report["version"] == __version__
    assert report["mode"] == "dry-run"
    assert [(c["resource"], c["decision"]) for c in report["candidates"]] == [("big", "would-act")]
    assert deps.marked == []
    assert deps.told == ["1 crowded"]
    kinds = [(e.kind.value, e.resource) for e in deps.action_events.events]
    assert kinds == [("would-act", "big"), ("refusal", "empty")]


def test_an_enforced_run_acts_and_announces_each_action_once_across_retries() -> None:
    deps = census()
    context = LocalLambdaContext()
    first = handler(SCHEDULE, context, dependencies=deps)
    assert first["mode"] == "enforce"
    assert first["summary"]["marked"] == 1
    assert deps.marked == ["big"]
    assert first["summary"]["action_events"] == {"sent": 2, "unknown": 0, "failed": 0, "problems": []}
    # Lambda's retry of the same event (same request id): the events are not put again.
    retried = handler(SCHEDULE, context, dependencies=deps)
    assert retried["summary"]["action_events"]["replayed"] is True
    assert len(deps.action_events.events) == 2
    assert [(e.kind.value, e.resource, e.outcome) for e in deps.action_events.events] == [
        ("action", "big", "done"),
        ("refusal", "empty", "refused"),
    ]
    validator = Draft202012Validator(action_event_schema())
    for event in deps.action_events.events:
        validator.validate(event.model_dump(mode="json"))
        assert event.incident_id == "census-1"
        assert event.function == "room_census"


def test_a_forged_event_gets_one_report_with_a_typed_error_and_nothing_read() -> None:
    deps = census()
    forged = {**SCHEDULE, "source": "evil.source"}
    report = handler(forged, LocalLambdaContext(), dependencies=deps)
    assert [e["code"] for e in report["errors"]] == ["UntrustedEvent"]
    assert report["status"] == "failed"
    assert report["version"] == __version__
    assert deps.marked == []
    assert deps.told == []
    assert deps.action_events.events == []


def test_a_hold_keeps_the_plan_back_records_held_decisions_and_a_manual_run_overrides_it() -> None:
    deps = census(quiet=True)
    held = handler(SCHEDULE, LocalLambdaContext(), dependencies=deps)
    assert [c["decision"] for c in held["candidates"]] == ["held"]
    assert deps.marked == []
    assert ("held", "big") in [(e.kind.value, e.resource) for e in deps.action_events.events]
    manual = handler({"dry_run": False}, LocalLambdaContext(), dependencies=deps)
    assert [c["decision"] for c in manual["candidates"]] == ["act"]
    assert deps.marked == ["big"]


def test_the_switch_off_reads_nothing_and_a_failing_read_is_recorded_and_told() -> None:
    off = census(Mode.OFF, read_fails=True)
    report = handler(SCHEDULE, LocalLambdaContext(), dependencies=off)
    assert report["summary"] == {"skipped": "kill switch is off: nothing read, nothing changed"}
    assert off.told == []
    failing = census(read_fails=True)
    report = handler(SCHEDULE, LocalLambdaContext(), dependencies=failing)
    assert [e["code"] for e in report["errors"]] == ["LiveKitUnavailable"]
    assert failing.told == ["error: LiveKitUnavailable"]


def test_what_a_stage_noted_is_recorded_in_order_before_the_act_and_kept_when_a_stage_fails() -> None:
    acted = handler(SCHEDULE, LocalLambdaContext(), dependencies=census(noting=True, act_fails=True))
    assert [e["code"] for e in acted["errors"]] == ["LiveKitTimeout", "LiveKitApiError"]
    assert [(c["resource"], c["decision"]) for c in acted["candidates"]] == [
        ("lobby", "skip"),
        ("big", "act"),
    ]
    failed = handler(SCHEDULE, LocalLambdaContext(), dependencies=census(noting=True, read_fails=True))
    assert [e["code"] for e in failed["errors"]] == ["LiveKitTimeout", "LiveKitUnavailable"]
    assert [(c["resource"], c["reason"]) for c in failed["candidates"]] == [
        ("lobby", "a lobby is never counted")
    ]
