"""The kill switch on moto SSM: the environment's switch is the ceiling, a function's own switch can
only lower it, both are read in one call, a read is cached for at most five seconds, and a switch
turned off in the middle of a reaper run stops the deletions not yet started."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from devkit.fakes.livekit import InMemoryRoomService, room
from fleet_remediation.adapters.common_wiring import kill_switch_for
from fleet_remediation.contract.budgets import KILL_SWITCH_READ
from fleet_remediation.contract.naming import FunctionName, function_mode_parameter_name, mode_parameter_name
from fleet_remediation.contract.policies import ReaperPolicy
from fleet_remediation.contract.sections import ReaperSection
from fleet_remediation.contract.settings import ReaperSettings
from fleet_remediation.core.errors import KillSwitchError
from fleet_remediation.core.kill_switch import (
    KILL_SWITCH_MAX_AGE_SECONDS,
    SsmModeSwitch,
    resolve_mode,
    still_enforcing,
)
from fleet_remediation.core.report_model import Mode
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
from zombie_reaper import handler
from zombie_reaper.dependencies import ReaperDependencies

ENVIRONMENT = mode_parameter_name("it")
REAPER = function_mode_parameter_name("it", FunctionName.ZOMBIE_REAPER)
NOW = datetime(2026, 9, 15, 18, 0, tzinfo=UTC)


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def ssm() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("ssm")
        client.put_parameter(Name=ENVIRONMENT, Value="enforce", Type="String")
        client.put_parameter(Name=REAPER, Value="enforce", Type="String")
        yield client


def set_switch(ssm: Any, name: str, value: str) -> None:
    ssm.put_parameter(Name=name, Value=value, Type="String", Overwrite=True)


@pytest.mark.parametrize(
    ("environment", "own", "effective"),
    [
        ("enforce", "enforce", Mode.ENFORCE),
        ("enforce", "dry-run", Mode.DRY_RUN),
        ("enforce", "off", Mode.OFF),
        ("dry-run", "enforce", Mode.DRY_RUN),
        ("off", "enforce", Mode.OFF),
        ("off", "dry-run", Mode.OFF),
    ],
)
def test_the_environments_switch_is_the_ceiling(
    ssm: Any, environment: str, own: str, effective: Mode
) -> None:
    set_switch(ssm, ENVIRONMENT, environment)
    set_switch(ssm, REAPER, own)
    switch = SsmModeSwitch(ENVIRONMENT, REAPER, client=ssm)
    assert switch.read() is effective
    assert switch.reads == 1  # both parameters in one GetParameters call


def test_without_a_functions_switch_the_environments_governs(ssm: Any) -> None:
    ssm.delete_parameter(Name=REAPER)
    set_switch(ssm, ENVIRONMENT, "dry-run")
    assert SsmModeSwitch(ENVIRONMENT, REAPER, client=ssm).read() is Mode.DRY_RUN


@pytest.mark.parametrize("broken", [ENVIRONMENT, REAPER])
def test_an_unknown_value_in_either_switch_is_a_typed_error(ssm: Any, broken: str) -> None:
    set_switch(ssm, broken, "yes please")
    with pytest.raises(KillSwitchError, match=broken):
        SsmModeSwitch(ENVIRONMENT, REAPER, client=ssm).read()


def test_a_change_is_seen_within_the_cache_age(ssm: Any) -> None:
    clock = ManualClock()
    switch = SsmModeSwitch(ENVIRONMENT, REAPER, client=ssm, clock=clock)
    assert switch.read() is Mode.ENFORCE
    set_switch(ssm, REAPER, "off")
    clock.now += KILL_SWITCH_MAX_AGE_SECONDS - 0.1
    assert switch.read() is Mode.ENFORCE  # still the cached value
    clock.now += 0.1
    assert switch.read() is Mode.OFF
    assert switch.reads == 2


class SwitchingRooms(InMemoryRoomService):
    """Turns the reaper's own switch off right after the first deletion, and lets the switch's
    cache age pass, as a person at a terminal would mid-run."""

    def __init__(self, rooms: list[Any], ssm: Any, clock: ManualClock) -> None:
        super().__init__(rooms)
        self.ssm = ssm
        self.clock = clock

    async def delete_room(self, name: str) -> None:
        await super().delete_room(name)
        if len([c for c in self.calls if c[0] == "DeleteRoom"]) == 1:
            set_switch(self.ssm, REAPER, "off")
            self.clock.now += KILL_SWITCH_MAX_AGE_SECONDS


def test_turning_the_reaper_off_mid_run_stops_the_remaining_deletions(ssm: Any) -> None:
    clock = ManualClock()
    rooms = SwitchingRooms(
        [room(f"lesson-{i}", NOW - timedelta(hours=2, minutes=i)) for i in range(4)], ssm, clock
    )
    settings = ReaperSettings.model_validate(
        {
            "environment_name": "it",
            "mode_parameter_name": ENVIRONMENT,
            "function_mode_parameter_name": REAPER,
            "notification_topic_arn": boto3.client("sns").create_topic(Name="it")["TopicArn"],
            "runbook_base_url": "https://runbooks.example.com/repo",
            "livekit_url": "http://127.0.0.1:7880",
            "livekit_secret_id": "unused: rooms injected",
            # One deletion at a time, so "the rest" is well defined.
            "reaper": ReaperSection(policy=ReaperPolicy(delete_concurrency=1)),
        }
    )
    deps = ReaperDependencies(
        settings=settings,
        mode_switch=SsmModeSwitch(ENVIRONMENT, REAPER, client=ssm, clock=clock),
        notifier=_Inbox(),
        room_service_factory=lambda: rooms,
        clock=lambda: NOW,
    )
    report = handler.lambda_handler({"dry_run": False}, LocalLambdaContext(), dependencies=deps)
    # A done step's reason is its candidate's (the report leaves the action's empty reason out).
    outcomes = [(a["resource"], a["outcome"], a.get("reason", "")) for a in report["actions"]]
    assert outcomes[0] == ("lesson-3", "done", "")
    (candidate,) = [c for c in report["candidates"] if c["resource"] == "lesson-3"]
    assert "age 7380s >= max 3600s" in candidate["reason"]
    assert outcomes[1:] == [(f"lesson-{i}", "skipped", "kill switch is now off") for i in (2, 1, 0)]
    assert sorted(rooms.rooms) == ["lesson-0", "lesson-1", "lesson-2"]


class _Inbox:
    def __init__(self) -> None:
        self.messages: list[tuple[str, str]] = []

    def publish(self, subject: str, message: str, attributes: dict[str, str] | None = None) -> str:
        self.messages.append((subject, message))
        return f"msg-{len(self.messages)}"


def test_a_value_is_read_whatever_its_case_and_surrounding_space(ssm: Any) -> None:
    set_switch(ssm, ENVIRONMENT, " Dry-Run\n")
    assert SsmModeSwitch(ENVIRONMENT, REAPER, client=ssm).read() is Mode.DRY_RUN


def test_an_unknown_value_names_the_parameter_and_what_it_may_hold(ssm: Any) -> None:
    set_switch(ssm, REAPER, "yes please")
    with pytest.raises(KillSwitchError) as unknown:
        SsmModeSwitch(ENVIRONMENT, REAPER, client=ssm).read()
    assert unknown.value.message == f"{REAPER} holds 'yes please'; expected one of enforce, dry-run, off"
    assert unknown.value.resource == REAPER


def test_a_missing_environment_switch_is_a_typed_error_not_enforce(ssm: Any) -> None:
    ssm.delete_parameter(Name=ENVIRONMENT)
    with pytest.raises(KillSwitchError) as missing:
        SsmModeSwitch(ENVIRONMENT, REAPER, client=ssm).read()
    assert missing.value.message == f"kill switch {ENVIRONMENT} does not exist"
    assert missing.value.resource == ENVIRONMENT


def test_an_unreadable_switch_is_a_typed_error_naming_both_parameters(ssm: Any) -> None:
    denied = ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "GetParameters")
    ssm.meta.events.register_first("before-call.ssm.GetParameters", _raise(denied))
    with pytest.raises(KillSwitchError) as unreadable:
        SsmModeSwitch(ENVIRONMENT, REAPER, client=ssm).read()
    assert unreadable.value.message.startswith(f"cannot read kill switch {ENVIRONMENT}, {REAPER}: ")
    assert "AccessDeniedException" in unreadable.value.message
    assert unreadable.value.resource == ENVIRONMENT


def test_a_switch_without_a_function_parameter_asks_for_the_environments_alone(ssm: Any) -> None:
    asked: list[list[str]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        asked.append(params["Names"])

    ssm.meta.events.register("provide-client-params.ssm.GetParameters", record)
    set_switch(ssm, ENVIRONMENT, "off")
    assert SsmModeSwitch(ENVIRONMENT, client=ssm).read() is Mode.OFF
    assert asked == [[ENVIRONMENT]]


def test_the_switchs_ssm_client_carries_the_kill_switch_budget(ssm: Any) -> None:
    settings = ReaperSettings.model_validate(
        {
            "environment_name": "it",
            "mode_parameter_name": ENVIRONMENT,
            "notification_topic_arn": "arn:aws:sns:eu-west-1:123456789012:t",
            "runbook_base_url": "https://runbooks.example.com/repo",
            "livekit_url": "http://127.0.0.1:1",
            "livekit_secret_id": "unused",
            "reaper": ReaperSection(),
        }
    )
    built = kill_switch_for(settings)._client.meta.config
    assert (built.connect_timeout, built.read_timeout) == (
        KILL_SWITCH_READ.connect_timeout_seconds,
        KILL_SWITCH_READ.read_timeout_seconds,
    )
    assert built.retries["total_max_attempts"] == KILL_SWITCH_READ.attempts


@pytest.mark.parametrize(
    ("switch", "manual_dry_run", "effective"),
    [
        (Mode.ENFORCE, None, Mode.ENFORCE),
        (Mode.ENFORCE, False, Mode.ENFORCE),
        (Mode.ENFORCE, True, Mode.DRY_RUN),
        (Mode.DRY_RUN, False, Mode.DRY_RUN),
        (Mode.OFF, False, Mode.OFF),
        (Mode.OFF, True, Mode.OFF),
    ],
)
def test_a_manual_run_can_only_be_stricter_than_the_switch(
    switch: Mode, manual_dry_run: bool | None, effective: Mode
) -> None:
    assert resolve_mode(switch, manual_dry_run) is effective


class _FixedSwitch:
    def __init__(self, mode: Mode | KillSwitchError) -> None:
        self.mode = mode

    def read(self) -> Mode:
        if isinstance(self.mode, KillSwitchError):
            raise self.mode
        return self.mode


def test_the_check_before_a_destructive_step_goes_on_only_in_enforce() -> None:
    assert still_enforcing(_FixedSwitch(Mode.ENFORCE)) == (True, "")
    assert still_enforcing(_FixedSwitch(Mode.DRY_RUN)) == (False, "kill switch is now dry-run")
    assert still_enforcing(_FixedSwitch(Mode.OFF)) == (False, "kill switch is now off")
    unreadable = KillSwitchError("cannot read kill switch /x: timeout", resource="/x")
    assert still_enforcing(_FixedSwitch(unreadable)) == (
        False,
        "kill switch unreadable: cannot read kill switch /x: timeout",
    )


def _raise(error: Exception) -> Any:
    def handler(**_: Any) -> None:
        raise error

    return handler
