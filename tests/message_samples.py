"""Message samples for people to read (``build/samples/``) and the checks every sample passes.

``assert_readable`` fails a message that shows a URL outside a labelled link (``Label: URL`` on a
LINKS line of the e-mail, ``<URL|Label>`` in chat) or an unformatted float (five or more decimal
places) in the chat message.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tools.message_preview import chat_text, email_text

SAMPLES = Path(__file__).resolve().parents[1] / "build" / "samples"
_URL = re.compile(r"https?://\S+")
_CHAT_LINK = re.compile(r"<https?://[^|>\s]+\|[^>]+>")
_EMAIL_LINK_LINE = re.compile(r"^- [^:/]+[^/]*: https?://\S+$")
_RAW_FLOAT = re.compile(r"\d\.\d{5,}")


def chat_problems(payload: dict[str, Any]) -> list[str]:
    content = payload["content"]
    shown = [content.get("title", ""), content["description"], *content.get("nextSteps", [])]
    problems = []
    for text in shown:
        outside = _CHAT_LINK.sub("", text)
        problems += [f"URL outside a labelled link: {url[:80]}" for url in _URL.findall(outside)]
        problems += [f"unformatted float: {number}" for number in _RAW_FLOAT.findall(outside)]
    return problems


def email_problems(message: str) -> list[str]:
    lines = message.splitlines()
    links_at = lines.index("LINKS") if "LINKS" in lines else len(lines)
    return [
        f"URL outside the labelled links (line {number + 1}): {line[:80]}"
        for number, line in enumerate(lines)
        if _URL.search(line) and not (number > links_at and _EMAIL_LINK_LINE.match(line))
    ]


def assert_readable(email: dict[str, Any], chat: dict[str, Any]) -> None:
    problems = email_problems(email["Message"]) + chat_problems(json.loads(chat["Message"]))
    assert problems == [], "\n".join(problems)


def save_sample(name: str, email: dict[str, Any], chat: dict[str, Any]) -> None:
    """Write the e-mail as received, the chat JSON and the chat as the client shows it; both checked."""
    assert_readable(email, chat)
    SAMPLES.mkdir(parents=True, exist_ok=True)
    payload = json.loads(chat["Message"])
    (SAMPLES / f"{name}.email.txt").write_text(email_text(email["Subject"], email["Message"]) + "\n")
    (SAMPLES / f"{name}.chat.json").write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    (SAMPLES / f"{name}.chat.txt").write_text(chat_text(payload) + "\n")
