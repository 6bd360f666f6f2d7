"""Where each log signal lives in an agent's JSON line: the ``detection.signals`` section of an
environment (``SignalSettings``), validated at synth and at cold start. ``signals.SignalCatalog``
turns it into filter patterns, queries and offline evaluators."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, model_validator

from fleet_remediation.contract.models import StrictModel

# A plain JSON key: usable unquoted as ``$.key`` in a metric-filter pattern and as a Logs Insights field.
FIELD_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
# Text that needs no escaping in either language: no quotes, backslashes, wildcards or slashes.
TEXT_PATTERN = r'^[^"\\*/]+$'


class MatchKind(StrEnum):
    EXACT = "exact"
    CONTAINS = "contains"


class SignalDefinition(StrictModel):
    """Where one signal lives in an agent's JSON log line (one entry per environment in cdk.json)."""

    field: str = Field(default="message", pattern=FIELD_PATTERN, description="JSON key holding the text.")
    text: str = Field(
        min_length=1,
        max_length=200,
        pattern=TEXT_PATTERN,
        description="The text the field holds (or contains).",
    )
    match: MatchKind = Field(
        default=MatchKind.EXACT, description="exact: the whole value is the text; contains: a substring."
    )
    value_field: str | None = Field(
        default=None, pattern=FIELD_PATTERN, description="Numeric JSON key carried by the line, if any."
    )
    summary_field: str | None = Field(
        default=None,
        pattern=FIELD_PATTERN,
        description="The key of the agent package's summary line that counts this signal (None: no summary).",
    )


class SignalSettings(StrictModel):
    """The signals, with defaults taken from the incident report and the livekit source.

    ``slow_vad`` matches both the silero plugin ("inference is slower than realtime") and
    livekit-agents' own inference VAD ("VAD inference is slower than realtime"); ``delay`` is the
    cumulative backlog in seconds.
    """

    slow_vad: SignalDefinition = SignalDefinition(
        text="inference is slower than realtime", match=MatchKind.CONTAINS, value_field="delay"
    )
    response_started: SignalDefinition = SignalDefinition(
        text="agent_response_started", summary_field="responses"
    )
    first_audio_frame: SignalDefinition = SignalDefinition(
        text="tts_node_first_audio_frame", summary_field="first_frames"
    )
    # Written by livekit_fleet_agent's emitter when no first audio frame follows a response start in
    # time: a silent TTS becomes a countable event instead of a missing one.
    first_audio_timeout: SignalDefinition = SignalDefinition(text="tts_first_audio_timeout")
    # A first frame that came after its response's timeout line: the response was slow, not silent.
    late_first_frame: SignalDefinition = SignalDefinition(
        text="tts_late_first_audio_frame", summary_field="late_frames"
    )
    summary_text: str = Field(
        default="agent_tts_summary",
        min_length=1,
        max_length=200,
        pattern=TEXT_PATTERN,
        description="The ``message`` of the agent package's summary line (livekit_fleet_agent).",
    )

    @model_validator(mode="after")
    def _tts_signals_distinguishable(self) -> SignalSettings:
        # The responder's query counts the TTS events with strcontains(): no text may hold another.
        texts = {
            "response_started": self.response_started.text,
            "first_audio_frame": self.first_audio_frame.text,
            "first_audio_timeout": self.first_audio_timeout.text,
            "late_first_frame": self.late_first_frame.text,
            "summary_text": self.summary_text,
        }
        for name, text in texts.items():
            for other, other_text in texts.items():
                if name != other and text in other_text:
                    raise ValueError(f"{other}.text must not contain {name}.text")
        return self
