"""The emitter's texts are the detection's: livekit_fleet_agent ships in the agent image without the
Lambda layer, so it keeps its own copy of the default texts, held equal to the catalog here."""

from __future__ import annotations

import inspect

import pytest

from fleet_remediation.contract.signals import MatchKind, SignalCatalog
from livekit_fleet_agent import (
    FIRST_AUDIO_FRAME_TEXT,
    FIRST_AUDIO_TIMEOUT_TEXT,
    RESPONSE_STARTED_TEXT,
    SignalEmitter,
)

EMITTED = {
    "response_started": RESPONSE_STARTED_TEXT,
    "first_audio_frame": FIRST_AUDIO_FRAME_TEXT,
    "first_audio_timeout": FIRST_AUDIO_TIMEOUT_TEXT,
}


def test_the_emitter_defaults_are_the_catalog_texts() -> None:
    catalog = SignalCatalog.default()
    defaults = inspect.signature(SignalEmitter.__init__).parameters
    for name, text in EMITTED.items():
        signal = getattr(catalog, name)
        assert signal.text == text
        assert defaults[f"{name}_text"].default == text


@pytest.mark.parametrize("name", sorted(EMITTED))
def test_a_line_with_the_emitted_message_is_its_signal_and_no_other(name: str) -> None:
    # The emitter writes the text as the record's message: the catalog must read that field, and
    # match the text as written.
    catalog = SignalCatalog.default()
    line = {"message": EMITTED[name], "level": "INFO", "name": "livekit_fleet_agent.signals"}
    signal = getattr(catalog, name)
    assert signal.field == "message"
    assert signal.match is MatchKind.EXACT
    assert [s.name for s in catalog if s.matches(line)] == [name]


@pytest.mark.parametrize("seconds", [0.0, -1.0])
def test_the_timeout_must_be_positive(seconds: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        SignalEmitter(object(), first_audio_timeout_seconds=seconds, job_fields={})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "texts",
    [
        {"response_started_text": ""},
        {"first_audio_frame_text": RESPONSE_STARTED_TEXT},
        {"first_audio_timeout_text": FIRST_AUDIO_FRAME_TEXT},
    ],
)
def test_the_texts_must_be_distinct_and_not_empty(texts: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="distinct"):
        SignalEmitter(object(), job_fields={}, **texts)  # type: ignore[arg-type]


def test_the_summary_text_and_fields_are_the_catalogs() -> None:
    from fleet_remediation.contract.signals import TTS_ENDPOINT_FIELD as CATALOG_ENDPOINT_FIELD
    from livekit_fleet_agent.detection_signals import SUMMARY_TEXT, TTS_ENDPOINT_FIELD

    catalog = SignalCatalog.default()
    assert catalog.summary_text == SUMMARY_TEXT
    assert TTS_ENDPOINT_FIELD == CATALOG_ENDPOINT_FIELD
    # The summary's count keys (``_Counts.fields``) are the catalog's summary fields.
    assert {"responses", "first_frames", "late_frames"} == {
        s.summary_field for s in catalog.tts_signals if s.summary_field
    }
