"""Log signals as data: each signal is defined once, and that one definition yields
the CloudWatch Logs metric-filter pattern, the Logs Insights filter and an offline evaluator.

The agents write one JSON object per line (livekit-agents ``cli/log.py`` ``JsonFormatter``: keys
``message``, ``level``, ``name``, ``pid``, ``timestamp`` plus the record's extras such as ``delay``,
``job_id``, ``room``, ``room_id``). A signal matches one string field of that object, either
exactly or as a substring, and may carry a numeric value field.

Public API (other functions rely on it; keep it stable)::

    catalog = SignalCatalog.from_settings(SignalSettings())   # or SignalCatalog.default()
    catalog.slow_vad.metric_filter_pattern()   # '{ $.message = "*inference is slower than realtime*" }'
    catalog.slow_vad.insights_filter()         # 'filter message like "inference is slower than realtime"'
    catalog.slow_vad.insights_query(...)       # a complete query: filter, then your own stats
    catalog.slow_vad.matches(record)           # offline: does this parsed JSON line match?
    catalog.slow_vad.value(record)             # offline: the ``delay`` value, or None
    catalog.slow_vad.value_filter_pattern()    # the lines that also carry a numeric ``delay``
    catalog.slow_vad.metric_name / value_metric_name   # SlowVadInferences / SlowVadInferencesDelay
    catalog.response_started / catalog.first_audio_frame   # the TTS-reach pair

The worker drainer builds per-log-stream statistics from ``catalog.slow_vad.insights_filter()``
and ``catalog.slow_vad.value_field`` (``delay``), e.g.
``stats count(*) as warnings, max(delay) as max_delay by @logStream``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

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


class SignalSettings(StrictModel):
    """The signals, with defaults taken from the incident report and the livekit source.

    ``slow_vad`` matches both the silero plugin ("inference is slower than realtime") and
    livekit-agents' own inference VAD ("VAD inference is slower than realtime"); ``delay`` is the
    cumulative backlog in seconds.
    """

    slow_vad: SignalDefinition = SignalDefinition(
        text="inference is slower than realtime", match=MatchKind.CONTAINS, value_field="delay"
    )
    response_started: SignalDefinition = SignalDefinition(text="agent_response_started")
    first_audio_frame: SignalDefinition = SignalDefinition(text="tts_node_first_audio_frame")
    # Written by livekit_fleet_agent's emitter when no first audio frame follows a response start in
    # time: a silent TTS becomes a countable event instead of a missing one.
    first_audio_timeout: SignalDefinition = SignalDefinition(text="tts_first_audio_timeout")

    @model_validator(mode="after")
    def _tts_signals_distinguishable(self) -> SignalSettings:
        # The responder's query counts the TTS events with strcontains(): no text may hold another.
        texts = {
            "response_started": self.response_started.text,
            "first_audio_frame": self.first_audio_frame.text,
            "first_audio_timeout": self.first_audio_timeout.text,
        }
        for name, text in texts.items():
            for other, other_text in texts.items():
                if name != other and text in other_text:
                    raise ValueError(f"{other}.text must not contain {name}.text")
        return self


@dataclass(frozen=True)
class Signal:
    """One signal. ``metric_name`` is the CloudWatch metric its metric filter feeds."""

    name: str
    metric_name: str
    field: str
    text: str
    match: MatchKind
    value_field: str | None = None

    # --- CloudWatch Logs metric filter -------------------------------------------------------------
    def metric_filter_pattern(self) -> str:
        """A JSON filter pattern; ``*`` at both ends of the value is the pattern's substring match."""
        value = f"*{self.text}*" if self.match is MatchKind.CONTAINS else self.text
        return f'{{ $.{self.field} = "{value}" }}'

    def value_filter_pattern(self) -> str | None:
        """For a signal with a value field: the lines that carry a number there (``>= 0`` fails on a
        missing or non-numeric field), so the value metric's sample count equals its matches."""
        if self.value_field is None:
            return None
        value = f"*{self.text}*" if self.match is MatchKind.CONTAINS else self.text
        return f'{{ $.{self.field} = "{value}" && $.{self.value_field} >= 0 }}'

    @property
    def value_metric_name(self) -> str | None:
        """The metric that carries the value field (e.g. the VAD delay), published as ``$.<field>``."""
        return f"{self.metric_name}{_camel(self.value_field)}" if self.value_field else None

    # --- Logs Insights ---------------------------------------------------------------------------
    def insights_filter(self) -> str:
        """One ``filter`` command selecting this signal's lines (JSON keys are discovered fields)."""
        operator = "like" if self.match is MatchKind.CONTAINS else "="
        return f'filter {self.field} {operator} "{self.text}"'

    def insights_query(self, *commands: str) -> str:
        """The filter followed by the caller's commands (``stats``, ``sort``...), one per line."""
        return "\n| ".join([self.insights_filter(), *commands])

    # --- offline evaluator (exported log events) -----------------------------------------------------
    def matches(self, record: Mapping[str, Any]) -> bool:
        """Whether one parsed JSON log line is this signal."""
        actual = record.get(self.field)
        if not isinstance(actual, str):
            return False
        return self.text in actual if self.match is MatchKind.CONTAINS else actual == self.text

    def value(self, record: Mapping[str, Any]) -> float | None:
        """The value field of a matching line if it is a non-negative number (what the value metric
        filter accepts), else None."""
        if self.value_field is None or not self.matches(record):
            return None
        raw = record.get(self.value_field)
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw) or raw < 0:
            return None
        return float(raw)


@dataclass(frozen=True)
class SignalCatalog:
    slow_vad: Signal
    response_started: Signal
    first_audio_frame: Signal
    first_audio_timeout: Signal

    @classmethod
    def from_settings(cls, settings: SignalSettings) -> SignalCatalog:
        def build(name: str, metric_name: str, definition: SignalDefinition) -> Signal:
            return Signal(
                name=name,
                metric_name=metric_name,
                field=definition.field,
                text=definition.text,
                match=definition.match,
                value_field=definition.value_field,
            )

        return cls(
            slow_vad=build("slow_vad", "SlowVadInferences", settings.slow_vad),
            response_started=build("response_started", "AgentResponsesStarted", settings.response_started),
            first_audio_frame=build("first_audio_frame", "TtsFirstAudioFrames", settings.first_audio_frame),
            first_audio_timeout=build(
                "first_audio_timeout", "TtsFirstAudioTimeouts", settings.first_audio_timeout
            ),
        )

    @classmethod
    def default(cls) -> SignalCatalog:
        return cls.from_settings(SignalSettings())

    def __iter__(self) -> Iterator[Signal]:
        return iter((self.slow_vad, self.response_started, self.first_audio_frame, self.first_audio_timeout))


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def parse_log_line(message: str) -> dict[str, Any] | None:
    """The agent's JSON object, or None for a line that is not a JSON object (metric filters with a
    JSON pattern skip those too)."""
    try:
        record = json.loads(message)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None
