"""The drill's rules in the units that own them (``domain.drill_steps``, ``adapters.drill_marker``):
each refusal, the choice of the one task, the answer read from the record, the verdict and the
drill's action events."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from fleet_remediation.adapters.drill_marker import (
    put_marker,
    read_drilled_mode,
    remove_marker,
    running_tasks,
)
from fleet_remediation.contract.action_events import ActionEvent, event_id
from fleet_remediation.contract.disruption_window import DisruptionWindow
from fleet_remediation.contract.drills import DRILL_TAG, DrillFault, DrillMarker
from fleet_remediation.contract.naming import (
    EXCLUDE_TAG,
    FunctionName,
    mode_parameter_name,
    service_mode_parameter_name,
)
from fleet_remediation.core.announce import Announced
from fleet_remediation.core.audit_timeline import ACTED, WOULD_ACT, Entry
from fleet_remediation.core.errors import AwsApiError
from fleet_remediation.domain.drill_steps import (
    DRAINER_STATE_TAG,
    DrillRefusedError,
    DrillRun,
    DrillTarget,
    answer_of,
    check_allowed,
    choose_task,
    drill_event,
    drilled_mode,
    told,
)

NOW = datetime(2026, 9, 15, 10, 0, tzinfo=UTC)
CLUSTER = "agents"
ARN = "arn:aws:ecs:eu-west-1:123456789012:task/agents"
DRAINER, REAPER = FunctionName.WORKER_DRAINER.value, FunctionName.ZOMBIE_REAPER.value


def task(task_id: str, started: str = "2026-09-15T08:00:00Z", **tags: str) -> dict[str, Any]:
    return {
        "taskArn": f"{ARN}/{task_id}",
        "startedAt": started,
        "tags": [{"key": key, "value": value} for key, value in tags.items()],
    }


def refusal(call: Any, *args: Any) -> DrillRefusedError:
    with pytest.raises(DrillRefusedError) as refused:
        call(*args)
    return refused.value


# The environment named for drills, and the disruption window.


def test_an_environment_not_named_for_drills_is_refused_whatever_the_window() -> None:
    refused = refusal(check_allowed, False, "staging", None, NOW)
    assert refused.code == "DrillNotAllowed"
    assert "environment staging is not named for drills" in refused.message


def test_without_a_window_a_drill_may_start_any_time() -> None:
    check_allowed(True, "staging", None, NOW)


def test_a_drill_starts_inside_the_window_and_is_held_outside_it() -> None:
    window = DisruptionWindow(start=time(9, 0), end=time(11, 0))
    check_allowed(True, "staging", window, NOW)
    refused = refusal(check_allowed, True, "staging", window, NOW + timedelta(hours=2))
    assert refused.code == "DrillHeld"
    assert "outside the disruption window" in refused.message


# The drilled service's switches: none read is unknown, off is a refusal.


def test_a_drilled_service_with_no_switch_read_is_unknown_not_enforced() -> None:
    refused = refusal(drilled_mode, [], "staging", "agents", "/lkfr/staging/mode")
    assert refused.code == "ModeUnknown"
    assert "/lkfr/staging/mode" in refused.message


@pytest.mark.parametrize(
    ("values", "mode"),
    [
        (["enforce"], "enforce"),
        (["enforce", "enforce"], "enforce"),
        (["dry-run", "enforce"], "dry-run"),
        (["enforce", "dry-run"], "dry-run"),
    ],
)
def test_the_drilled_mode_is_the_strictest_of_its_switches(values: list[str], mode: str) -> None:
    assert drilled_mode(values, "staging", "agents", "switch") == mode


@pytest.mark.parametrize("values", [["off"], ["enforce", "off"], ["off", "dry-run"]])
def test_either_switch_off_refuses_the_drill(values: list[str]) -> None:
    refused = refusal(drilled_mode, values, "staging", "agents", "switch")
    assert refused.code == "DrillNotAllowed"
    assert "staging/agents" in refused.message


# The one task.


def test_the_longest_running_task_is_drilled() -> None:
    tasks = [task("b", "2026-09-15T09:00:00Z"), task("a", "2026-09-15T07:00:00Z"), task("c")]
    assert choose_task(tasks, None, "agents") == f"{ARN}/a"


def test_tasks_started_together_are_chosen_by_their_arn() -> None:
    tasks = [task("b"), task("a")]
    assert choose_task(tasks, None, "agents") == f"{ARN}/a"


@pytest.mark.parametrize(
    "tags",
    [{EXCLUDE_TAG: "true"}, {EXCLUDE_TAG: "TRUE"}, {DRAINER_STATE_TAG: "cordoned"}],
    ids=["excluded", "excluded-upper-case", "marked-by-the-drainer"],
)
def test_a_task_excluded_or_marked_by_the_drainer_is_passed_over(tags: dict[str, str]) -> None:
    tasks = [task("a", "2026-09-15T07:00:00Z", **tags), task("b")]
    assert choose_task(tasks, None, "agents") == f"{ARN}/b"


@pytest.mark.parametrize("tags", [{EXCLUDE_TAG: "false"}, {DRAINER_STATE_TAG: ""}, {"team": "voice"}])
def test_an_exclude_not_true_or_an_empty_drainer_state_leaves_the_task_drillable(
    tags: dict[str, str],
) -> None:
    tasks = [task("a", "2026-09-15T07:00:00Z", **tags), task("b")]
    assert choose_task(tasks, None, "agents") == f"{ARN}/a"


def test_a_tag_without_a_value_reads_as_empty() -> None:
    described = task("a")
    described["tags"] = [{"key": DRAINER_STATE_TAG}]
    assert choose_task([described], None, "agents") == f"{ARN}/a"


def test_no_task_a_drill_may_touch_is_refused_naming_the_service() -> None:
    tasks = [task("a", **{EXCLUDE_TAG: "true"}), task("b", **{DRAINER_STATE_TAG: "cordoned"})]
    refused = refusal(choose_task, tasks, None, "agents")
    assert (refused.code, refused.message) == (
        "NoTaskToDrill",
        "service agents has no running task a drill may touch",
    )
    assert refusal(choose_task, [], None, "agents").code == "NoTaskToDrill"


@pytest.mark.parametrize("wanted", [None, "b"])
def test_a_task_already_carrying_a_marker_refuses_a_second_drill(wanted: str | None) -> None:
    tasks = [task("a", **{DRILL_TAG: "tts-silence:1:drill-1"}), task("b")]
    refused = refusal(choose_task, tasks, wanted, "agents")
    assert refused.code == "DrillRunning"
    assert f"{ARN}/a" in refused.message


@pytest.mark.parametrize("wanted", ["b", f"{ARN}/b"], ids=["id", "arn"])
def test_the_wanted_task_is_drilled_by_its_id_or_its_arn(wanted: str) -> None:
    tasks = [task("a", "2026-09-15T07:00:00Z"), task("b")]
    assert choose_task(tasks, wanted, "agents") == f"{ARN}/b"


def test_a_wanted_id_matches_the_arns_last_segment_only() -> None:
    tasks = [task("ab")]
    refused = refusal(choose_task, tasks, "b", "agents")
    assert (refused.code, refused.message) == ("UnknownTask", "b is not a running task of service agents")


@pytest.mark.parametrize(
    ("tags", "said"),
    [
        ({EXCLUDE_TAG: "true"}, "task b is excluded (livekit-drainer:exclude=true)"),
        ({DRAINER_STATE_TAG: "cordoned"}, "task b is already marked by the drainer (cordoned)"),
    ],
)
def test_a_wanted_task_that_may_not_be_drilled_is_refused_not_swapped(
    tags: dict[str, str], said: str
) -> None:
    tasks = [task("a"), task("b", **tags)]
    refused = refusal(choose_task, tasks, "b", "agents")
    assert (refused.code, refused.message) == ("TaskNotDrillable", said)


def test_a_target_names_its_task_by_the_arns_last_segment() -> None:
    assert DrillTarget(CLUSTER, f"{ARN}/0123abcd").task_id == "0123abcd"


# The answer in the record.


def entry(
    minutes: float, action: str = "cordon", kind: str = ACTED, target: str = "t1", function: str = DRAINER
) -> Entry:
    return Entry(NOW + timedelta(minutes=minutes), function, kind, action, f"{ARN}/{target}", "why")


@pytest.mark.parametrize("action", ["cordon", "complete-cordon", "reap", "stop"])
@pytest.mark.parametrize("fault", [DrillFault.TTS_SILENCE, DrillFault.CPU_STARVED])
def test_each_step_that_takes_the_task_out_answers_a_task_fault(fault: DrillFault, action: str) -> None:
    found = entry(1, action)
    assert answer_of(fault, [found], "t1", "enforce") == found


@pytest.mark.parametrize("action", ["undo", "wait", "skip", "settle-capacity", "delete-room"])
def test_a_step_that_leaves_the_task_in_rotation_is_no_answer(action: str) -> None:
    assert answer_of(DrillFault.TTS_SILENCE, [entry(1, action)], "t1", "enforce") is None


def test_the_answer_is_on_the_drilled_task_by_the_answering_function() -> None:
    others = [entry(1, target="t2"), entry(2, function=REAPER)]
    assert answer_of(DrillFault.TTS_SILENCE, others, "t1", "enforce") is None


def test_an_abandoned_session_is_answered_by_the_reaper_deleting_a_room_of_any_target() -> None:
    deleted = entry(2, "delete-room", target="lesson-room", function=REAPER)
    assert answer_of(DrillFault.ABANDONED_SESSION, [entry(1), deleted], "t1", "enforce") == deleted
    assert answer_of(DrillFault.ABANDONED_SESSION, [entry(1, "delete-room")], "t1", "enforce") is None


def test_in_enforce_only_a_step_taken_answers_and_in_dry_run_only_one_it_would_have_taken() -> None:
    taken, would = entry(1), entry(2, kind=WOULD_ACT)
    assert answer_of(DrillFault.TTS_SILENCE, [taken, would], "t1", "enforce") == taken
    assert answer_of(DrillFault.TTS_SILENCE, [taken, would], "t1", "dry-run") == would
    assert answer_of(DrillFault.TTS_SILENCE, [would], "t1", "enforce") is None


def test_the_earliest_answer_is_the_one() -> None:
    later, first = entry(5, "stop"), entry(2)
    assert answer_of(DrillFault.TTS_SILENCE, [later, first], "t1", "enforce") == first


# The run and its verdict.


def run(mode: str = "enforce", fault: DrillFault = DrillFault.TTS_SILENCE) -> DrillRun:
    marker = DrillMarker(fault, int((NOW + timedelta(minutes=10)).timestamp()), "drill-1789466400")
    return DrillRun(fault, DrillTarget(CLUSTER, f"{ARN}/t1"), marker, NOW, mode)


def test_a_run_ends_at_its_markers_end_and_fails_until_answered() -> None:
    drill = run()
    assert drill.until == NOW + timedelta(minutes=10)
    assert (drill.verdict, drill.answered_after()) == ("fail", None)


def test_a_look_keeps_what_happened_since_the_drill_began_and_finds_the_answer() -> None:
    drill = run()
    before, at_start, answer = entry(-1), entry(0, "undo"), entry(1.5)
    drill.look([before, at_start, answer])
    assert drill.seen == [at_start, answer]
    assert (drill.answered, drill.verdict, drill.answered_after()) == (answer, "pass", 90.0)


def test_a_step_before_the_drill_began_is_not_its_answer() -> None:
    drill = run()
    drill.look([entry(-1)])
    assert (drill.seen, drill.answered, drill.verdict) == ([], None, "fail")


def test_a_look_reads_the_answer_in_the_drilled_services_mode() -> None:
    drill = run("dry-run")
    drill.look([entry(1), entry(2, kind=WOULD_ACT)])
    assert drill.answered == entry(2, kind=WOULD_ACT)


# The drill's action events.


def test_the_start_event_names_the_drill_the_fault_and_the_task() -> None:
    drill = run()
    event = drill_event(drill, "lkfr drill", "staging", "agents", "drill-start", "started", NOW)
    assert event.id == event_id("lkfr drill", "drill-1789466400", f"{ARN}/t1", "drill-start", "started")
    assert (event.environment, event.function, event.agent_service) == ("staging", "lkfr drill", "agents")
    assert (event.invocation_id, event.resource, event.action, event.outcome, event.at) == (
        "drill-1789466400",
        f"{ARN}/t1",
        "drill-start",
        "started",
        NOW,
    )
    assert (event.mode, event.kind.value) == ("enforce", "action")
    assert event.reason == "drill drill-1789466400: tts-silence on task t1"


def test_the_verdict_event_says_when_it_was_answered_or_that_it_was_not() -> None:
    drill = run()
    failed = drill_event(drill, "f", "staging", "agents", "drill-verdict", "fail", NOW)
    assert failed.reason == "drill drill-1789466400: tts-silence on task t1, no answer in time"
    drill.look([entry(1.5)])
    passed = drill_event(drill, "f", "staging", "agents", "drill-verdict", "pass", NOW)
    assert passed.reason == "drill drill-1789466400: tts-silence on task t1, answered after 90 s"
    assert passed.id != failed.id


def test_the_events_of_a_dry_run_service_are_dry_run_events() -> None:
    assert drill_event(run("dry-run"), "f", "s", "a", "drill-start", "started", NOW).mode == "dry-run"


class Sink:
    def __init__(self, announced: Announced) -> None:
        self.announced = announced
        self.puts: list[list[ActionEvent]] = []

    def put(self, events: list[ActionEvent]) -> Announced:
        self.puts.append(events)
        return self.announced


def test_an_event_sent_is_nothing_to_tell() -> None:
    event = drill_event(run(), "f", "s", "a", "drill-start", "started", NOW)
    sink = Sink(Announced(sent=1))
    assert told(sink, event) is None
    assert sink.puts == [[event]]


@pytest.mark.parametrize(
    ("announced", "said"),
    [
        (Announced(unknown=1, problems=["timed out", "no reply"]), "timed out; no reply"),
        (Announced(failed=1), "not sent"),
    ],
)
def test_an_event_not_surely_sent_is_told_once_with_its_problems(announced: Announced, said: str) -> None:
    event = drill_event(run(), "f", "s", "a", "drill-verdict", "fail", NOW)
    sink = Sink(announced)
    assert told(sink, event) == (
        f"drill: the drill-verdict action event was not surely delivered ({said}); it is not sent again"
    )
    assert len(sink.puts) == 1


# The drill's calls on the fleet (``adapters.drill_marker``).


def client_error(code: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "no"}}, operation)


class StubSsm:
    class exceptions:
        class ParameterNotFound(Exception):
            pass

    def __init__(self, values: dict[str, str | Exception]) -> None:
        self.values = values
        self.names: list[str] = []

    def get_parameter(self, Name: str) -> dict[str, Any]:
        self.names.append(Name)
        value = self.values.get(Name, self.exceptions.ParameterNotFound())
        if isinstance(value, Exception):
            raise value
        return {"Parameter": {"Value": value}}


ENV_SWITCH = mode_parameter_name("staging")
SERVICE_SWITCH = service_mode_parameter_name("staging", "agents")


def test_the_drilled_mode_reads_the_environments_switch_then_the_services() -> None:
    ssm = StubSsm({ENV_SWITCH: "enforce", SERVICE_SWITCH: "dry-run"})
    assert read_drilled_mode(ssm, "staging", "agents") == "dry-run"
    assert ssm.names == [ENV_SWITCH, SERVICE_SWITCH]


@pytest.mark.parametrize(
    ("values", "mode"),
    [({ENV_SWITCH: "dry-run"}, "dry-run"), ({SERVICE_SWITCH: "enforce"}, "enforce")],
    ids=["service-switch-absent", "environment-switch-absent"],
)
def test_a_switch_not_found_is_left_out_and_the_other_one_read(values: dict[str, str], mode: str) -> None:
    assert read_drilled_mode(StubSsm(dict(values)), "staging", "agents") == mode


def test_no_switch_found_is_unknown_naming_the_environments_switch() -> None:
    refused = refusal(read_drilled_mode, StubSsm({}), "staging", "agents")
    assert refused.code == "ModeUnknown"
    assert ENV_SWITCH in refused.message


@pytest.mark.parametrize(
    "error",
    [client_error("AccessDeniedException", "GetParameter"), EndpointConnectionError(endpoint_url="x")],
)
@pytest.mark.parametrize("failing", [ENV_SWITCH, SERVICE_SWITCH])
def test_a_switch_that_cannot_be_read_is_unknown_never_skipped(failing: str, error: Exception) -> None:
    ssm = StubSsm({ENV_SWITCH: "enforce", SERVICE_SWITCH: "enforce", failing: error})
    refused = refusal(read_drilled_mode, ssm, "staging", "agents")
    assert refused.code == "ModeUnknown"
    assert refused.message.startswith(f"cannot read the kill switch {failing}: ")


class StubEcs:
    def __init__(self, pages: list[list[str]], status: dict[str, str] | None = None) -> None:
        self.pages = pages
        self.status = status or {}
        self.listed: list[dict[str, Any]] = []
        self.described: list[dict[str, Any]] = []
        self.tagged: list[dict[str, Any]] = []
        self.untagged: list[dict[str, Any]] = []
        self.error: Exception | None = None

    def get_paginator(self, operation: str) -> StubEcs:
        assert operation == "list_tasks"
        return self

    def paginate(self, **request: Any) -> list[dict[str, Any]]:
        self.listed.append(request)
        if self.error is not None:
            raise self.error
        return [{"taskArns": page} for page in self.pages]

    def describe_tasks(self, **request: Any) -> dict[str, Any]:
        self.described.append(request)
        return {
            "tasks": [
                {"taskArn": arn, "lastStatus": self.status.get(arn, "RUNNING")} for arn in request["tasks"]
            ]
        }

    def tag_resource(self, **request: Any) -> None:
        self.tagged.append(request)
        if self.error is not None:
            raise self.error

    def untag_resource(self, **request: Any) -> None:
        self.untagged.append(request)
        if self.error is not None:
            raise self.error


def test_running_tasks_are_listed_for_the_service_and_described_with_their_tags_by_the_hundred() -> None:
    arns = [f"{ARN}/t{i}" for i in range(201)]
    ecs = StubEcs([arns[:150], arns[150:]])
    assert [t["taskArn"] for t in running_tasks(ecs, CLUSTER, "agents-svc")] == arns
    assert ecs.listed == [{"cluster": CLUSTER, "serviceName": "agents-svc", "desiredStatus": "RUNNING"}]
    assert [r["tasks"] for r in ecs.described] == [arns[:100], arns[100:200], arns[200:]]
    assert {(r["cluster"], tuple(r["include"])) for r in ecs.described} == {(CLUSTER, ("TAGS",))}


def test_a_task_no_longer_running_is_left_out() -> None:
    ecs = StubEcs([[f"{ARN}/a", f"{ARN}/b", f"{ARN}/c"]], {f"{ARN}/a": "STOPPING", f"{ARN}/c": "PENDING"})
    assert [t["taskArn"] for t in running_tasks(ecs, CLUSTER, "agents-svc")] == [f"{ARN}/b"]


def test_no_running_task_describes_nothing() -> None:
    ecs = StubEcs([[]])
    assert running_tasks(ecs, CLUSTER, "agents-svc") == []
    assert ecs.described == []


def test_a_failed_listing_is_an_aws_error_naming_the_call_and_the_service() -> None:
    ecs = StubEcs([])
    ecs.error = client_error("AccessDeniedException", "ListTasks")
    with pytest.raises(AwsApiError) as failed:
        running_tasks(ecs, CLUSTER, "agents-svc")
    assert (failed.value.message, failed.value.resource) == (
        "ECS ListTasks failed: AccessDeniedException: no",
        "agents-svc",
    )


TARGET = DrillTarget(CLUSTER, f"{ARN}/t1")
MARKER = DrillMarker(DrillFault.CPU_STARVED, 1789467000, "drill-1789466400")


def test_the_marker_is_the_drill_tag_with_the_markers_value_on_the_drilled_task() -> None:
    ecs = StubEcs([])
    put_marker(ecs, TARGET, MARKER)
    assert ecs.tagged == [
        {
            "resourceArn": f"{ARN}/t1",
            "tags": [{"key": DRILL_TAG, "value": "cpu-starved:1789467000:drill-1789466400"}],
        }
    ]


@pytest.mark.parametrize(
    "error",
    [client_error("InternalError", "TagResource"), ReadTimeoutError(endpoint_url="x")],
    ids=["5xx", "timeout"],
)
def test_a_marker_refused_or_unanswered_is_a_drill_not_started_on_that_task(error: Exception) -> None:
    ecs = StubEcs([])
    ecs.error = error
    refused = refusal(put_marker, ecs, TARGET, MARKER)
    assert (refused.code, refused.resource) == ("DrillNotStarted", f"{ARN}/t1")
    assert refused.message.startswith("could not mark task t1: ")
    assert len(ecs.tagged) == 1


def test_the_marker_comes_off_by_its_key() -> None:
    ecs = StubEcs([])
    assert remove_marker(ecs, TARGET, "2026-09-15T10:10:00+00:00") is None
    assert ecs.untagged == [{"resourceArn": f"{ARN}/t1", "tagKeys": [DRILL_TAG]}]


def test_a_marker_that_cannot_come_off_says_when_it_ends_and_the_command_once() -> None:
    ecs = StubEcs([])
    ecs.error = client_error("InternalError", "UntagResource")
    said = remove_marker(ecs, TARGET, "2026-09-15T10:10:00+00:00")
    assert said is not None
    assert said.startswith("could not remove the marker (")
    assert said.endswith(
        "); it ends by itself at 2026-09-15T10:10:00+00:00, or: "
        f"aws ecs untag-resource --resource-arn {ARN}/t1 --tag-keys {DRILL_TAG}"
    )
    assert len(ecs.untagged) == 1


def test_an_exclude_tag_without_a_value_leaves_the_task_drillable() -> None:
    described = task("a")
    described["tags"] = [{"key": EXCLUDE_TAG}]
    assert choose_task([described], None, "agents") == f"{ARN}/a"


class FailingDescribe(StubEcs):
    def describe_tasks(self, **request: Any) -> dict[str, Any]:
        raise client_error("AccessDeniedException", "DescribeTasks")


def test_a_failed_description_is_an_aws_error_naming_the_call_and_the_service() -> None:
    with pytest.raises(AwsApiError) as failed:
        running_tasks(FailingDescribe([[f"{ARN}/a"]]), CLUSTER, "agents-svc")
    assert (failed.value.message, failed.value.resource) == (
        "ECS DescribeTasks failed: AccessDeniedException: no",
        "agents-svc",
    )


def test_the_earliest_started_task_is_drilled_whatever_its_arn() -> None:
    tasks = [task("a", "2026-09-15T09:00:00Z"), task("z", "2026-09-15T07:00:00Z"), task("m")]
    assert choose_task(tasks, None, "agents") == f"{ARN}/z"


def test_a_task_described_without_tags_is_drillable() -> None:
    described = task("a")
    del described["tags"]
    assert choose_task([described], None, "agents") == f"{ARN}/a"


def test_the_drilled_modes_refusals_name_the_environment_and_the_service() -> None:
    off = refusal(
        read_drilled_mode, StubSsm({ENV_SWITCH: "enforce", SERVICE_SWITCH: "off"}), "staging", "agents"
    )
    assert off.message == "remediation is off in staging/agents: nothing would answer"
    unknown = refusal(read_drilled_mode, StubSsm({}), "staging", "agents")
    assert unknown.message == f"no kill switch {ENV_SWITCH}: is environment staging deployed here?"
