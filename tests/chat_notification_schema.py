"""A JSON schema of the Amazon Q Developer in chat applications *custom notification*, written from
its documentation ("Custom notifications using Amazon Q Developer in chat applications", event
schema and parameter details: https://docs.aws.amazon.com/chatbot/latest/adminguide/custom-notifs.html).

Required there: ``version`` (must be "1.0"), ``source`` (must be "custom") and
``content.description``; everything else is optional. ``textType`` supports only
"client-markdown"; ``metadata.additionalContext`` maps names to strings. Unknown keys are refused
here so a typo cannot hide in an optional field.
"""

from __future__ import annotations

from typing import Any

_STRINGS = {"type": "array", "items": {"type": "string"}}

CHAT_NOTIFICATION_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["version", "source", "content"],
    "additionalProperties": False,
    "properties": {
        "version": {"const": "1.0"},
        "source": {"const": "custom"},
        "id": {"type": "string"},
        "content": {
            "type": "object",
            "required": ["description"],
            "additionalProperties": False,
            "properties": {
                "textType": {"const": "client-markdown"},
                "title": {"type": "string"},
                "description": {"type": "string", "minLength": 1},
                "nextSteps": _STRINGS,
                "keywords": _STRINGS,
            },
        },
        "metadata": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "threadId": {"type": "string", "minLength": 1},
                "summary": {"type": "string"},
                "eventType": {"type": "string"},
                "relatedResources": _STRINGS,
                "additionalContext": {"type": "object", "additionalProperties": {"type": "string"}},
                "enableCustomActions": {"type": "boolean"},
            },
        },
    },
}
