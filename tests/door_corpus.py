"""Forged and malformed EventBridge events for every route of every function, built at a run's
``now``: each case is a valid event of its route with one thing wrong, and the code the door must
refuse it with. ``tests/integration/test_bad_inputs.py`` sends them through the handlers;
``tests/unit/test_door.py`` shows each case's valid base passes the door (so a refusal is the
forgery's doing)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devkit.fakes.drainer_world import suspect_event
from fleet_remediation.contract.agent_services import DEFAULT_AGENT_SERVICE
from fleet_remediation.contract.events import (
    DRAINER_EVENT_AGES,
    EVENT_CLOCK_SKEW_SECONDS,
    REAPER_EVENT_AGES,
    EventAges,
    responder_event_ages,
)
from fleet_remediation.contract.naming import (
    ALARM_DETAIL_TYPE,
    SCHEDULE_DETAIL_TYPE,
    tts_reach_alarm_name,
    vad_alarm_name,
)
from fleet_remediation.contract.sections import TtsReachSection
from livekit_fleet_remediation.offline.eventbridge_events import alarm_state_change, schedule_event

ENV = "it"
SERVICE = DEFAULT_AGENT_SERVICE
ACCOUNT, REGION = "123456789012", "eu-west-1"
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:lkfr-{ENV}-function"
FOREIGN_ACCOUNT, FOREIGN_REGION = "999999999999", "us-east-1"
TASK = "b9238a5f30f04c3a9207df1601ba88bf"
SKEW = timedelta(seconds=EVENT_CLOCK_SKEW_SECONDS)
INVALID, UNTRUSTED, UNKNOWN_ALARM = "InvalidEvent", "UntrustedEvent", "UnknownAlarm"
OTHER_SERVICE = "OtherAgentService"

Event = dict[str, Any]
Builder = Callable[[datetime], Event]


@dataclass(frozen=True)
class Route:
    """One EventBridge route of one function (its folder name): a valid event of it at ``now``, and
    its maximum age."""

    function: str
    name: str
    kind: str  # schedule, alarm or suspect
    good: Builder
    max_age_seconds: int


@dataclass(frozen=True)
class Forged:
    route: Route
    name: str
    change: Callable[[Event, datetime], Any]
    code: str

    @property
    def id(self) -> str:
        return f"{self.route.function} {self.route.name}: {self.name}"

    def event(self, now: datetime) -> Any:
        return self.change(copy.deepcopy(self.route.good(now)), now)

    def param(self) -> Any:
        return pytest.param(self, id=self.id)


def iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def schedule_route(function: str, ages: EventAges) -> Route:
    def good(now: datetime) -> Event:
        rule = f"lkfr-{ENV}-{function.replace('_', '-')}"
        return schedule_event(rule, account=ACCOUNT, region=REGION, now=now)

    return Route(function, "schedule", "schedule", good, ages.schedule_seconds)


def alarm_route(function: str, alarm: str, ages: EventAges) -> Route:
    def good(now: datetime) -> Event:
        return alarm_state_change(alarm, account=ACCOUNT, region=REGION, now=now)

    return Route(function, f"{alarm} alarm", "alarm", good, ages.alarm_seconds)


def suspect_route(function: str, ages: EventAges) -> Route:
    def good(now: datetime) -> Event:
        return suspect_event(TASK, now - timedelta(minutes=1)) | {"time": iso(now)}

    return Route(function, "suspect worker", "suspect", good, ages.suspect_worker_seconds)


RESPONDER_AGES = responder_event_ages(TtsReachSection().recheck_minutes)
ROUTES: dict[str, list[Route]] = {
    "zombie_reaper": [
        schedule_route("zombie_reaper", REAPER_EVENT_AGES),
        alarm_route("zombie_reaper", vad_alarm_name(ENV, SERVICE), REAPER_EVENT_AGES),
    ],
    "worker_drainer": [
        schedule_route("worker_drainer", DRAINER_EVENT_AGES),
        alarm_route("worker_drainer", vad_alarm_name(ENV, SERVICE), DRAINER_EVENT_AGES),
        suspect_route("worker_drainer", DRAINER_EVENT_AGES),
    ],
    "tts_reach_alarm": [
        alarm_route("tts_reach_alarm", tts_reach_alarm_name(ENV, SERVICE), RESPONDER_AGES),
        schedule_route("tts_reach_alarm", RESPONDER_AGES),
    ],
}


def _set(path: str, value: Any) -> Callable[[Event, datetime], Event]:
    """A change that sets one (dotted) field of the event."""

    def change(event: Event, now: datetime) -> Event:
        *parents, last = path.split(".")
        target = event
        for key in parents:
            target = target[key]
        target[last] = value(now) if callable(value) else value
        return event

    return change


def _drop(path: str) -> Callable[[Event, datetime], Event]:
    """A change that removes one (dotted) field of the event."""

    def change(event: Event, now: datetime) -> Event:
        *parents, last = path.split(".")
        target = event
        for key in parents:
            target = target[key]
        del target[last]
        return event

    return change


def _copy(source: str, path: str) -> Callable[[Event, datetime], Event]:
    """A change that sets one (dotted) field to another's value, as it is."""

    def change(event: Event, now: datetime) -> Event:
        value: Any = event
        for key in source.split("."):
            value = value[key]
        return _set(path, value)(event, now)

    return change


