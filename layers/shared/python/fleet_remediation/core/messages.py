"""What a person reads, from a phone: the message model (``core.message_model``), two renderings.

* ``render_email`` — (subject, text) for the SNS topic e-mail subscribers read: the headline,
  then how to undo it, then why, the outcome, details and the labelled links;
* ``render_chat`` — the Amazon Q Developer in chat applications *custom notification* JSON
  (``version`` "1.0", ``source`` "custom", ``content`` and ``metadata``) with the incident id as
  ``metadata.threadId``, so every message of one incident lands in one chat thread, and the
  ``additionalContext`` the one-tap undo buttons read (``core.chat_actions``);
* ``message_attributes`` — the SNS message attributes (``severity``, ``incident_id``, ...) that
  subscription filter policies match on.

A URL appears only inside a labelled link: ``Label: URL`` on its own line in the e-mail's LINKS,
``<URL|Label>`` in chat (Slack's link markup: Amazon Q renders ``client-markdown`` in the chat
platform's own markdown). Incident ids (``core.incidents``) are deterministic, so every message of
one incident — the alarm transition, the responder, the drainer, the resolution — carries the same one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from fleet_remediation.contract.naming import (
    AGENT_SERVICE_ATTRIBUTE,
    INCIDENT_ATTRIBUTE,
    NOTIFICATION_KIND_ATTRIBUTE,
    SEVERITY_ATTRIBUTE,
    FunctionId,
    FunctionName,
    dashboard_name,
    function_log_group_name,
    function_mode_parameter_name,
    lambda_function_name,
)
from fleet_remediation.core import chat_actions
from fleet_remediation.core.console_links import dashboard_link, logs_insights_link
from fleet_remediation.core.message_model import (
    DRY_RUN_PREFIX,
    OFF_PREFIX,
    SUBJECT_LIMIT,
    Counts,
    Link,
    Notification,
    Severity,
    Undo,
    ascii_subject,
    escalate,
    figure,
    mode_headline,
    p_value,
    probability,
)

__all__ = [
    "DRY_RUN_PREFIX",
    "OFF_PREFIX",
    "SUBJECT_LIMIT",
    "Counts",
    "Link",
    "Notification",
    "Severity",
    "Undo",
    "ascii_subject",
    "escalate",
    "figure",
    "mode_headline",
    "p_value",
    "probability",
]

# A chat message is read on a phone: long lists end with "... and N more".
MAX_LISTED = 12
CHAT_DESCRIPTION_LIMIT = 3000
CHAT_EVENT_TYPE = "LiveKitFleetRemediation"
REPORT_LINK_LABEL = "This run's report (Logs Insights)"
_CHAT_ICON = {
    Severity.CRITICAL: ":rotating_light:",
    Severity.WARNING: ":warning:",
    Severity.INFO: ":information_source:",
}


def _listed(items: Sequence[str]) -> list[str]:
    shown = list(items[:MAX_LISTED])
    if len(items) > MAX_LISTED:
        shown.append(f"... and {len(items) - MAX_LISTED} more")
    return shown


def render_email(note: Notification) -> tuple[str, str]:
    """Plain text that reads top to bottom on a phone: what, how to undo it, why, outcome, links."""
    lines = [f"{note.status_tag}{note.headline}", note.summary_line(), f"Incident {note.incident_id}"]

    def section(title: str, items: Sequence[str]) -> None:
        if items:
            lines.extend(["", title, *(f"- {item}" for item in _listed(items))])

    section("UNDO", [undo.lines() for undo in note.undo])
    section("WHY", note.why)
    lines.extend(["", "OUTCOME", note.counts.line()])
    section("DETAILS", note.details)
    section("ERRORS", note.errors)
    section("LINKS", [f"{link.label}: {link.url}" for link in note.links])
    if note.invocation_id:
        lines.extend(["", f"Invocation {note.invocation_id} ({note.function.value})"])
    return note.subject(), "\n".join(lines)


def _chat_link(link: Link) -> str:
    return f"<{link.url}|{link.label}>"


def _chat_description(note: Notification) -> str:
    """The body, cut to the chat limit without breaking a link: links that do not fit are left
    to the e-mail, then the text is cut at a line."""
    blocks = [f"*{note.summary_line()}*"]
    for title, items in (("Why", note.why), ("Details", note.details), ("Errors", note.errors)):
        if items:
            blocks.append("\n".join([f"*{title}*", *(f"• {item}" for item in _listed(items))]))
        if title == "Why":
            blocks.append(f"*Outcome*\n`{note.counts.line()}`")
    blocks.append(f"Incident `{note.incident_id}`")
    text = "\n\n".join(blocks)
    links = [_chat_link(link) for link in note.links]
    while links and len(text) + len(" · ".join(links)) + 12 > CHAT_DESCRIPTION_LIMIT:
        links.pop()
    if len(text) > CHAT_DESCRIPTION_LIMIT - 20:
        text = text[: text.rfind("\n", 0, CHAT_DESCRIPTION_LIMIT - 20)] + "\n… (see the e-mail)"
    return text + ("\n\n*Links* " + " · ".join(links) if links else "")


def _chat_context(note: Notification) -> dict[str, str]:
    """What the custom actions read: the first button of each kind wins."""
    context = {
        chat_actions.CONTEXT_ENVIRONMENT: note.environment,
        "function": note.function.value,
        "incident_id": note.incident_id,
        "severity": note.severity.value,
        "mode": note.mode_name,
        "status": note.status,
        "invocation_id": note.invocation_id or "",
    }
    if note.agent_service:
        context[chat_actions.CONTEXT_AGENT_SERVICE] = note.agent_service
    for undo in note.undo:
        for key, value in (undo.button or {}).items():
            context.setdefault(key, value)
    return context


def _next_step(undo: Undo) -> str:
    """An undo in chat: its command; with a token button, first what the button does, exactly."""
    step = f"{undo.label}: `{undo.command}`" + (f" (or `{undo.short}`)" if undo.short else "")
    if undo.chat is None or not undo.button:
        return step
    button = chat_actions.BUTTON_TEXT[undo.chat.action]
    return f'{undo.chat.label}: button "{button}". {step}'


def render_chat(note: Notification) -> dict[str, Any]:
    """The Amazon Q Developer in chat applications custom notification (schema version 1.0)."""
    next_steps = [_next_step(undo) for undo in note.undo]
    next_steps += [_chat_link(link) for link in note.links if link.label.startswith("Runbook")]
    return {
        "version": "1.0",
        "source": "custom",
        "id": f"{note.incident_id}/{note.function.value}/{note.invocation_id or 'local'}",
        "content": {
            "textType": "client-markdown",
            "title": f"{_CHAT_ICON[note.severity]} [{note.scope}] {note.status_tag}{note.headline}",
            "description": _chat_description(note),
            "nextSteps": next_steps,
            "keywords": [
                note.environment,
                *([note.agent_service] if note.agent_service else []),
                note.function.value,
                note.severity.value,
                note.mode_name,
                note.status,
            ],
        },
        "metadata": {
            "threadId": note.incident_id,
            "summary": note.subject(),
            "eventType": f"{CHAT_EVENT_TYPE}.{note.function.value}",
            "relatedResources": note.resources[:MAX_LISTED],
            "additionalContext": _chat_context(note),
            "enableCustomActions": True,
        },
    }


def message_attributes(note: Notification) -> dict[str, str]:
    """SNS message attributes: subscription filter policies route on these (CloudWatch's own alarm
    notifications carry none, see ``NOTIFICATION_KIND_ATTRIBUTE``)."""
    attributes = {
        "environment": note.environment,
        SEVERITY_ATTRIBUTE: note.severity.value,
        INCIDENT_ATTRIBUTE: note.incident_id,
        NOTIFICATION_KIND_ATTRIBUTE: note.function.value,
        "mode": note.mode_name,
        "status": note.status,
    }
    if note.agent_service:
        attributes[AGENT_SERVICE_ATTRIBUTE] = note.agent_service
    return attributes


def report_query(invocation_id: str) -> str:
    """The Logs Insights query that shows one invocation's report."""
    return (
        f'filter message = "remediation report" and report.invocation_id = "{invocation_id}"\n'
        "| fields @timestamp, report.status, report.mode, report.summary"
    )


