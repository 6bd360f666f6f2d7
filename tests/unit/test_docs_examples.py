"""Every Python example in README.md and docs/ is executed here, so a signature change breaks the build,
not the reader.

Each ```python block is found by its page and its place on that page (``docs/extending.md#2`` is the
page's second Python block) and has a runner below that executes the block as written, in a namespace
that provides what the page says comes from elsewhere (the team's stack, the Lambda context, a fake
session), then checks what the example claims to do. A block without a runner, or a runner whose block
is gone, fails: a new example must be run before it is published.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import assertions
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_logs as logs

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FOURTH_FUNCTION = REPO / "tests" / "fixtures" / "fourth_function"


def python_blocks() -> dict[str, str]:
    """``page#n`` → the n-th ```python block of the page (1-based), dedented as the page shows it."""
    found: dict[str, str] = {}
    for page in PAGES:
        blocks = re.findall(
            r"^([ \t]*)```python\n(.*?)^[ \t]*```", page.read_text(), re.MULTILINE | re.DOTALL
        )
        for number, (indent, body) in enumerate(blocks, start=1):
            lines = [line.removeprefix(indent) for line in body.splitlines()]
            found[f"{page.relative_to(REPO)}#{number}"] = "\n".join(lines) + "\n"
    return found


BLOCKS = python_blocks()
Runner = Callable[[str, pytest.MonkeyPatch], None]
RUNNERS: dict[str, Runner] = {}


def runs(*keys: str) -> Callable[[Runner], Runner]:
    def register(runner: Runner) -> Runner:
        for key in keys:
            RUNNERS[key] = runner
        return runner

    return register


def execute(code: str, namespace: dict[str, Any], where: str) -> dict[str, Any]:
    exec(compile(code, where, "exec"), namespace)
    return namespace


# --- README: the construct in a team's own stack ---------------------------------------------------
@runs("README.md#1")
def run_the_construct_in_a_teams_stack(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "VoiceAgents", env=cdk.Environment(account="123456789012", region="eu-west-1"))
    cluster = ecs.Cluster.from_cluster_arn(
        stack, "Agents", "arn:aws:ecs:eu-west-1:123456789012:cluster/agents"
    )
    service = ecs.FargateService.from_fargate_service_attributes(
        stack, "AgentService", cluster=cluster, service_name="agents"
    )
    log_group = logs.LogGroup.from_log_group_name(stack, "AgentLogs", "/agents/prod")
    namespace = {"stack": stack, "cluster": cluster, "service": service, "log_group": log_group}
    execute(code, namespace, "README.md#1")
    template = assertions.Template.from_stack(stack)
    functions = template.find_resources("AWS::Lambda::Function")
    names = " ".join(str(resource["Properties"].get("FunctionName", "")) for resource in functions.values())
    for function in ("zombie-reaper", "worker-drainer", "tts-reach-alarm"):
        assert function in names, f"the README's construct example deploys no {function}: {names}"


