"""The shared message model: loud modes, honest counts, SNS-safe subjects, the chat schema, and one
incident id per alarm incident."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.core import incidents, messages
from fleet_remediation.core.errors import LiveKitUnavailableError
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Decision, Mode, Outcome
from fleet_remediation.core.routing import AlarmStateChange
from tests.chat_notification_schema import CHAT_NOTIFICATION_SCHEMA
from tests.message_samples import assert_readable


def notification(**overrides: Any) -> messages.Notification:
    values: dict[str, Any] = {
        "environment": "prod",
        "function": FunctionName.ZOMBIE_REAPER,
        "incident_id": "prod.zombie-reaper.20260915T180000Z",
        "severity": messages.Severity.INFO,
        "mode": Mode.ENFORCE,
        "status": "ok",
        "headline": "zombie reaper deleted 1 of 1 over-age room(s)",
    }
    return messages.Notification(**{**values, **overrides})


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (Mode.ENFORCE, "deleted 2 rooms"),
        (Mode.DRY_RUN, "DRY RUN — would have deleted 2 rooms"),
        (Mode.OFF, "remediation is off — nothing deleted"),
    ],
)
def test_the_headline_carries_the_mode(mode: Mode, expected: str) -> None:
    headline = messages.mode_headline(
        mode, acted="deleted 2 rooms", would="deleted 2 rooms", off="nothing deleted"
    )
    assert headline == expected
    assert notification(mode=mode, headline=headline).headline == expected


@pytest.mark.parametrize(("mode", "marker"), [(Mode.DRY_RUN, "DRY RUN"), (Mode.OFF, "remediation is off")])
def test_a_dry_run_or_off_message_cannot_read_like_the_real_thing(mode: Mode, marker: str) -> None:
    with pytest.raises(ValidationError, match=marker):
        notification(mode=mode, headline="deleted 2 rooms")


def test_a_partial_run_is_never_summarised_as_success() -> None:
    report = ReportBuilder("zombie_reaper", "inv")
    report.mode = Mode.ENFORCE
    report.action("lesson-a", "delete-room", Outcome.DONE)
    report.error(LiveKitUnavailableError("LiveKit did not answer"))
    counts = messages.Counts.from_report(report)
    note = notification(status=report.status(), counts=counts)
    subject, text = messages.render_email(note)
    assert report.status() == "partial"
    assert subject.startswith("[prod] PARTIAL: ")
    assert note.severity is messages.Severity.WARNING
    assert "done 1 · already done 0 · refused 0 · failed 0 · unknown 0 · errors 1" in text


def test_unknown_outcomes_and_failures_are_counted_apart_from_refusals() -> None:
    report = ReportBuilder("worker_drainer", "inv")
    report.candidate("task-a", Decision.WOULD_ACT, "would cordon")
    for outcome in (Outcome.DONE, Outcome.SKIPPED, Outcome.FAILED, Outcome.UNKNOWN, Outcome.ALREADY_DONE):
        report.action("task-a", "cordon", outcome)
    counts = messages.Counts.from_report(report)
    assert counts.line() == "would act 1 · done 1 · already done 1 · refused 1 · failed 1 · unknown 1"
    assert messages.escalate(messages.Severity.INFO, "partial", counts) is messages.Severity.WARNING
    assert messages.escalate(messages.Severity.INFO, "failed", counts) is messages.Severity.CRITICAL


def test_the_subject_is_what_sns_accepts() -> None:
    long = "DRY RUN — would have deleted 40 over-age room(s) ≥ the cap \u00d7 2 · " + "x" * 120
    subject = notification(mode=Mode.DRY_RUN, headline=long).subject()
    assert subject.isascii()
    assert len(subject) <= 100
    assert "\n" not in subject
    assert subject.startswith("[prod] DRY RUN - would have deleted 40 over-age room(s) >= the cap x 2 | ")


def test_the_chat_rendering_fits_the_custom_notification_schema() -> None:
    note = notification(
        why=["room lesson-a: age 3h04m"],
        undo=[
            messages.Undo(label="Stop it", command="aws ssm put-parameter --overwrite --name x --value off")
        ],
        links=[
            messages.Link(label="Runbook", url="https://runbooks.example.com/docs/runbooks/zombie-reaper.md")
        ],
        resources=["lesson-a"],
        invocation_id="inv-1",
    )
    chat = messages.render_chat(note)
    jsonschema.validate(chat, CHAT_NOTIFICATION_SCHEMA)
    assert chat["metadata"]["threadId"] == "prod.zombie-reaper.20260915T180000Z"
    assert (
        chat["content"]["nextSteps"][0] == "Stop it: `aws ssm put-parameter --overwrite --name x --value off`"
    )


@pytest.mark.parametrize("missing", ["version", "source", "content"])
def test_the_schema_refuses_a_notification_without_a_required_field(missing: str) -> None:
    chat = messages.render_chat(notification())
    del chat[missing]
    with pytest.raises(jsonschema.ValidationError, match=missing):
        jsonschema.validate(chat, CHAT_NOTIFICATION_SCHEMA)


def test_the_schema_refuses_content_without_a_description() -> None:
    chat = messages.render_chat(notification())
    del chat["content"]["description"]
    with pytest.raises(jsonschema.ValidationError, match="description"):
        jsonschema.validate(chat, CHAT_NOTIFICATION_SCHEMA)


def change(state: str, at: str, previous: str, previous_at: str) -> AlarmStateChange:
    return AlarmStateChange.model_validate(
        {
            "alarmName": "livekit-prod-agents-tts-reach",
            "state": {"value": state, "timestamp": at},
            "previousState": {"value": previous, "timestamp": previous_at},
        }
    )


def test_an_alarm_and_its_resolution_are_one_incident() -> None:
    opened = change("ALARM", "2026-09-15T17:41:00.000+0000", "OK", "2026-09-15T16:00:00.000+0000")
    closed = change("OK", "2026-09-15T18:20:00.000+0000", "ALARM", "2026-09-15T17:41:00.000+0000")
    incident = incidents.transition_incident_id("prod", opened)
    assert incident == "prod.livekit-prod-agents-tts-reach.20260915T174100Z"
    assert incidents.transition_incident_id("prod", closed) == incident
    later = change("ALARM", "2026-09-15T19:00:00.000+0000", "OK", "2026-09-15T18:20:00.000+0000")
    assert incidents.transition_incident_id("prod", later) != incident


def test_the_same_rooms_are_the_same_incident_in_any_order() -> None:
    first = incidents.subject_incident_id("prod", FunctionName.ZOMBIE_REAPER, "rooms", ["RM_b", "RM_a"])
    again = incidents.subject_incident_id("prod", FunctionName.ZOMBIE_REAPER, "rooms", ["RM_a", "RM_b"])
    other = incidents.subject_incident_id("prod", FunctionName.ZOMBIE_REAPER, "rooms", ["RM_a", "RM_c"])
    assert first == again != other
    assert incidents.run_incident_id(
        "prod", FunctionName.ZOMBIE_REAPER, datetime(2026, 9, 15, 18, 5, tzinfo=UTC)
    ) == ("prod.zombie-reaper.20260915T180500Z")


def test_the_attributes_let_a_pager_tell_function_messages_from_alarms() -> None:
    attributes = messages.message_attributes(notification(severity=messages.Severity.CRITICAL))
    assert attributes["severity"] == "critical"
    assert attributes["notification_kind"] == "zombie_reaper"
    assert attributes["incident_id"] == "prod.zombie-reaper.20260915T180000Z"
    assert len(attributes) <= 10  # SNS allows ten message attributes


def _envelopes(note: messages.Notification) -> tuple[dict[str, Any], dict[str, Any]]:
    subject, text = messages.render_email(note)
    return {"Subject": subject, "Message": text}, {"Message": json.dumps(messages.render_chat(note))}


def test_links_are_labelled_and_numbers_formatted_in_both_renderings() -> None:
    note = notification(
        why=[f"they concentrate on one worker ({messages.p_value(0.0002579979360165113)})"],
        links=[messages.Link(label="Runbook", url="https://runbooks.example.com/reaper.md")],
        undo=[messages.stop_function_undo("prod", FunctionName.ZOMBIE_REAPER, "eu-west-1")],
    )
    email, chat = _envelopes(note)
    assert_readable(email, chat)
    assert "p = 2.6e-04" in email["Message"]
    assert (
        "<https://runbooks.example.com/reaper.md|Runbook>"
        in json.loads(chat["Message"])["content"]["description"]
    )


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        ({"why": ["see https://example.com/raw for more"]}, "URL outside"),
        ({"details": ["p = 0.0002579979360165113"]}, "unformatted float"),
    ],
)
def test_the_readability_check_fails_on_a_bare_url_or_a_raw_float(
    overrides: dict[str, Any], problem: str
) -> None:
    email, chat = _envelopes(notification(**overrides))
    with pytest.raises(AssertionError, match=problem):
        assert_readable(email, chat)


def test_severity_and_run_status_are_said_apart() -> None:
    critical_ok = notification(severity=messages.Severity.CRITICAL, status="ok")
    assert critical_ok.summary_line().startswith("CRITICAL · run completed · mode enforce")
    _, text = messages.render_email(critical_ok)
    assert "status ok" not in text


def test_the_undo_buttons_read_their_values_from_the_additional_context() -> None:
    undo = [
        messages.drainer_undo("End the drain", "prod", "outbound", "undrain", "2789d238", "eu-west-1"),
        messages.stop_function_undo("prod", FunctionName.WORKER_DRAINER, "eu-west-1"),
    ]
    # A drainer undo asks for a token button; only the sender, once it recorded the token, shows it.
    assert undo[0].chat is not None
    assert undo[0].button is None
    assert undo[0].chat.label == "Undrain task 2789d238 (outbound)"
    context = messages.render_chat(notification(undo=undo))["metadata"]["additionalContext"]
    assert "undrain_token" not in context
    assert "--function-name lkfr-prod-outbound-worker-drainer" in undo[0].command
    assert context["switch_function"] == "worker-drainer"
    assert all(isinstance(value, str) for value in context.values())
    assert "--region eu-west-1" in undo[0].command
    with_token = undo[0].model_copy(update={"button": {"undrain_token": "AbCdEfGhIjKlMnOp"}})
    context = messages.render_chat(notification(undo=[with_token]))["metadata"]["additionalContext"]
    assert context["undrain_token"] == "AbCdEfGhIjKlMnOp"
