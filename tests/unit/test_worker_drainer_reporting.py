"""The drainer's message (pure composition, in the shared model): honest counts, what failed and
what is unknown, why, the undo command, links; a dry run says what it WOULD have done; the chat
rendering follows the Amazon Q custom-notification schema; which incident a run threads under."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import jsonschema
import pytest

from devkit.fakes.drainer_world import (
    CONTAINER,
    FUNCTION_ARN,
    STREAM_PREFIX,
    alarm_event,
    offline_settings,
    schedule_event,
    suspect_event,
)
from fleet_remediation.contract.events import DRAINER_EVENT_AGES
from fleet_remediation.core import messages
from fleet_remediation.core.errors import AwsApiError, LiveKitUnavailableError
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Decision, Mode, Outcome, Trigger, TriggerKind
from livekit_fleet_remediation.offline.eventbridge_events import door_on_arrival
from tests.chat_notification_schema import CHAT_NOTIFICATION_SCHEMA
from worker_drainer.adapters.ecs_model import EcsTask
from worker_drainer.decide.ladder import LadderPlan, PlannedStep, Snapshot, Step
from worker_drainer.decide.task_tags import INCIDENT_TAG, Cause, State, incident_tag_value
from worker_drainer.events import DrainerTrigger, route_drainer_event
from worker_drainer.read.target_checks import ServiceIdentity
from worker_drainer.tell.incident_thread import message_incident, trigger_incident
from worker_drainer.tell.message import MessageContext, compose, severity
from worker_drainer.tell.message_lines import UNKNOWN_NOTE, Line, message_lines

TASK = "2789d2380f1c4e0c8a4f0b3b6c2d1e0f"
TASK_ARN = f"arn:aws:ecs:eu-west-1:123456789012:task/agents/{TASK}"
IDENTITY = ServiceIdentity.of("agents", "arn:aws:lambda:eu-west-1:123456789012:function:f")
INCIDENT = "prod.livekit-prod-agents-vad-slow-inference.20260915T174000Z"
CORDON = PlannedStep(
    TASK,
    TASK_ARN,
    Step.CORDON,
    "degraded: resident: 240 warnings over 25.0 min, 9.60/min, max delay 20.0s",
    State.HEALTHY,
    cause=Cause.VAD,
)
PLAN = LadderPlan((CORDON,), 3, 1)
SETTINGS = offline_settings("prod")
CONTEXT = MessageContext(SETTINGS, IDENTITY, INCIDENT, "livekit-prod-agents-vad-slow-inference")
# The drainer world's environment: its alarms, and its tasks' log streams.
IT_SETTINGS = offline_settings("it", agent_log_stream_prefix=STREAM_PREFIX, agent_container_name=CONTAINER)


def report(mode: Mode) -> ReportBuilder:
    built = ReportBuilder("worker_drainer", "inv-1")
    built.mode = mode
    built.trigger = Trigger(kind=TriggerKind.ALARM, source="livekit-prod-agents-vad-slow-inference")
    return built


def note_of(built: ReportBuilder, plan: LadderPlan = PLAN) -> messages.Notification:
    return compose(message_lines(built.facts(), plan, None), built.facts(), CONTEXT)


def test_a_partial_run_is_never_summarized_as_success() -> None:
    built = report(Mode.ENFORCE)
    built.error(LiveKitUnavailableError("cannot reach LiveKit at https://lk: timeout"))
    built.action(TASK, "cordon", Outcome.DONE, "cordoned (protection was on; desired count 4 -> 5)")
    note = note_of(built)
    subject, body = messages.render_email(note)
    assert subject == "[prod/agents] PARTIAL: worker drainer cordoned task 2789d238"
    assert "done 1 · already done 0 · refused 0 · failed 0 · unknown 0 · errors 1" in body
    assert note.severity is messages.Severity.WARNING
    assert "LiveKitUnavailable: cannot reach LiveKit" in body
    assert "rooms unknown" in body  # what the error leaves unknown


def test_failed_and_unknown_steps_are_counted_apart() -> None:
    built = report(Mode.ENFORCE)
    refused = AwsApiError("ECS UpdateService failed: ThrottlingException", aws_code="ThrottlingException")
    lost = AwsApiError("ECS TagResource failed: Read timeout", aws_code="Transport")
    built.action(TASK, "cordon", Outcome.FAILED, refused.message, refused)
    built.action("t2", "stop", Outcome.UNKNOWN, lost.message, lost)
    subject, body = messages.render_email(note_of(built))
    assert subject.startswith(
        "[prod/agents] PARTIAL: worker drainer cordon of task 2789d238 failed; stop of task t2 unknown"
    )
    assert "failed 1 · unknown 1" in body
    assert f"cordon {TASK}: failed — ECS UpdateService failed: ThrottlingException [AwsApiError]" in body
    assert f"stop t2: unknown — ECS TagResource failed: Read timeout [AwsApiError] ({UNKNOWN_NOTE})" in body


def test_each_action_says_why_how_to_undo_and_where_to_look() -> None:
    built = report(Mode.ENFORCE)
    built.action(TASK, "cordon", Outcome.DONE, "cordoned")
    note = note_of(built)
    assert f"cordon {TASK}: degraded: resident: 240 warnings over 25.0 min" in "\n".join(note.why)
    undrain = next(undo for undo in note.undo if "undrain" in undo.label)
    assert "--function-name lkfr-prod-agents-worker-drainer" in undrain.command
    assert "--cli-binary-format raw-in-base64-out" in undrain.command
    payload = json.loads(re.search(r"--payload '([^']*)'", undrain.command).group(1))  # type: ignore[union-attr]
    assert payload == {"action": "undrain", "task": TASK, "dry_run": False}
    _, body = messages.render_email(note)
    assert f"https://eu-west-1.console.aws.amazon.com/ecs/v2/clusters/agents/tasks/{TASK}/" in body
    assert "#alarmsV2:alarm/livekit-prod-agents-vad-slow-inference" in body
    assert "Runbook: https://runbooks.example.com/repo/" in body
    assert note.resources == [TASK_ARN]


def test_a_dry_run_tells_what_it_would_have_done() -> None:
    built = report(Mode.DRY_RUN)
    built.candidate(TASK, Decision.WOULD_ACT, "cordon: degraded")
    note = note_of(built)
    subject, body = messages.render_email(note)
    assert subject == "[prod/agents] DRY RUN - would have cordoned task 2789d238"
    assert body.startswith("DRY RUN — would have cordoned task 2789d238")
    assert "would act 1 · done 0" in body
    assert "undrain" not in body  # nothing was done, nothing to undo
    exclude = next(undo for undo in note.undo if "Keep the drainer off" in undo.label)
    assert exclude.command == (
        f"aws ecs tag-resource --region eu-west-1 --resource-arn {TASK_ARN} "
        "--tags key=livekit-drainer:exclude,value=true"
    )
    assert note.severity is messages.Severity.WARNING  # as in enforce: a worker would be taken out


def test_a_refusal_the_operator_must_know_is_told_with_a_once_key() -> None:
    refusal = PlannedStep(
        TASK, TASK, Step.SKIP, "guardrail: 1 draining, at most 1 at once", State.HEALTHY, notify=True
    )
    quiet = PlannedStep("t9", "t9", Step.WAIT, "draining", State.DRAINING)
    built = report(Mode.ENFORCE)
    lines = message_lines(built.facts(), LadderPlan((refusal, quiet), 3, 1), None)
    assert [(line.section, line.key) for line in lines] == [("refused", f"{TASK}#guardrail: 1")]
    note = compose(lines, built.facts(), CONTEXT)
    assert note.headline == "worker drainer skipped task 2789d238: guardrail: 1 draining, at most 1 at once"
    assert note.counts.refused == 1
    assert note.severity is messages.Severity.WARNING


def test_fleet_wide_slowness_is_critical_and_an_undo_alone_is_information() -> None:
    fleet = Line("fleet", "fleet-wide slow inference, nothing drained", key="fleet")
    undone = Line("done", f"undo {TASK}: done — unmarked", "undo", TASK, outcome=Outcome.DONE)
    assert severity([fleet]) is messages.Severity.CRITICAL
    assert severity([undone]) is messages.Severity.INFO


@pytest.mark.parametrize("mode", [Mode.DRY_RUN, Mode.ENFORCE])
def test_the_chat_message_follows_the_custom_notification_schema(mode: Mode) -> None:
    built = report(mode)
    if mode is Mode.ENFORCE:
        built.action(TASK, "cordon", Outcome.DONE, "cordoned")
    else:
        built.candidate(TASK, Decision.WOULD_ACT, "cordon: degraded")
    note = note_of(built)
    chat = messages.render_chat(note)
    jsonschema.validate(chat, CHAT_NOTIFICATION_SCHEMA)
    assert chat["metadata"]["threadId"] == INCIDENT
    assert chat["metadata"]["eventType"] == "LiveKitFleetRemediation.worker_drainer"
    assert messages.message_attributes(note)["severity"] == "warning"
    assert any("aws ssm put-parameter" in step for step in chat["content"]["nextSteps"])


NOW = datetime(2026, 9, 15, 17, 45, tzinfo=UTC)


def routed(event: dict[str, Any]) -> DrainerTrigger:
    """``event`` routed by the "it" environment's drainer the moment it was sent."""
    door = door_on_arrival(event, DRAINER_EVENT_AGES, FUNCTION_ARN, NOW)
    return route_drainer_event(event, IT_SETTINGS, door)


