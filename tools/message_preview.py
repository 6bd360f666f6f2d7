"""A notification as a person will see it: the e-mail as its text, the chat message as the chat
client shows it (title, body, next steps; ``<url|label>`` links shown as their labels), never as
a Python dict or JSON with ``\\n`` escapes. Used by the demo and the message samples."""

from __future__ import annotations

import re
from typing import Any

_CHAT_LINK = re.compile(r"<https?://[^|>\s]+\|([^>]+)>")


def email_text(subject: str, message: str) -> str:
    return f"Subject: {subject}\n\n{message}"


def chat_text(payload: dict[str, Any]) -> str:
    """The custom notification as the channel renders it; links keep only their labels, underlined."""
    content = payload["content"]
    lines = [content.get("title", ""), "", _labels(content["description"])]
    steps = content.get("nextSteps") or []
    if steps:
        lines += ["", "Next steps", *("• " + _labels(step) for step in steps)]
    return "\n".join(lines)


def _labels(text: str) -> str:
    return _CHAT_LINK.sub(r"_\1_", text)
