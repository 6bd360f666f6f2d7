"""Trust no event: suspect-worker events and manual payloads are checked before anything is read,
and every rejection is a typed error (pure; the clock is the door's ``now``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devkit.fakes.drainer_world import offline_settings
from fleet_remediation.contract.events import (
    DRAINER_EVENT_AGES,
    EVENT_CLOCK_SKEW_SECONDS,
    SUSPECT_EVENT_MAX_AGE_SECONDS,
    SuspectWorkerDetail,
)
from fleet_remediation.core.door import Door
from fleet_remediation.core.errors import InvalidEventError, RemediationError
from fleet_remediation.core.suspect_route import OtherServiceEventError, SuspectExpectations, check_suspect
from worker_drainer.adapters.ecs_model import EcsTask
from worker_drainer.events import route_drainer_event
from worker_drainer.read.target_checks import (
    ServiceIdentity,
    UntrustedEventError,
    check_manual_target,
    parse_task_reference,
    validate_suspect_running,
)

NOW = datetime(2026, 9, 15, 17, 45, tzinfo=UTC)
FUNCTION_ARN = "arn:aws:lambda:eu-west-1:123456789012:function:lkfr-prod-agents-worker-drainer"
DOOR = Door.for_invocation(FUNCTION_ARN, NOW, DRAINER_EVENT_AGES)
SKEW = timedelta(seconds=EVENT_CLOCK_SKEW_SECONDS)
# The oldest window end let in: the route's age, and the clock skew on top.
OLDEST_END = NOW - timedelta(seconds=SUSPECT_EVENT_MAX_AGE_SECONDS) - SKEW
SETTINGS = offline_settings("prod")
TASK = "0123456789abcdef0123456789abcdef"
ARN = f"arn:aws:ecs:eu-west-1:123456789012:task/agents/{TASK}"
EXPECT = SuspectExpectations(
    environment="prod",
    agent_service="agents",
    alarm_name="livekit-prod-agents-tts-reach",
    alpha=0.05,
    log_stream_for=lambda task_id: f"agent/agent-svc/{task_id}",
)


def detail(**changes: Any) -> SuspectWorkerDetail:
    values: dict[str, Any] = {
        "environment": "prod",
        "agent_service": "agents",
        "log_stream": f"agent/agent-svc/{TASK}",
        "task_id": TASK,
        "alarm_name": "livekit-prod-agents-tts-reach",
        "p_value": 0.00026,
        "window": {"start": NOW - timedelta(minutes=32), "end": NOW - timedelta(minutes=1)},
    }
    return SuspectWorkerDetail.model_validate(values | changes)


def test_our_fresh_event_passes() -> None:
    check_suspect(detail(), EXPECT, DOOR)


# Each case, and the words its refusal must say it with.
FORGED_OR_STALE: dict[str, tuple[dict[str, Any], str]] = {
    "another environment": ({"environment": "staging"}, "environment 'staging' is not ours ('prod')"),
    "any other alarm": (
        {"alarm_name": "livekit-prod-agents-vad-slow-inference"},
        "alarm 'livekit-prod-agents-vad-slow-inference' is not our TTS-reach alarm "
        "('livekit-prod-agents-tts-reach')",
    ),
    "an alarm of another environment": (
        {"alarm_name": "livekit-staging-agents-tts-reach"},
        "is not our TTS-reach",
    ),
    "p = 0.9": ({"p_value": 0.9}, "p=0.9 is not below alpha 0.05"),
    "p exactly alpha": ({"p_value": 0.05}, "p=0.05 is not below alpha 0.05"),
    "p = 1": ({"p_value": 1.0}, "p=1 is not below alpha"),
    "a 2020 window": (
        {"window": {"start": "2020-01-01T00:00:00Z", "end": "2020-01-01T00:30:00Z"}},
        "stale: its window's end 2020-01-01T00:30:00+00:00 is over 0:10:00 old",
    ),
    "a window just past the freshness limit": (
        {
            "window": {
                "start": NOW - timedelta(hours=1),
                "end": OLDEST_END - timedelta(seconds=1),
            }
        },
        "stale: ",
    ),
    "a window in the future": (
        {"window": {"start": NOW, "end": NOW + timedelta(minutes=5)}},
        "its window's end 2026-09-15T17:50:00+00:00 is in the future",
    ),
    "a window just past the clock skew allowed": (
        {"window": {"start": NOW, "end": NOW + SKEW + timedelta(seconds=1)}},
        "is in the future",
    ),
    "a reversed window": (
        {"window": {"start": NOW, "end": NOW - timedelta(minutes=5)}},
        "its window is not a time-zoned interval (start before end)",
    ),
    "an empty window": ({"window": {"start": NOW, "end": NOW}}, "not a time-zoned interval"),
    "a window without a time zone": (
        {"window": {"start": "2026-09-15T17:10:00", "end": "2026-09-15T17:44:00"}},
        "not a time-zoned interval",
    ),
    "another task's stream": (
        {"log_stream": "agent/agent-svc/ffffffffffffffffffffffffffffffff"},
        f"log stream 'agent/agent-svc/ffffffffffffffffffffffffffffffff' is not task {TASK}'s stream",
    ),
    "another container's stream": ({"log_stream": f"agent/other/{TASK}"}, "is not task"),
    "a stream with the id as a suffix": ({"log_stream": f"x-agent/agent-svc/{TASK}"}, "is not task"),
    "a task id that is not an ECS task id": (
        {"task_id": "not-a-task", "log_stream": "agent/agent-svc/not-a-task"},
        "task id 'not-a-task' is not an ECS task id",
    ),
    "an upper-case task id": (
        {"task_id": TASK.upper(), "log_stream": f"agent/agent-svc/{TASK.upper()}"},
        "is not an ECS task id",
    ),
}


@pytest.mark.parametrize(("changes", "why"), FORGED_OR_STALE.values(), ids=FORGED_OR_STALE.keys())
def test_a_forged_or_stale_suspect_event_is_refused_saying_why(changes: dict[str, Any], why: str) -> None:
    with pytest.raises(UntrustedEventError) as refused:
        check_suspect(detail(**changes), EXPECT, DOOR)
    assert refused.value.code == "UntrustedEvent"
    assert refused.value.resource == changes.get("task_id", TASK)
    assert refused.value.message.startswith("suspect-worker event refused: ")
    assert why in refused.value.message


def test_another_agent_services_suspect_is_refused_with_its_own_code_before_any_other_check() -> None:
    # Even an event that is otherwise another service's own (its alarm, a stale window) is refused
    # as another service's: the code says which mistake it is.
    foreign = detail(agent_service="outbound", alarm_name="livekit-prod-outbound-tts-reach", p_value=0.9)
    with pytest.raises(OtherServiceEventError) as refused:
        check_suspect(foreign, EXPECT, DOOR)
    assert refused.value.code == "OtherAgentService"
    assert refused.value.resource == TASK
    assert "names agent service 'outbound', this drainer serves 'agents'" in refused.value.message


def test_a_window_ending_exactly_at_either_freshness_limit_is_accepted() -> None:
    start = OLDEST_END - timedelta(minutes=30)
    check_suspect(detail(window={"start": start, "end": OLDEST_END}), EXPECT, DOOR)
    newest = NOW + SKEW
    check_suspect(detail(window={"start": NOW - timedelta(minutes=30), "end": newest}), EXPECT, DOOR)


def test_a_suspect_that_is_not_running_in_our_service_is_refused() -> None:
    other = EcsTask(ARN.replace(TASK, "f" * 32), "RUNNING", "RUNNING", "service:agent-svc")
    with pytest.raises(UntrustedEventError, match="not a RUNNING task of service agent-svc") as refused:
        validate_suspect_running(detail(), [other], "agent-svc")
    assert refused.value.resource == TASK


def _event(detail_values: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": "0",
        "id": "e",
        "detail-type": "LiveKit Suspect Worker",
        "source": "livekit.fleet-remediation",
        "account": "123456789012",
        "time": "2026-09-15T17:45:00Z",
        "region": "eu-west-1",
        "resources": [],
        "detail": detail_values,
    }


MALFORMED_DETAILS = {
    "missing task_id": {"task_id": None},
    "p below 0": {"p_value": -0.1},
    "p above 1": {"p_value": 1.5},
    "p as text": {"p_value": "small"},
    "a 1 MB stream name": {"log_stream": "a" * 1_000_000},
    "a 100-character task id": {"task_id": "a" * 100},
    "an extra field": {"injected": "yes"},
    "a window without an end": {"window": {"start": "2026-09-15T17:10:00Z"}},
}


@pytest.mark.parametrize("changes", MALFORMED_DETAILS.values(), ids=MALFORMED_DETAILS.keys())
def test_a_malformed_suspect_event_is_a_typed_error(changes: dict[str, Any]) -> None:
    values: dict[str, Any] = {
        "environment": "prod",
        "agent_service": "agents",
        "log_stream": f"agent/agent-svc/{TASK}",
        "task_id": TASK,
        "alarm_name": "livekit-prod-agents-tts-reach",
        "p_value": 0.001,
        "window": {"start": "2026-09-15T17:10:00Z", "end": "2026-09-15T17:44:00Z"},
    }
    values |= changes
    values = {k: v for k, v in values.items() if v is not None}
    with pytest.raises(InvalidEventError) as refused:
        route_drainer_event(_event(values), SETTINGS, DOOR)
    assert len(refused.value.message) < 2_000  # a 1 MB input is not echoed back


def test_task_ids_and_arns_parse() -> None:
    assert parse_task_reference(TASK).task_id == TASK
    uuid = "e1e77e91-cb36-49d5-b530-1d0fdd5d3a4f"
    assert parse_task_reference(uuid).task_id == uuid
    parsed = parse_task_reference(ARN)
    assert (parsed.task_id, parsed.account, parsed.region, parsed.cluster) == (
        TASK,
        "123456789012",
        "eu-west-1",
        "agents",
    )
    old = parse_task_reference(f"arn:aws:ecs:eu-west-1:123456789012:task/{uuid}")
    assert (old.task_id, old.cluster) == (uuid, None)


MALFORMED_MANUAL = {
    "task x/": {"action": "drain", "task": "x/", "dry_run": False},
    "task empty": {"action": "drain", "task": "", "dry_run": False},
    "task slash only": {"action": "drain", "task": "/", "dry_run": False},
    "task with a trailing slash": {"action": "drain", "task": f"{ARN}/", "dry_run": False},
    "task that is a cluster ARN": {
        "action": "drain",
        "task": "arn:aws:ecs:eu-west-1:123456789012:cluster/agents",
        "dry_run": False,
    },
    "task ARN of another service": {
        "action": "drain",
        "task": f"arn:aws:lambda:eu-west-1:123456789012:task/agents/{TASK}",
        "dry_run": False,
    },
    "task ARN with a short account": {
        "action": "drain",
        "task": f"arn:aws:ecs:eu-west-1:1234:task/agents/{TASK}",
        "dry_run": False,
    },
    "task id too short": {"action": "drain", "task": TASK[:-1], "dry_run": False},
    "task id with a quote": {"action": "drain", "task": TASK[:-1] + '"', "dry_run": False},
    "task 1 MB": {"action": "drain", "task": "a" * 1_000_000, "dry_run": False},
    "task as a number": {"action": "drain", "task": 12, "dry_run": False},
    "drain without task": {"action": "drain", "dry_run": False},
    "plan with a task": {"action": "plan", "task": TASK},
    "unknown action": {"action": "stop", "task": TASK},
    "dry_run 'false'": {"action": "drain", "task": TASK, "dry_run": "false"},
    "dry_run 'no'": {"action": "drain", "task": TASK, "dry_run": "no"},
    "dry_run 0": {"action": "drain", "task": TASK, "dry_run": 0},
    "dry_run 1": {"action": "drain", "task": TASK, "dry_run": 1},
    "dry_run 'true'": {"action": "drain", "task": TASK, "dry_run": "true"},
    "dry_run null": {"action": "drain", "task": TASK, "dry_run": None},
    "an unknown option": {"action": "plan", "force": True},
}


@pytest.mark.parametrize("event", MALFORMED_MANUAL.values(), ids=MALFORMED_MANUAL.keys())
def test_a_malformed_manual_payload_is_a_typed_error(event: dict[str, Any]) -> None:
    with pytest.raises(InvalidEventError) as refused:
        route_drainer_event(event, SETTINGS, DOOR)
    assert isinstance(refused.value, RemediationError)
    assert len(refused.value.message) < 2_000


OURS = ServiceIdentity.of(
    "agents", "arn:aws:lambda:eu-west-1:123456789012:function:lkfr-prod-agents-worker-drainer"
)
RUNNING = [EcsTask(ARN, "RUNNING", "RUNNING", "service:agent-svc")]
FOREIGN_ARNS = {
    "another account": ARN.replace("123456789012", "999999999999"),
    "another region": ARN.replace("eu-west-1", "us-east-1"),
    "another cluster": ARN.replace("/agents/", "/other/"),
    "the old format for a new-format task": f"arn:aws:ecs:eu-west-1:123456789012:task/{TASK}",
    "another partition": ARN.replace("arn:aws:", "arn:aws-cn:"),
}


@pytest.mark.parametrize("arn", FOREIGN_ARNS.values(), ids=FOREIGN_ARNS.keys())
def test_a_task_arn_that_is_not_ours_is_refused_even_when_its_id_is(arn: str) -> None:
    with pytest.raises(UntrustedEventError, match="is not ours") as refused:
        check_manual_target(parse_task_reference(arn), OURS, RUNNING)
    assert refused.value.resource == TASK


def test_our_own_arn_and_a_bare_id_pass() -> None:
    check_manual_target(parse_task_reference(ARN), OURS, RUNNING)
    check_manual_target(parse_task_reference(TASK), OURS, RUNNING)
    # Outside Lambda the account and region are unknown: the cluster and the exact ARN still count.
    local = ServiceIdentity.of("agents", None)
    check_manual_target(parse_task_reference(ARN), local, RUNNING)
    with pytest.raises(UntrustedEventError):
        check_manual_target(parse_task_reference(ARN.replace("/agents/", "/other/")), local, [])


def test_a_reference_that_is_neither_an_id_nor_an_arn_says_so() -> None:
    with pytest.raises(ValueError, match="'x/' is neither an ECS task id nor an ECS task ARN"):
        parse_task_reference("x/")


def test_our_account_and_region_come_from_the_functions_own_arn() -> None:
    built = ServiceIdentity.of(
        "agents", "arn:aws:lambda:eu-west-1:123456789012:function:lkfr-prod-agents-worker-drainer"
    )
    assert built == ServiceIdentity("agents", "123456789012", "eu-west-1")
    assert ServiceIdentity.of("agents", None) == ServiceIdentity("agents")
    assert ServiceIdentity.of("agents", "local-function") == ServiceIdentity("agents")
    # A task not (or no longer) running is still refused when its ARN names another account.
    foreign = parse_task_reference(ARN.replace("123456789012", "999999999999"))
    with pytest.raises(UntrustedEventError, match="account '999999999999' \\(ours: '123456789012'\\)"):
        check_manual_target(foreign, OURS, [])


def test_a_long_reference_is_quoted_to_its_first_120_characters() -> None:
    raw = "x/" + "y" * 200
    with pytest.raises(ValueError, match="is neither an ECS task id nor an ECS task ARN") as refused:
        parse_task_reference(raw)
    assert str(refused.value) == f"{raw[:120]!r} is neither an ECS task id nor an ECS task ARN"


def test_every_part_of_a_foreign_arn_that_differs_is_named() -> None:
    foreign = ARN.replace("123456789012", "999999999999").replace("eu-west-1", "us-east-1")
    with pytest.raises(UntrustedEventError) as refused:
        check_manual_target(parse_task_reference(foreign), OURS, RUNNING)
    assert refused.value.message == (
        f"task {foreign} is not ours: account '999999999999' (ours: '123456789012'); "
        "region 'us-east-1' (ours: 'eu-west-1')"
    )
