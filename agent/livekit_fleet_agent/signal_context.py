"""What the detection-signal emitter reads around a session: the SDK's objects it uses (as
protocols), the job it runs in, the TTS endpoint label, and the counts of its summary line."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

# The task definition may name the TTS endpoint its agents use (provider and region, e.g.
# "elevenlabs/eu-west-1"): the group a regional provider outage shares.
TTS_ENDPOINT_ENV = "LIVEKIT_FLEET_TTS_ENDPOINT"
TTS_ENDPOINT_FIELD = "tts_endpoint"


class SpeechHandleLike(Protocol):
    """The public part of livekit-agents' ``SpeechHandle`` the emitter reads."""

    @property
    def id(self) -> str: ...

    @property
    def interrupted(self) -> bool: ...

    def done(self) -> bool: ...

    def add_done_callback(self, callback: Callable[[Any], None]) -> None: ...


class SessionLike(Protocol):
    """The public part of livekit-agents' ``AgentSession`` the emitter uses."""

    @property
    def current_speech(self) -> Any: ...

    def on(self, event: Any, callback: Any = None) -> Any: ...

    @property
    def tts(self) -> Any: ...

    def off(self, event: Any, callback: Any) -> None: ...


@dataclass
class Counts:
    """What happened since the last summary line."""

    responses: int = 0
    first_frames: int = 0
    late_frames: int = 0

    def fields(self) -> dict[str, int]:
        counts = {"responses": self.responses, "first_frames": self.first_frames}
        return {**counts, "late_frames": self.late_frames} if self.late_frames else counts


def job_context_fields() -> dict[str, str]:
    """``job_id``, ``room``, ``room_id``, ``worker_id`` of the running livekit-agents job (the same
    keys as the worker's ``received job request`` line), or nothing outside a job."""
    # Imported here so that ``livekit_fleet_agent`` (DrainAwareLoad) imports with the standard
    # library alone.
    from livekit.agents import get_job_context

    ctx = get_job_context(required=False)
    if ctx is None:
        return {}
    fields = {
        "job_id": ctx.job.id,
        "room": ctx.job.room.name,
        "room_id": ctx.job.room.sid,
        "worker_id": ctx.worker_id,
    }
    return {key: value for key, value in fields.items() if value}


def tts_endpoint_label(session: Any) -> str:
    """The group label of the responses' TTS: the task's ``LIVEKIT_FLEET_TTS_ENDPOINT`` (provider
    and region, which only the deployment knows), else the TTS plugin's ``provider`` (livekit-agents'
    ``TTS.provider``, "unknown" when the plugin does not say), else empty (no label written)."""
    configured = os.environ.get(TTS_ENDPOINT_ENV, "").strip()
    if configured:
        return configured
    provider = str(getattr(getattr(session, "tts", None), "provider", "") or "")
    return "" if provider == "unknown" else provider
