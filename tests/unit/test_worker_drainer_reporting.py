"""The drainer's message (pure composition): honest counts, what failed and what is unknown, the
undo command, links; a dry run says what it WOULD have done."""

from __future__ import annotations

import json
import re

from fleet_remediation.core.errors import AwsApiError, LiveKitUnavailableError
from fleet_remediation.core.report import Mode, Outcome, ReportBuilder, Trigger, TriggerKind
from worker_drainer.ladder import LadderPlan, PlannedStep, Step
from worker_drainer.reporting import compose, message_lines
from worker_drainer.tags import Cause, State
from worker_drainer.validation import ServiceIdentity

TASK = "2789d2380f1c4e0c8a4f0b3b6c2d1e0f"
IDENTITY = ServiceIdentity.of("agents", "arn:aws:lambda:eu-west-1:123456789012:function:f")
CORDON = PlannedStep(
    TASK,
    f"arn:aws:ecs:eu-west-1:123456789012:task/agents/{TASK}",
    Step.CORDON,
    "degraded: resident: 240 warnings over 25.0 min, 9.60/min, max delay 20.0s",
    State.HEALTHY,
    cause=Cause.VAD,
)
PLAN = LadderPlan((CORDON,), 3, 1)


def report(mode: Mode) -> ReportBuilder:
    built = ReportBuilder("worker_drainer", "inv-1")
    built.mode = mode
    built.trigger = Trigger(kind=TriggerKind.ALARM, source="livekit-prod-vad-slow-inference")
    return built


def test_a_partial_run_is_never_summarized_as_success() -> None:
    built = report(Mode.ENFORCE)
    built.error(LiveKitUnavailableError("cannot reach LiveKit at https://lk: timeout"))
    built.action(TASK, "cordon", Outcome.DONE, "cordoned (protection was on; desired count 4 -> 5)")
    subject, body = compose(message_lines(built, PLAN, None, "prod", IDENTITY), built, "prod", "https://rb")
    assert subject.startswith("[prod] worker drainer partial:")
    assert "1 done" in subject
    assert "1 error" in subject
    assert "0 failed" not in subject
    assert "LiveKitUnavailable: cannot reach LiveKit" in body
    assert "rooms unknown" in body  # what the error leaves unknown


def test_failed_and_unknown_steps_are_counted_apart() -> None:
    built = report(Mode.ENFORCE)
    refused = AwsApiError("ECS UpdateService failed: ThrottlingException", aws_code="ThrottlingException")
    lost = AwsApiError("ECS TagResource failed: Read timeout", aws_code="Transport")
    built.action(TASK, "cordon", Outcome.FAILED, refused.message, refused)
    built.action("t2", "stop", Outcome.UNKNOWN, lost.message, lost)
    subject, body = compose(message_lines(built, PLAN, None, "prod", IDENTITY), built, "prod", "https://rb")
    assert "1 failed" in subject
    assert "1 unknown" in subject
    assert "Failed (1):" in body
    assert "Unknown outcome" in body


def test_each_action_says_why_how_to_undo_and_where_to_look() -> None:
    built = report(Mode.ENFORCE)
    built.action(TASK, "cordon", Outcome.DONE, "cordoned")
    _, body = compose(message_lines(built, PLAN, None, "prod", IDENTITY), built, "prod", "https://rb")
    assert "why: degraded: resident: 240 warnings" in body
    command = next(line for line in body.splitlines() if "undo: " in line)
    assert "--function-name lkfr-prod-worker-drainer" in command
    assert "--cli-binary-format raw-in-base64-out" in command
    payload = json.loads(re.search(r"--payload '([^']*)'", command).group(1))  # type: ignore[union-attr]
    assert payload == {"action": "undrain", "task": TASK, "dry_run": False}
    assert f"https://eu-west-1.console.aws.amazon.com/ecs/v2/clusters/agents/tasks/{TASK}/" in body


def test_a_dry_run_tells_what_it_would_have_done() -> None:
    built = report(Mode.DRY_RUN)
    subject, body = compose(message_lines(built, PLAN, None, "prod", IDENTITY), built, "prod", "https://rb")
    assert subject.startswith(f"[prod] DRY RUN — worker drainer would have: cordon {TASK}")
    assert "DRY RUN — would have" in body
    assert "Would have (dry run: nothing was changed) (1):" in body
    assert "undo:" not in body  # nothing was done, nothing to undo


def test_a_refusal_the_operator_must_know_is_told_with_a_once_key() -> None:
    refusal = PlannedStep(
        TASK, TASK, Step.SKIP, "guardrail: 1 draining, at most 1 at once", State.HEALTHY, notify=True
    )
    quiet = PlannedStep("t9", "t9", Step.WAIT, "draining", State.DRAINING)
    lines = message_lines(report(Mode.ENFORCE), LadderPlan((refusal, quiet), 3, 1), None, "prod", IDENTITY)
    assert [(line.section, line.key) for line in lines] == [("refused", f"{TASK}#guardrail: 1")]