@runs("docs/construct.md#1")
def run_the_consumer_app(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page shows examples/consumer_app/app.py written out: the same text, which the infra tests
    synthesize (tests/infra/test_consumer_app.py); here it is run up to the app it builds."""
    assert code == (REPO / "examples" / "consumer_app" / "app.py").read_text()
    namespace = execute(code, {"__name__": "consumer_app"}, "docs/construct.md#1")
    assert callable(namespace["build"])
    assert namespace["INSTANCES"] == {"calls": ("inbound", "outbound"), "tutor": ("agents",)}


@runs("docs/reference/api.md#1")
def run_the_api_references_import(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The names the API reference documents are the package's public ones, importable as shown."""
    from livekit_fleet_remediation.config import EnvironmentConfig
    from livekit_fleet_remediation.fleet_remediation import FleetRemediation
    from livekit_fleet_remediation.references import AgentServiceResources

    namespace = execute(code, {}, "docs/reference/api.md#1")
    assert namespace["FleetRemediation"] is FleetRemediation
    assert namespace["AgentServiceResources"] is AgentServiceResources
    assert namespace["EnvironmentConfig"] is EnvironmentConfig


# --- the agent side --------------------------------------------------------------------------------
@runs("docs/agent-cooperation.md#1", "docs/concepts/drainer.md#1")
def run_the_drain_aware_load(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from livekit_fleet_agent import DrainAwareLoad

    namespace = execute(code, {}, "load example")
    server = namespace["server"]
    load = server._load_fnc
    assert isinstance(load, DrainAwareLoad)
    # One of two jobs taken (outside ECS nothing marks the task draining): at least half loaded, by
    # the jobs or by the CPU the example's sampler measures on this machine.
    half_loaded = load(SimpleNamespace(active_jobs=[object()]))
    assert 0.5 <= half_loaded <= 1.0
    assert load.last_reason in {"jobs", "cpu"}
    assert server._load_threshold == pytest.approx(0.99)


class RecordingSession:
    """Stands in for ``AgentSession`` (which needs real STT, LLM and TTS plugins): records the events
    the emitter subscribes to and the agent the example starts."""

    def __init__(self, **components: Any) -> None:
        self.components = components
        self.subscribed: list[str] = []
        self.started: dict[str, Any] = {}
        self.current_speech = None

    def on(self, event: str, callback: Any = None) -> Any:
        self.subscribed.append(event)
        return callback

    def off(self, event: str, callback: Any) -> None:
        self.subscribed.remove(event)

    async def start(self, **options: Any) -> None:
        self.started = options


@runs("docs/agent-cooperation.md#2", "docs/concepts/detection.md#1")
def run_the_detection_signals_entrypoint(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import livekit.agents
    from livekit.agents import Agent

    sessions: list[RecordingSession] = []

    def session_factory(**components: Any) -> RecordingSession:
        sessions.append(RecordingSession(**components))
        return sessions[-1]

    monkeypatch.setattr(livekit.agents, "AgentSession", session_factory)
    namespace = execute(code, {"__name__": "docs_example"}, "entrypoint example")
    room = SimpleNamespace(name="room-1")
    asyncio.run(namespace["entrypoint"](SimpleNamespace(room=room)))
    (session,) = sessions
    assert session.subscribed, "emit_detection_signals subscribed to no session event"
    assert isinstance(session.started["agent"], Agent)
    assert session.started["room"] is room


@runs("docs/operations/drill.md#1")
def run_the_drill_wiring(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import livekit.agents
    from livekit.agents import Agent

    from livekit_fleet_agent.drill import DrillHook

    sessions: list[RecordingSession] = []

    def session_factory(**components: Any) -> RecordingSession:
        sessions.append(RecordingSession(**components))
        return sessions[-1]

    monkeypatch.delenv("ECS_CONTAINER_METADATA_URI_V4", raising=False)
    monkeypatch.setattr(livekit.agents, "AgentSession", session_factory)
    namespace = execute(code, {"__name__": "docs_example"}, "docs/operations/drill.md#1")
    assert isinstance(namespace["drills"], DrillHook)
    assert issubclass(namespace["Tutor"], Agent)
    asyncio.run(namespace["entrypoint"](SimpleNamespace(room=SimpleNamespace(name="room-1"))))
    (session,) = sessions
    assert isinstance(session.started["agent"], namespace["Tutor"])
    # Outside ECS no marker can be read: sessions close with their callers, as without the hook.
    assert session.started["room_options"].close_on_disconnect is True
    assert callable(namespace["main"])


# --- the door --------------------------------------------------------------------------------------
@runs("docs/event-door.md#1")
def run_the_door(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import UTC, datetime

    from fleet_remediation.contract.events import REAPER_EVENT_AGES
    from fleet_remediation.core.door import Door
    from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext
    from zombie_reaper.events import reaper_router

    namespace = execute(
        code,
        {
            "Door": Door,
            "context": LocalLambdaContext(),
            "deps": SimpleNamespace(clock=lambda: datetime.now(UTC)),
            "ages": REAPER_EVENT_AGES,
            "router": reaper_router("staging", ["agents"]),
            "event": {"dry_run": True, "max_age_seconds": 5400},
        },
        "docs/event-door.md#1",
    )
    assert namespace["routed"].manual is not None
    assert namespace["routed"].manual.dry_run is True


# --- extending: a new drainer step, a fourth function ----------------------------------------------
@runs("docs/adding-a-drainer-step.md#1")
def run_the_new_step_member(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from enum import StrEnum

    namespace = execute(code, {"StrEnum": StrEnum}, "docs/adding-a-drainer-step.md#1")
    assert namespace["Step"]("restart").name == "RESTART"


@runs("docs/adding-a-drainer-step.md#2")
def run_the_new_step_row(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from enum import StrEnum

    from fleet_remediation.contract import drainer_steps

    step = execute(BLOCKS["docs/adding-a-drainer-step.md#1"], {"StrEnum": StrEnum}, "step")["Step"]
    namespace = execute(code, {**vars(drainer_steps), "Step": step}, "docs/adding-a-drainer-step.md#2")
    row = namespace["STEP_TABLE"][-1]
    assert isinstance(row, drainer_steps.StepRow)
    assert row.step == "restart"
    assert set(row.task_actions) <= drainer_steps.ECS_WRITE_ACTIONS


def _census_from_docs(code: str, census: Any) -> Any:
    """The docs' spec, built from the fixture's stages (the same names the page uses)."""
    return execute(code, dict(vars(census)), "docs/extending.md#1")["CENSUS"]


def _invoke(handler: Callable[..., dict[str, Any]], census: Any) -> None:
    """A manual dry run through the shared handler: one report counting the rooms the census read."""
    from devkit.fakes.livekit import InMemoryRoomService, room
    from fleet_remediation.core.report_model import Mode
    from livekit_fleet_remediation.offline.fixed_mode import FixedModeSwitch
    from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext

    rooms = InMemoryRoomService([room("big", None, participants=census.CROWDED + 2), room("small", None)])
    settings = census.CensusSettings.model_validate(
        {
            "environment_name": "unit",
            "mode_parameter_name": "/livekit-fleet-remediation/unit/mode",
            "notification_topic_arn": "arn:aws:sns:eu-west-1:123456789012:t",
            "runbook_base_url": "https://runbooks.example.com/repo",
            "livekit_url": "http://127.0.0.1:7880",
            "livekit_secret_id": "unit/livekit",
        }
    )
    deps = census.CensusDependencies(settings, FixedModeSwitch(Mode.ENFORCE), lambda: rooms)
    report = handler({"dry_run": True}, LocalLambdaContext(), dependencies=deps)
    assert report["errors"] == [], report["errors"]
    assert report["summary"] == {"rooms": 2, "crowded": 1}
    assert [candidate["resource"] for candidate in report["candidates"]] == ["big"]


@runs("docs/extending.md#1")
def run_the_fourth_functions_spec(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from fleet_remediation.core.handler import lambda_handler_for

    census = _load_census(monkeypatch)
    pipeline = _census_from_docs(code, census)
    handler = lambda_handler_for("room_census", pipeline, census.CensusDependencies.from_environment)
    _invoke(handler, census)


@runs("docs/extending.md#2")
def run_the_fourth_functions_handler(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    census = _load_census(monkeypatch)
    namespace = dict(vars(census))
    namespace["CENSUS"] = _census_from_docs(BLOCKS["docs/extending.md#1"], census)
    handler = execute(code, namespace, "docs/extending.md#2")["lambda_handler"]
    _invoke(handler, census)


def _load_census(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(FOURTH_FUNCTION))
    for name in ("room_census.handler", "room_census"):
        sys.modules.pop(name, None)
    import room_census.handler

    return room_census.handler


def test_every_python_example_in_the_docs_has_a_runner() -> None:
    assert sorted(set(BLOCKS) - set(RUNNERS)) == [], "give each new example a runner in this file"
    assert sorted(set(RUNNERS) - set(BLOCKS)) == [], "a runner whose example is gone: remove it"


@pytest.mark.parametrize("key", sorted(set(BLOCKS) & set(RUNNERS)))
def test_the_example_runs_as_written(key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    RUNNERS[key](BLOCKS[key], monkeypatch)