def _moved(account: str = ACCOUNT, region: str = REGION) -> Callable[[Event, datetime], Event]:
    """The whole event, its resources' ARNs included, from another account or region: a consistent
    forgery, not a typo."""

    def change(event: Event, now: datetime) -> Event:
        event["account"], event["region"] = account, region
        event["resources"] = [
            arn.replace(f":{REGION}:{ACCOUNT}:", f":{region}:{account}:") for arn in event["resources"]
        ]
        return event

    return change


def envelope_cases(route: Route) -> list[Forged]:
    stale = timedelta(seconds=route.max_age_seconds) + SKEW + timedelta(minutes=1)
    other_type = ALARM_DETAIL_TYPE if route.kind != "alarm" else SCHEDULE_DETAIL_TYPE
    cases: list[tuple[str, Callable[[Event, datetime], Any], str]] = [
        ("foreign source", _set("source", "evil.example"), UNTRUSTED),
        ("foreign account", _moved(account=FOREIGN_ACCOUNT), UNTRUSTED),
        ("foreign region", _moved(region=FOREIGN_REGION), UNTRUSTED),
        ("only the account field foreign", _set("account", FOREIGN_ACCOUNT), UNTRUSTED),
        (f"detail-type {other_type}", _set("detail-type", other_type), UNTRUSTED),
        ("a detail-type no route handles", _set("detail-type", "EC2 Instance State-change"), INVALID),
        ("account a number", _set("account", int(ACCOUNT)), INVALID),
        ("region a list", _set("region", [REGION]), INVALID),
        ("time a number", _set("time", lambda now: int(now.timestamp())), INVALID),
        ("time a number in a string", _set("time", lambda now: str(int(now.timestamp()))), INVALID),
        ("time a boolean", _set("time", True), INVALID),
        ("naive time", _set("time", lambda now: iso(now).removesuffix("Z")), INVALID),
        ("time null", _set("time", None), INVALID),
        ("time missing", _drop("time"), INVALID),
        ("time not a time", _set("time", "now-ish"), INVALID),
        ("stale time", _set("time", lambda now: iso(now - stale)), UNTRUSTED),
        ("future time", _set("time", lambda now: iso(now + SKEW + timedelta(minutes=1))), UNTRUSTED),
        ("resources an object", _set("resources", {"0": "arn"}), INVALID),
        ("detail a list", _set("detail", [{}]), INVALID),
        ("detail a string", _set("detail", "{}"), INVALID),
        ("oversize source", _set("source", "s" * 257), INVALID),
        ("oversize id", _set("id", "i" * 129), INVALID),
        ("oversize resource", _set("resources", ["arn:" + "r" * 2000]), INVALID),
        ("not JSON (NaN)", _set("detail", {"x": float("nan")}), INVALID),
    ]
    return [Forged(route, name, change, code) for name, change, code in cases]


