"""How the demo prints: reports as a person reads them (no Python reprs: nested summary values are
spelled out), notifications as they would arrive, and none of the noise it expects."""

from __future__ import annotations

import json
import logging
import warnings
from typing import Any

from livekit_fleet_remediation.cli.render import render_report
from tools.message_preview import chat_text, email_text


class _Expected(logging.Filter):
    """Drops the records whose message holds every one of ``words``; lets everything else through."""

    def __init__(self, *words: str) -> None:
        super().__init__()
        self.words = words

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not all(word in message for word in self.words)


def quiet_expected_noise() -> None:
    """What the demo knows it causes, kept off stderr (anything else still shows):

    * livekit-server's dev mode signs tokens with the 6-byte secret "secret", which PyJWT warns
      about (production keys are long);
    * the rtc SDK logs an error for each data channel LiveKit closes when the reaper deletes the
      participant's room: the demo's intended outcome;
    * the demo's agents worker keeps no idle process (it starts faster), so each job it is given
      waits for its process, which livekit-agents warns about.
    """
    from jwt.warnings import InsecureKeyLengthWarning

    warnings.filterwarnings("ignore", category=InsecureKeyLengthWarning)
    logging.getLogger("livekit").addFilter(_Expected("data channel", "closed unexpectedly"))
    logging.getLogger("livekit.agents").addFilter(_Expected("no warmed process available for job"))


def box(title: str, text: str) -> None:
    print(f"\n  ┌─ {title} " + "─" * max(4, 66 - len(title)))
    print("\n".join(f"  │ {line}" for line in text.splitlines()))
    print("  └" + "─" * 69)


def spelled(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return {None: "none", True: "yes", False: "no"}[value]
    if isinstance(value, dict):
        return " ".join(f"{key} {spelled(item)}" for key, item in value.items()) or "none"
    if isinstance(value, list | tuple):
        return ", ".join(spelled(item) for item in value) or "none"
    return str(value)


def print_report(report: dict[str, Any]) -> None:
    """The report through the shared renderer, its summary spelled out, and the message a dry run
    would have sent shown as the e-mail it would be."""
    summary = dict(report.get("summary") or {})
    would = summary.pop("would_notify", None)
    print(render_report({**report, "summary": {}}))
    if summary:
        print("  summary: " + "; ".join(f"{key} {spelled(value)}" for key, value in summary.items()))
    if would:
        box("e-mail it would send (dry run: nobody is told)", email_text(would["subject"], would["text"]))


def print_delivered(emails: list[dict[str, Any]], chats: list[dict[str, Any]]) -> None:
    """Messages read back from the topics (SNS envelopes), as e-mail and chat show them."""
    for email in emails:
        box("e-mail (SNS in AWS)", email_text(email.get("Subject", ""), email["Message"]))
    for chat in chats:
        box("chat (Amazon Q in Slack)", chat_text(json.loads(chat["Message"])))
