"""The deploy artifact, run as Lambda runs it.

The staging stack is synthesized offline as a team's standalone app does it from the installed wheel
(`python -m livekit_fleet_remediation.standalone` in a fresh venv outside the checkout's path), so the
code and layers are the wheel's own (tests/packaging/test_wheels.py: file for file the checkout's);
each function's code asset,
its layers (in the template's order), its handler string and its environment come from that
template. Each function runs under AWS's Lambda Runtime Interface Emulator with `awslambdaric` and
is invoked over the Invoke API on 127.0.0.1 with a manual dry run, a schedule event and an alarm
state change. AWS is moto in server mode on loopback (resources created from the template's own
properties), LiveKit is the real local livekit-server holding two rooms of ours.

Every module ships CPython 3.13 bytecode, hash-based (asserted), so Lambda's python3.13 compiles
nothing at a cold start. What differs from Lambda, and only this: the dependency layer is rebuilt for
this machine's Python
(asserted below to hold the same distributions at the same versions as the synthesized one), the
template's LiveKit URL and its references to stack resources point at the local stand-ins, AWS
credentials are fake, the X-Ray daemon address is a local UDP socket this test owns, and the
interpreter turns deprecation warnings into errors (stricter than Lambda: an API deprecated on this
Python, which later ones remove, fails the invoke instead of warning).

Deliberately broken variants of the reaper show that the checks can fail: one whose handler imports
development-only code, one whose environment lacks a variable the template must set, and one whose
import hangs (the invoke's deadline ends the wait, and the processes are stopped).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import shutil
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from livekit import api

from devkit.aws_standins import AwsStandIns, loopback_aws
from devkit.installed import InstalledEnvironment
from devkit.lambda_artifact import EXAMPLE_CONFIG, CloudAssembly, FunctionArtifact, synthesize
from devkit.lambda_emulator import (
    LOCAL_DEPS_LAYER,
    RIE_FUNCTION_ACCOUNT,
    RIE_FUNCTION_REGION,
    EmulatedFunction,
    EmulatorError,
    Invocation,
    dependency_layer_id,
    emulated_from_template,
    python_version,
    runtime_python,
)
from devkit.livekit_clients import create_rooms, room_names
from devkit.livekit_local import LocalLiveKit
from fleet_remediation.contract.naming import mode_parameter_name
from fleet_remediation.contract.policies import MIN_MANUAL_MAX_AGE_SECONDS
from livekit_fleet_remediation.config import load_config_file
from livekit_fleet_remediation.offline.eventbridge_events import alarm_state_change, schedule_event
from tests.lambda_smoke.conftest import SMOKE_ROWS, SMOKE_TITLE

pytestmark = pytest.mark.livekit

ENV_NAME = "staging"
# A smoke invoke takes seconds; far below the functions' own 60 s timeout, so a hang fails fast.
INVOKE_TIMEOUT_SECONDS = 20.0
RIE_START_TIMEOUT_SECONDS = 10.0
HANG_TIMEOUT_SECONDS = 2.0
PYTHON_OPTIONS = ("-W", "error::DeprecationWarning", "-W", "error::PendingDeprecationWarning")
DEV_ONLY_FOLDERS = frozenset({"tests", "devkit", "tools", "bench"})
# CPython 3.13's bytecode magic number (importlib.util.MAGIC_NUMBER), and a hash-based bytecode file's
# flags (PEP 552): our code's is checked against its source, the dependencies' is not.
PYTHON_313_MAGIC = (3571).to_bytes(2, "little") + b"\r\n"
CHECKED_HASH, UNCHECKED_HASH = 0b11, 0b01
FUNCTIONS = ("zombie_reaper", "worker_drainer", "tts_reach_alarm")
# The functions that call LiveKit: the template must give them LIVEKIT_URL (replaced by the local server).
LIVEKIT_FUNCTIONS = frozenset({"zombie_reaper", "worker_drainer"})
MANUAL_PAYLOADS: dict[str, dict[str, Any]] = {
    "zombie_reaper": {"dry_run": True},
    "worker_drainer": {"dry_run": True, "action": "plan"},
    "tts_reach_alarm": {"dry_run": True},
}
# A dry run with a max age our just-created rooms exceed (the lowest a manual run may ask for; the run
# waits until the rooms are that old): the reaper says it would delete them.
STRICTER_MAX_AGE_SECONDS = MIN_MANUAL_MAX_AGE_SECONDS
# The alarm whose state changes each function handles (the template's EventBridge rules must agree).
HANDLED_ALARMS = {
    "zombie_reaper": f"livekit-{ENV_NAME}-agents-vad-slow-inference",
    "worker_drainer": f"livekit-{ENV_NAME}-agents-vad-slow-inference",
    "tts_reach_alarm": f"livekit-{ENV_NAME}-agents-tts-reach",
}


@dataclass(frozen=True)
class Expected:
    status: str
    mode: str | None
    trigger: str | None
    error_codes: tuple[str, ...] = ()


# Staging's kill switch starts in dry-run (asserted from the template), so nothing here changes anything.
# The responder's schedule is its re-check tick: the page (a composite alarm, which moto does not hold)
# is not in ALARM, so there is no open incident to re-check.
EXPECTED = {
    **{
        (f, kind): Expected("ok", "dry-run", kind)
        for f in FUNCTIONS
        for kind in ("manual", "schedule", "alarm")
    },
    ("zombie_reaper", "manual, stricter max age"): Expected("ok", "dry-run", "manual"),
}


@dataclass
class Outcome:
    function: str
    kind: str
    invocation: Invocation
    log_path: Path

    @property
    def report(self) -> dict[str, Any]:
        body = self.invocation.body
        assert isinstance(body, dict), f"not a report: {body!r}"
        return body

    def context(self) -> str:
        log = self.log_path.read_text(errors="replace")[-3000:]
        return f"{self.function}/{self.kind}: {self.invocation.body!r}\n--- log ---\n{log}"


@dataclass
class SmokeRun:
    functions: dict[str, FunctionArtifact]
    dependency_layer: Path
    outcomes: dict[tuple[str, str], Outcome]
    broken: dict[str, Outcome | EmulatorError]
    rooms: list[str]
    rooms_after: set[str]


def cdk_environment() -> dict[str, Any]:
    environments = json.loads(EXAMPLE_CONFIG.read_text())["environments"]
    environment: dict[str, Any] = environments[ENV_NAME]
    return environment


def events_for(
    assembly: CloudAssembly, function: FunctionArtifact, account: str, region: str
) -> dict[str, Any]:
    rules = assembly.schedule_rules(function)
    rule_name = f"{assembly.stack_name}-{next(iter(rules), 'UnroutedSchedule')}"
    alarms = assembly.alarm_names(function)
    assert alarms == [HANDLED_ALARMS[function.package]], f"{function.function_name} is routed {alarms}"
    events = {
        "manual": MANUAL_PAYLOADS[function.package],
        "schedule": schedule_event(rule_name, account=account, region=region),
        "alarm": alarm_state_change(alarms[0], account=account, region=region),
    }
    if function.package == "zombie_reaper":
        events["manual, stricter max age"] = {"dry_run": True, "max_age_seconds": STRICTER_MAX_AGE_SECONDS}
    return events


async def delete_rooms(server: LocalLiveKit, names: list[str]) -> None:
    async with api.LiveKitAPI(server.http_url, server.api_key, server.api_secret) as lk:
        for name in names:
            await lk.room.delete_room(api.DeleteRoomRequest(room=name))


def _row(outcome: Outcome) -> tuple[str, ...]:
    invocation = outcome.invocation
    body = invocation.body if isinstance(invocation.body, dict) else {}
    trigger = body.get("trigger") or {}
    errors = ",".join(e.get("code", "?") for e in body.get("errors", [])) or invocation.function_error or "-"
    return (
        outcome.function,
        outcome.kind,
        str(invocation.status_code),
        str(body.get("status", "-")),
        str(body.get("mode") or "-"),
        str(trigger.get("kind", "-")),
        errors,
        f"{invocation.seconds:.2f}",
        f"{invocation.init_ms:.0f}" if invocation.init_ms is not None else "",
    )


def _with_appended_code(function: FunctionArtifact, code_dir: Path, code: str) -> FunctionArtifact:
    """A copy of the function whose handler module ends with ``code``, as a slip would add it."""
    shutil.copytree(function.code_dir, code_dir)
    handler = code_dir / function.package / "handler.py"
    handler.write_text(handler.read_text() + "\n" + code)
    return dataclasses.replace(function, code_dir=code_dir)


def _without_variable(function: FunctionArtifact, name: str) -> FunctionArtifact:
    environment = {key: value for key, value in function.environment.items() if key != name}
    return dataclasses.replace(function, environment=environment)


@pytest.fixture(scope="module")
def smoke(
    livekit_server: LocalLiveKit,
    remediation_installed: InstalledEnvironment,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> SmokeRun:
    workdir = tmp_path_factory.mktemp("lambda-smoke")
    assembly = synthesize(ENV_NAME, workdir / "cdk.out", installed=remediation_installed)
    functions = {function.package: function for function in assembly.functions()}
    assert sorted(functions) == sorted(FUNCTIONS)
    config = cdk_environment()
    region = config["region"]
    switches = {
        p["Properties"]["Name"]: p["Properties"]["Value"]
        for p in assembly.resources_of_type("AWS::SSM::Parameter").values()
    }
    assert switches.pop(mode_parameter_name(ENV_NAME)) == "dry-run", "staging must start in dry-run"
    # Each function's own switch starts at enforce: the environment's switch governs.
    assert set(switches.values()) == {"enforce"}
    (deps_id,) = {dependency_layer_id(function) for function in functions.values()}
    reaper = functions["zombie_reaper"]
    deps_layer = next(layer.path for layer in reaper.layers if layer.logical_id == deps_id)

    rooms = [f"lesson-smoke-{uuid.uuid4().hex[:8]}", f"test-smoke-{uuid.uuid4().hex[:8]}"]
    with contextlib.ExitStack() as stack:
        endpoint, xray_address = stack.enter_context(loopback_aws())
        standins = AwsStandIns(endpoint_url=endpoint, region=region)
        standins.create_referenced(assembly, list(functions.values()))
        standins.create_parameters(assembly)
        drainer_env = functions["worker_drainer"].environment
        standins.create_secret(
            drainer_env["LIVEKIT_SECRET_ID"],
            {"api_key": livekit_server.api_key, "api_secret": livekit_server.api_secret},
        )
        standins.create_log_group(drainer_env["AGENT_LOG_GROUP"])
        standins.create_ecs_service(drainer_env["ECS_CLUSTER"], drainer_env["ECS_SERVICE"])
        asyncio.run(create_rooms(livekit_server, rooms))
        rooms_created = time.monotonic()
        stack.callback(lambda: asyncio.run(delete_rooms(livekit_server, rooms)))

        def emulate(name: str, function: FunctionArtifact) -> EmulatedFunction:
            endpoints = (
                {"LIVEKIT_URL": livekit_server.http_url} if function.package in LIVEKIT_FUNCTIONS else {}
            )
            emulated = emulated_from_template(
                function,
                standins.resolve(function, endpoints),
                workdir,
                name,
                region=region,
                xray_daemon_address=xray_address,
                aws_endpoint_url=standins.endpoint_url,
                python_options=PYTHON_OPTIONS,
            )
            stack.callback(emulated.stop)
            return emulated.start(RIE_START_TIMEOUT_SECONDS)

        emulated = {name: emulate(name, function) for name, function in functions.items()}
        broken_variants = {
            "handler imports devkit.livekit_local": _with_appended_code(
                reaper, workdir / "broken-dev-import", "import devkit.livekit_local\n"
            ),
            "handler import hangs": _with_appended_code(
                reaper, workdir / "broken-hang", "import time\n\ntime.sleep(3600)\n"
            ),
            "template without REAPER": _without_variable(reaper, "REAPER"),
        }
        broken_emulated = {
            label: emulate(f"broken-{i}", variant)
            for i, (label, variant) in enumerate(broken_variants.items())
        }

        def run_cases(name: str) -> dict[tuple[str, str], Outcome]:
            outcomes = {}
            # The events come from the account and region the RIE puts in the function's own ARN.
            own = (RIE_FUNCTION_ACCOUNT, RIE_FUNCTION_REGION)
            for kind, payload in events_for(assembly, functions[name], *own).items():
                if kind == "manual, stricter max age":
                    time.sleep(max(0.0, rooms_created + STRICTER_MAX_AGE_SECONDS + 0.5 - time.monotonic()))
                invocation = emulated[name].invoke(payload, timeout=INVOKE_TIMEOUT_SECONDS)
                outcomes[(name, kind)] = Outcome(name, kind, invocation, emulated[name].log_path)
            return outcomes

        def run_broken(label: str) -> Outcome | EmulatorError:
            timeout = HANG_TIMEOUT_SECONDS if label == "handler import hangs" else INVOKE_TIMEOUT_SECONDS
            try:
                invocation = broken_emulated[label].invoke({"dry_run": True}, timeout=timeout)
            except EmulatorError as exc:
                return exc
            return Outcome("zombie_reaper", label, invocation, broken_emulated[label].log_path)

        # Cold starts overlap; each function's own invokes stay in order.
        with ThreadPoolExecutor(max_workers=len(functions) + len(broken_emulated)) as pool:
            per_function = [pool.submit(run_cases, name) for name in functions]
            broken_futures = {label: pool.submit(run_broken, label) for label in broken_emulated}
            outcomes = {key: value for future in per_function for key, value in future.result().items()}
            broken = {label: future.result() for label, future in broken_futures.items()}
        rooms_after = asyncio.run(room_names(livekit_server))
    runtimes = ", ".join(sorted({f.runtime for f in functions.values()}))
    request.config.stash[SMOKE_TITLE] = (
        f"deploy artifact ({runtimes}) under the Lambda runtime emulator, "
        f"on CPython {python_version(runtime_python())}"
    )
    rows = request.config.stash.setdefault(SMOKE_ROWS, [])
    in_order = sorted(outcomes.values(), key=lambda outcome: FUNCTIONS.index(outcome.function))
    rows.extend(_row(outcome) for outcome in in_order)
    return SmokeRun(functions, deps_layer, outcomes, broken, rooms, rooms_after)


@pytest.mark.parametrize(("function", "kind"), list(EXPECTED))
def test_each_invocation_returns_its_one_report(smoke: SmokeRun, function: str, kind: str) -> None:
    outcome = smoke.outcomes[(function, kind)]
    invocation = outcome.invocation
    assert invocation.status_code == 200, outcome.context()
    assert invocation.function_error is None, outcome.context()
    report = outcome.report
    expected = EXPECTED[(function, kind)]
    codes = tuple(error["code"] for error in report["errors"])
    assert report["function"] == function, outcome.context()
    assert report["environment"] == ENV_NAME, outcome.context()
    # The request id given to the Invoke API is the context's aws_request_id the handler saw.
    assert report["invocation_id"] == invocation.request_id, outcome.context()
    assert "InternalError" not in codes, outcome.context()
    assert codes == expected.error_codes, outcome.context()
    assert report["status"] == expected.status, outcome.context()
    assert report["mode"] == expected.mode, outcome.context()
    assert (report["trigger"] or {}).get("kind") == expected.trigger, outcome.context()


def test_the_reaper_reads_the_live_rooms_with_the_templates_policy(smoke: SmokeRun) -> None:
    policy = json.loads(smoke.functions["zombie_reaper"].environment["REAPER"])["policy"]
    test_rule = next(rule for rule in policy["rules"] if rule["name_pattern"] == "^test-.*$")
    max_ages = {
        smoke.rooms[0]: policy["max_age_minutes"] * 60,
        smoke.rooms[1]: test_rule["max_age_minutes"] * 60,
    }
    for kind in ("manual", "schedule", "alarm"):
        listed = {c["resource"]: c for c in smoke.outcomes[("zombie_reaper", kind)].report["candidates"]}
        for room, max_age in max_ages.items():
            assert listed[room]["decision"] == "skip", listed[room]
            assert listed[room]["reason"].startswith("under-age:"), listed[room]
            assert listed[room]["facts"]["max_age_seconds"] == max_age, listed[room]
            assert listed[room]["facts"]["sid"].startswith("RM_"), listed[room]


def test_a_stricter_dry_run_would_reap_the_rooms_and_changes_nothing(smoke: SmokeRun) -> None:
    report = smoke.outcomes[("zombie_reaper", "manual, stricter max age")].report
    listed = {c["resource"]: c for c in report["candidates"]}
    for room in smoke.rooms:
        assert listed[room]["decision"] == "would-act", listed[room]
    assert report["actions"] == []
    assert set(smoke.rooms) <= smoke.rooms_after


def test_tracing_is_active_as_the_template_sets_it(smoke: SmokeRun) -> None:
    """TracingConfig Active: the X-Ray SDK records the handler and its boto3 calls. The RIE passes no
    trace header to the runtime (its tracer is a no-op), so the SDK discards them as it does on
    Lambda before a trace id exists, and says so in the log."""
    assert {f.tracing_mode for f in smoke.functions.values()} == {"Active"}
    for name in FUNCTIONS:
        log = smoke.outcomes[(name, "manual")].log_path.read_text(errors="replace")
        assert "Subsegment ## lambda_handler discarded" in log, name
        assert "Subsegment ssm discarded" in log, name


def test_a_handler_that_imports_development_code_fails_to_start(smoke: SmokeRun) -> None:
    outcome = smoke.broken["handler imports devkit.livekit_local"]
    assert isinstance(outcome, Outcome), outcome
    assert outcome.invocation.function_error == "Runtime.ImportModuleError", outcome.context()
    assert "No module named 'devkit'" in outcome.invocation.body["errorMessage"], outcome.context()


def test_a_variable_missing_from_the_template_fails_the_report(smoke: SmokeRun) -> None:
    outcome = smoke.broken["template without REAPER"]
    assert isinstance(outcome, Outcome), outcome
    report = outcome.report
    assert report["status"] == "failed", outcome.context()
    assert [e["code"] for e in report["errors"]] == ["ConfigurationError"], outcome.context()
    assert "REAPER" in report["errors"][0]["message"], outcome.context()


def test_a_hanging_function_ends_at_the_invoke_deadline(smoke: SmokeRun) -> None:
    error = smoke.broken["handler import hangs"]
    assert isinstance(error, EmulatorError), error
    assert f"no answer within {HANG_TIMEOUT_SECONDS}s" in str(error)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_each_function_asset_holds_only_its_own_runtime_code(smoke: SmokeRun, function: str) -> None:
    artifact = smoke.functions[function]
    assert sorted(p.name for p in artifact.code_dir.iterdir()) == [function]
    assert _dev_only_paths(artifact.code_dir) == []
    assert _bytecode_flags(artifact.code_dir) == {CHECKED_HASH}


def test_the_shared_layer_holds_only_runtime_code(smoke: SmokeRun) -> None:
    artifact = smoke.functions["zombie_reaper"]
    deps_id = dependency_layer_id(artifact)
    shared = [layer.path for layer in artifact.layers if layer.logical_id != deps_id]
    assert len(shared) == 1
    assert sorted(p.name for p in shared[0].iterdir()) == ["python"]
    assert sorted(p.name for p in (shared[0] / "python").iterdir()) == ["fleet_remediation"]
    assert _dev_only_paths(shared[0]) == []
    assert _bytecode_flags(shared[0]) == {CHECKED_HASH}


def test_the_local_dependency_layer_matches_the_synthesized_one(smoke: SmokeRun) -> None:
    """Same distributions at the same versions; the synthesized one is built for Lambda's Python on
    the functions' architecture (the emulator runs the local, x86_64 one: it cannot run arm64)."""
    synthesized = smoke.dependency_layer / "python"
    assert _distributions(synthesized) == _distributions(LOCAL_DEPS_LAYER / "python")
    # boto3 and botocore come with the Lambda runtime (and the local runtime), never in the layer.
    assert not {name.split("-")[0] for name in _distributions(synthesized)} & {"boto3", "botocore"}
    assert {f.runtime for f in smoke.functions.values()} == {"python3.13"}
    extensions = list(synthesized.rglob("*.so"))
    assert any("pydantic_core" in str(p) for p in extensions), "pydantic-core's extension is missing"
    architecture = load_config_file(EXAMPLE_CONFIG, ENV_NAME).lambda_architecture
    machine = {"arm64": "aarch64", "x86_64": "x86_64"}[architecture]
    wrong = [
        p.name
        for p in extensions
        if f".cpython-313-{machine}-linux-gnu." not in p.name and ".abi3." not in p.name
    ]
    assert wrong == [], f"extension modules not built for CPython 3.13 {machine}: {wrong}"
    assert _bytecode_flags(synthesized) == {UNCHECKED_HASH}