def function_links(
    *,
    region: str | None,
    environment: str,
    function: FunctionId,
    runbook: str,
    invocation_id: str | None,
    around: datetime,
    agent_service: str | None = None,
) -> list[Link]:
    """Runbook, dashboard and this run's report in Logs Insights (console links need the region)."""
    links = [Link(label="Runbook", url=runbook)]
    if region:
        links.append(Link(label="Dashboard", url=dashboard_link(region, dashboard_name(environment))))
        if invocation_id:
            window = timedelta(minutes=15)
            log_group = function_log_group_name(environment, function, agent_service)
            query = report_query(invocation_id)
            url = logs_insights_link(region, [log_group], query, around - window, around + window)
            links.append(Link(label=REPORT_LINK_LABEL, url=url))
    return links


def _region_option(region: str | None) -> str:
    return f" --region {region}" if region else ""


def stop_function_undo(environment: str, function: FunctionName, region: str | None = None) -> Undo:
    """Turn this one function off (the environment's switch stays as it is)."""
    name = function_mode_parameter_name(environment, function)
    return Undo(
        label=f"Stop {function.value} now (its own kill switch)",
        command=f"aws ssm put-parameter --overwrite --name {name} --value off{_region_option(region)}",
        button=chat_actions.switch_button(function),
    )


def drainer_invoke_command(
    environment: str, service: str, action: str, task_id: str, region: str | None = None
) -> str:
    """The CLI line (AWS CLI v2) that asks the service's drainer to ``drain`` or ``undrain`` one task."""
    payload = json.dumps({"action": action, "task": task_id, "dry_run": False}, separators=(",", ":"))
    return (
        f"aws lambda invoke{_region_option(region)} "
        f"--function-name {lambda_function_name(environment, FunctionName.WORKER_DRAINER, service)} "
        f"--cli-binary-format raw-in-base64-out --payload '{payload}' /dev/stdout"
    )


def drainer_undo(
    label: str,
    environment: str,
    service: str,
    action: chat_actions.ChatDrainerAction,
    task_id: str,
    region: str | None = None,
) -> Undo:
    """Ask the service's drainer to ``drain`` or ``undrain`` one task: the CLI line, and the chat
    button's request (its token is issued when the message is sent)."""
    drain = " --drain" if action == "drain" else ""
    return Undo(
        label=label,
        command=drainer_invoke_command(environment, service, action, task_id, region),
        chat=chat_actions.ChatTokenRequest(action=action, task_id=task_id, agent_service=service),
        short=f"lkfr undo --env {environment} --service {service} --task {task_id}{drain}"
        f"{_region_option(region)}",
    )