def test_each_trigger_names_its_incident() -> None:
    def incident(event: dict[str, Any]) -> str:
        return trigger_incident(routed(event), "it", "agents", NOW)

    opened = "it.livekit-it-agents-vad-slow-inference.20260915T174000Z"
    assert incident(alarm_event()) == opened
    resolved = alarm_event("OK")
    resolved["detail"]["previousState"] = {"value": "ALARM", "timestamp": "2026-09-15T17:40:00.000+0000"}  # type: ignore[index]
    assert incident(resolved) == opened  # an OK belongs to the ALARM it ends
    assert incident(schedule_event()) == "it.agents-worker-drainer.20260915T174100Z"
    assert incident({"action": "drain", "task": TASK}) == "it.agents-worker-drainer.20260915T174500Z"
    carried = suspect_event(TASK, NOW)
    carried["detail"]["incident_id"] = "it.livekit-it-agents-tts-reach.20260915T174100Z"  # type: ignore[index]
    assert incident(carried) == "it.livekit-it-agents-tts-reach.20260915T174100Z"
    # An older responder's event without one: the same id its alarm and window name, every time.
    assert incident(suspect_event(TASK, NOW)) == "it.livekit-it-agents-tts-reach.20260915T174500Z"


def test_a_schedule_run_threads_under_the_incident_that_started_the_ladder() -> None:
    parsed = routed(schedule_event())
    stop = PlannedStep(TASK, TASK_ARN, Step.STOP, "drained: no active jobs", State.DRAINING)
    task = EcsTask(TASK_ARN, "RUNNING", "RUNNING", "service:agent-svc", {INCIDENT_TAG: INCIDENT})
    snapshot = Snapshot(NOW, [task], None)
    run = "it.agents-worker-drainer.20260915T174100Z"
    assert message_incident(parsed, run, LadderPlan((stop,), 3, 1), snapshot) == INCIDENT
    unmarked = Snapshot(NOW, [EcsTask(TASK_ARN, "RUNNING", "RUNNING", "service:agent-svc")], None)
    assert message_incident(parsed, run, LadderPlan((stop,), 3, 1), unmarked) == run
    # An alarm's run threads under the alarm's incident, whatever ladders it advances.
    by_alarm = routed(alarm_event())
    assert message_incident(by_alarm, "it.alarm", LadderPlan((stop,), 3, 1), snapshot) == "it.alarm"


def test_an_incident_id_is_made_to_fit_an_ecs_tag_value() -> None:
    assert incident_tag_value(INCIDENT) == INCIDENT
    odd = "team incident #42 (sev1) ✓ " + "x" * 300
    fitted = incident_tag_value(odd)
    assert re.fullmatch(r"[A-Za-z0-9+\-=._:/@]{1,256}", fitted)
    assert fitted == incident_tag_value(odd)  # deterministic
    assert fitted != incident_tag_value(odd.replace("#42", "#43"))