def _distributions(folder: Path) -> set[str]:
    return {p.name.removesuffix(".dist-info").lower() for p in folder.glob("*.dist-info")}


def _dev_only_paths(root: Path) -> list[str]:
    """Development folders, and bytecode that is not the Lambda runtime's (another Python's, or a
    file outside ``__pycache__``, which Python would import without its source)."""
    found = []
    for path, dirs, files in os.walk(root):
        found += [os.path.join(path, d) for d in dirs if d in DEV_ONLY_FOLDERS]
        runtime = Path(path).name == "__pycache__"
        found += [
            os.path.join(path, f)
            for f in files
            if f.endswith(".pyc") and not (runtime and f.endswith(".cpython-313.pyc"))
        ]
    return found


def _bytecode_flags(root: Path) -> set[int]:
    """Every module under ``root`` ships CPython 3.13 bytecode beside it: the set of their
    hash-based flags (a timestamp-based file, whose mtime Lambda's copy cannot match, would be 0)."""
    modules = sorted(root.rglob("*.py"))
    assert modules, f"no module under {root}"
    flags = set()
    for module in modules:
        compiled = module.parent / "__pycache__" / f"{module.stem}.cpython-313.pyc"
        assert compiled.is_file(), f"{module} ships without its bytecode"
        header = compiled.read_bytes()[:8]
        assert header[:4] == PYTHON_313_MAGIC, f"{compiled} is not CPython 3.13 bytecode"
        flags.add(int.from_bytes(header[4:8], "little"))
    return flags
