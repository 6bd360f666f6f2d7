"""The event every action and refusal puts on EventBridge, for tools that listen (a ticketing
rule, a status page): its detail-type, its schema and its budget.

One event per action the run took (any outcome), per step a dry run would have taken, per step a
hold kept back and per refusal an operator must know. ``id`` is the same for the same fact, so a
receiver drops a duplicate; the functions never re-send one whose reply was lost. No rule of the
stack matches this detail-type: the functions never act on their own announcements.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from fleet_remediation.contract.budgets import ACTION_EVENT_PUTS_PER_RUN

ACTION_EVENT_DETAIL_TYPE = "LiveKit Fleet Remediation Action"
# EventBridge takes at most 10 entries per PutEvents call.
ENTRIES_PER_PUT = 10
# A run announces at most this many; the rest are counted in its report.
MAX_EVENTS_PER_RUN = ACTION_EVENT_PUTS_PER_RUN * ENTRIES_PER_PUT
REASON_MAX_CHARS = 512


class ActionKind(StrEnum):
    ACTION = "action"
    WOULD_ACT = "would-act"
    HELD = "held"
    REFUSAL = "refusal"


class ActionEvent(BaseModel):
    """The ``detail`` of a "LiveKit Fleet Remediation Action" event."""

    model_config = ConfigDict(strict=True, frozen=True, extra="forbid")

    schema_version: Literal["1"] = "1"
    id: str = Field(min_length=16, max_length=64, description="The same for the same fact: drop duplicates.")
    environment: str = Field(max_length=64)
    function: str = Field(max_length=64)
    agent_service: str | None = Field(
        default=None, max_length=24, description="The agent service of a service's responder or drainer."
    )
    version: str = Field(max_length=32, description="The release that acted.")
    invocation_id: str | None = Field(max_length=128)
    incident_id: str | None = Field(default=None, max_length=256)
    mode: Literal["enforce", "dry-run"]
    kind: ActionKind
    resource: str = Field(max_length=512, description="The room, task or log stream acted on.")
    action: str = Field(max_length=64)
    outcome: str = Field(
        max_length=32, description="done, already-done, failed, unknown, skipped; or the kind."
    )
    reason: str = Field(max_length=REASON_MAX_CHARS)
    at: AwareDatetime


def event_id(*parts: str | None) -> str:
    """A stable id for one fact (function, invocation, resource, action, outcome)."""
    return hashlib.sha256("\x1f".join(p or "" for p in parts).encode()).hexdigest()[:32]


def action_event_schema() -> dict[str, Any]:
    """The JSON schema of the detail, as published in the docs."""
    return ActionEvent.model_json_schema()