def schedule_cases(route: Route) -> list[Forged]:
    rule = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/"
    cases = [
        ("a detail", _set("detail", {"dry_run": False}), INVALID),
        ("no rule", _set("resources", []), UNTRUSTED),
        ("two rules", _set("resources", [f"{rule}a", f"{rule}b"]), UNTRUSTED),
        (
            "a rule of another account",
            _set("resources", [rule.replace(ACCOUNT, FOREIGN_ACCOUNT) + "r"]),
            UNTRUSTED,
        ),
        ("not a rule", _set("resources", [f"arn:aws:sns:{REGION}:{ACCOUNT}:topic"]), UNTRUSTED),
    ]
    return [Forged(route, name, change, code) for name, change, code in cases]


def alarm_cases(route: Route) -> list[Forged]:
    name = route.good(datetime.now(UTC))["detail"]["alarmName"]
    arn = f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:"
    stale = timedelta(seconds=route.max_age_seconds) + SKEW + timedelta(minutes=1)
    cases = [
        # The alarm's ARN and name.
        ("another alarm's ARN", _set("resources", [f"{arn}someone-else"]), UNTRUSTED),
        ("no ARN", _set("resources", []), UNTRUSTED),
        ("two ARNs", _set("resources", [f"{arn}{name}", f"{arn}{name}"]), UNTRUSTED),
        (
            "the ARN in another account",
            _set("resources", [f"{arn}{name}".replace(ACCOUNT, FOREIGN_ACCOUNT)]),
            UNTRUSTED,
        ),
        (
            "the ARN in another region",
            _set("resources", [f"{arn}{name}".replace(REGION, FOREIGN_REGION)]),
            UNTRUSTED,
        ),
        ("another alarm's name", _set("detail.alarmName", "someone-else"), UNKNOWN_ALARM),
        # Wrong types: no coercion.
        ("state value a number", _set("detail.state.value", 1), INVALID),
        ("state a list", _set("detail.state", ["ALARM"]), INVALID),
        ("alarm name a list", _set("detail.alarmName", [name]), INVALID),
        ("state timestamp a number", _set("detail.state.timestamp", lambda now: now.timestamp()), INVALID),
        ("reason a number", _set("detail.state.reason", 3), INVALID),
        ("reasonData an object", _set("detail.state.reasonData", {"recentDatapoints": [1]}), INVALID),
        ("configuration a list", _set("detail.configuration", []), INVALID),
        ("previous state a string", _set("detail.previousState", "OK"), INVALID),
        # Times.
        (
            "naive state timestamp",
            _set("detail.state.timestamp", lambda now: iso(now).removesuffix("Z")),
            INVALID,
        ),
        ("stale state timestamp", _set("detail.state.timestamp", lambda now: iso(now - stale)), UNTRUSTED),
        (
            "future state timestamp",
            _set("detail.state.timestamp", lambda now: iso(now + timedelta(hours=1))),
            UNTRUSTED,
        ),
        ("state timestamp missing", _drop("detail.state.timestamp"), INVALID),
        ("state timestamp null", _set("detail.state.timestamp", None), INVALID),
        ("state timestamp a boolean", _set("detail.state.timestamp", True), INVALID),
        ("previous state timestamp a number", _set("detail.previousState.timestamp", 1.5e9), INVALID),
        ("previous state timestamp not a time", _set("detail.previousState.timestamp", "earlier"), INVALID),
        (
            "naive previous state timestamp",
            _set(
                "detail.previousState.timestamp", lambda now: iso(now - timedelta(hours=1)).removesuffix("Z")
            ),
            INVALID,
        ),
        (
            "future previous state",
            _set("detail.previousState.timestamp", lambda now: iso(now + timedelta(days=1))),
            UNTRUSTED,
        ),
        # Free text over CloudWatch's own limits.
        ("oversize reason", _set("detail.state.reason", "r" * 1024), INVALID),
        ("oversize reasonData", _set("detail.state.reasonData", "d" * 4001), INVALID),
        ("oversize configuration", _set("detail.configuration", {"description": "c" * 20_000}), INVALID),
        ("oversize alarm name", _set("detail.alarmName", "n" * 256), INVALID),
        # States CloudWatch does not have.
        ("unknown state", _set("detail.state.value", "BROKEN"), INVALID),
        ("lower-case state", _set("detail.state.value", "alarm"), INVALID),
        ("empty state", _set("detail.state.value", ""), INVALID),
        ("unknown previous state", _set("detail.previousState.value", "PENDING"), INVALID),
    ]
    return [Forged(route, n, change, code) for n, change, code in cases]


