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
    catalog.response_started.summary_filter_pattern()   # the agent package's summary line, metric
    catalog.response_started.summary_metric_value()     # value ``$.responses`` (filters sum it)
    catalog.tts_selector() / catalog.tts_sums() / catalog.tts_totals(row)   # one row of TTS counts
    catalog.tts_counts(record)                 # offline: what one line adds to each TTS count

Two line formats feed the TTS counts, both on by default and never both written by one agent:
per-response lines (one line per event, counted 1 each: a team's own lines) and the agent
package's compact summary (``summary_text``: one line per job process and interval carrying the
counts ``responses``, ``first_frames``, ``late_frames``; decision 0015). First-audio timeouts are
always one line per event: the responder names the failing rooms from them.

The worker drainer builds per-log-stream statistics from ``catalog.slow_vad.insights_filter()``
and ``catalog.slow_vad.value_field`` (``delay``), e.g.
``stats count(*) as warnings, max(delay) as max_delay by @logStream``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from fleet_remediation.contract.signal_settings import MatchKind as MatchKind
from fleet_remediation.contract.signal_settings import SignalDefinition as SignalDefinition
from fleet_remediation.contract.signal_settings import SignalSettings as SignalSettings

# The alias suffix of a summary field's sum in an Insights ``stats`` (``SignalCatalog.tts_sums``).
SUMMED_SUFFIX = "_summed"
# The per-task TTS counts, in the order ``tts_sums`` and ``tts_totals`` give them.
TTS_COUNTS = ("responses", "first_frames", "timeouts", "late_frames")
# The key of the agent package's lines naming the TTS endpoint (provider and region) a task's
# responses used: a group the product cannot see in ECS (decision 0015).
TTS_ENDPOINT_FIELD = "tts_endpoint"
# Every column ``tts_sums`` may return (a piece-wise read sums each of them).
TTS_COLUMNS = tuple(column for name in TTS_COUNTS for column in (name, name + SUMMED_SUFFIX))


@dataclass(frozen=True)
class Signal:
    """One signal. ``metric_name`` is the CloudWatch metric its metric filter feeds."""

    name: str
    metric_name: str
    field: str
    text: str
    match: MatchKind
    value_field: str | None = None
    summary_text: str | None = None
    summary_field: str | None = None

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

    def summary_filter_pattern(self) -> str | None:
        """The agent package's summary lines that count this signal (at least once: a zero publishes
        nothing); the metric filter's value is ``summary_metric_value()``, so the metric sums them."""
        if self.summary_text is None or self.summary_field is None:
            return None
        return f'{{ $.message = "{self.summary_text}" && $.{self.summary_field} >= 1 }}'

    def summary_metric_value(self) -> str | None:
        return f"$.{self.summary_field}" if self.summary_field else None

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

    def insights_sums(self, alias: str) -> list[str]:
        """The aggregates that count this signal in a ``stats`` command: its own lines as ``alias``,
        the summaries' field as ``alias``_summed (add the two: ``total``)."""
        sums = [f'sum(strcontains({self.field}, "{self.text}")) as {alias}']
        if self.summary_field is not None:
            sums.append(f"sum({self.summary_field}) as {alias}{SUMMED_SUFFIX}")
        return sums

    # --- offline evaluator (exported log events) -----------------------------------------------------
    def count(self, record: Mapping[str, Any]) -> int:
        """What one parsed line adds to this signal's count: 1 for its own line, the summary's field
        when it is a whole number of at least 1 (what the summary metric filter publishes), else 0."""
        if self.matches(record):
            return 1
        if self.summary_field is None or record.get("message") != self.summary_text:
            return 0
        raw = record.get(self.summary_field)
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw) or raw < 1:
            return 0
        return int(raw)

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
    late_first_frame: Signal
    summary_text: str = "agent_tts_summary"

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
                summary_text=settings.summary_text if definition.summary_field else None,
                summary_field=definition.summary_field,
            )

        return cls(
            slow_vad=build("slow_vad", "SlowVadInferences", settings.slow_vad),
            response_started=build("response_started", "AgentResponsesStarted", settings.response_started),
            first_audio_frame=build("first_audio_frame", "TtsFirstAudioFrames", settings.first_audio_frame),
            first_audio_timeout=build(
                "first_audio_timeout", "TtsFirstAudioTimeouts", settings.first_audio_timeout
            ),
            late_first_frame=build("late_first_frame", "TtsLateFirstAudioFrames", settings.late_first_frame),
            summary_text=settings.summary_text,
        )

    @classmethod
    def default(cls) -> SignalCatalog:
        return cls.from_settings(SignalSettings())

    def __iter__(self) -> Iterator[Signal]:
        return iter((self.slow_vad, *self.tts_signals))

    @property
    def tts_signals(self) -> tuple[Signal, Signal, Signal, Signal]:
        """In ``TTS_COUNTS`` order."""
        return (
            self.response_started,
            self.first_audio_frame,
            self.first_audio_timeout,
            self.late_first_frame,
        )

    # --- one row of TTS counts (every query that counts responses, frames and timeouts) -----------
    def tts_selector(self) -> str:
        """The Insights condition selecting every line that counts towards a TTS count."""
        own = [signal.insights_filter().removeprefix("filter ") for signal in self.tts_signals]
        if any(signal.summary_field for signal in self.tts_signals):
            own.append(f'message = "{self.summary_text}"')
        return " or ".join(own)

    def tts_sums(self) -> str:
        """The aggregates of a ``stats`` command counting ``TTS_COUNTS`` (read back with ``tts_totals``)."""
        return ", ".join(
            expression
            for signal, alias in zip(self.tts_signals, TTS_COUNTS, strict=True)
            for expression in signal.insights_sums(alias)
        )

    @staticmethod
    def tts_totals(row: Mapping[str, str]) -> tuple[int, int, int, int]:
        """``TTS_COUNTS`` from one result row of ``tts_sums`` (a sum over no value reads empty: 0).
        A non-numeric value raises ValueError."""

        def number(key: str) -> int:
            raw = row.get(key) or "0"
            try:
                return int(float(raw))
            except (ValueError, OverflowError):  # "nan" and "inf" are floats, no count
                raise ValueError(f"non-numeric {key}: {raw!r}") from None

        totals = [number(alias) + number(alias + SUMMED_SUFFIX) for alias in TTS_COUNTS]
        return totals[0], totals[1], totals[2], totals[3]

    def tts_counts(self, record: Mapping[str, Any]) -> tuple[int, int, int, int]:
        """Offline: what one parsed line adds to each of ``TTS_COUNTS``."""
        counts = [signal.count(record) for signal in self.tts_signals]
        return counts[0], counts[1], counts[2], counts[3]


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