def _window_time_cases(stale: timedelta) -> list[tuple[str, Callable[[Event, datetime], Any], str]]:
    """Every malformed form of each of the suspect window's times: wrong types (no coercion), missing,
    naive, and for the end (the one checked against the clock) stale and future; a start moved so
    far that the window no longer ends after it."""
    cases: list[tuple[str, Callable[[Event, datetime], Any], str]] = []
    for field in ("start", "end"):
        path = f"detail.window.{field}"
        cases += [
            (f"window {field} a number", _set(path, lambda now: now.timestamp()), INVALID),
            (f"window {field} a boolean", _set(path, True), INVALID),
            (f"window {field} null", _set(path, None), INVALID),
            (f"window {field} a list", _set(path, lambda now: [iso(now)]), INVALID),
            (f"window {field} not a time", _set(path, "just now"), INVALID),
            (f"window {field} missing", _drop(path), INVALID),
            (
                f"naive window {field}",
                _set(path, lambda now: iso(now - timedelta(minutes=2)).removesuffix("Z")),
                UNTRUSTED,
            ),
        ]
    cases += [
        ("stale window end", _set("detail.window.end", lambda now: iso(now - stale)), UNTRUSTED),
        (
            "future window end",
            _set("detail.window.end", lambda now: iso(now + timedelta(minutes=5))),
            UNTRUSTED,
        ),
        (
            "future window start",
            _set("detail.window.start", lambda now: iso(now + timedelta(minutes=5))),
            UNTRUSTED,
        ),
    ]
    return cases


def suspect_cases(route: Route) -> list[Forged]:
    stale = timedelta(seconds=route.max_age_seconds) + SKEW + timedelta(minutes=1)
    cases = [
        (
            "resources named",
            _set("resources", [f"arn:aws:ecs:{REGION}:{ACCOUNT}:task/agents/{TASK}"]),
            UNTRUSTED,
        ),
        # Wrong types: no coercion.
        ("p-value a string", _set("detail.p_value", "0.0002"), INVALID),
        ("p-value a boolean", _set("detail.p_value", False), INVALID),
        ("task id a number", _set("detail.task_id", 1), INVALID),
        ("window a list", _set("detail.window", []), INVALID),
        ("evidence a list", _set("detail.evidence", []), INVALID),
        ("environment a number", _set("detail.environment", 1), INVALID),
        *_window_time_cases(stale),
        ("window start after its end", _set("detail.window.start", lambda now: iso(now)), UNTRUSTED),
        (
            "window start at its end",
            _copy("detail.window.end", "detail.window.start"),
            UNTRUSTED,
        ),
        # Free text.
        ("oversize evidence", _set("detail.evidence", {"note": "e" * 9000}), INVALID),
        ("oversize log stream", _set("detail.log_stream", "l" * 513), INVALID),
        ("oversize incident id", _set("detail.incident_id", "i" * 513), INVALID),
        # Not what our responder sends.
        ("another environment", _set("detail.environment", "prod"), UNTRUSTED),
        ("another agent service", _set("detail.agent_service", "outbound"), OTHER_SERVICE),
        ("another alarm", _set("detail.alarm_name", vad_alarm_name(ENV, SERVICE)), UNTRUSTED),
        ("p-value at alpha", _set("detail.p_value", 0.05), UNTRUSTED),
        ("not an ECS task id", _set("detail.task_id", "not-a-task"), UNTRUSTED),
        ("another task's stream", _set("detail.log_stream", "agent/x/" + TASK), UNTRUSTED),
    ]
    return [Forged(route, n, change, code) for n, change, code in cases]


ROUTE_CASES = {"schedule": schedule_cases, "alarm": alarm_cases, "suspect": suspect_cases}


def forged(function: str) -> list[Forged]:
    """Every forged case of every EventBridge route of ``function``, and a suspect-worker event to a
    function that takes none."""
    cases = [
        case for route in ROUTES[function] for case in envelope_cases(route) + ROUTE_CASES[route.kind](route)
    ]
    if not any(route.kind == "suspect" for route in ROUTES[function]):
        foreign = suspect_route(function, DRAINER_EVENT_AGES)
        cases.append(Forged(foreign, "to a function that takes none", lambda e, now: e, INVALID))
    return cases
