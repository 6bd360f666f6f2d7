"""The metric-filter pattern, the Logs Insights filter and the offline evaluator of each signal
agree on the same lines, written as livekit-agents' JsonFormatter writes them."""

from __future__ import annotations

import json
import logging

import pytest
from livekit.agents.cli.log import JsonFormatter
from pydantic import ValidationError

from fleet_remediation.contract.detection import DetectionConfig
from fleet_remediation.contract.signals import SignalCatalog, SignalDefinition, SignalSettings
from tests.metric_filter_pattern import insights_filter_matches, pattern_matches


def agent_line(logger_name: str, message: str, level: int = logging.INFO, **extra: object) -> str:
    """A real production log line: the agents' own JsonFormatter formats a real LogRecord."""
    record = logging.LogRecord(logger_name, level, "/app/agent.py", 42, message, None, None)
    record.__dict__.update(extra)
    return JsonFormatter().format(record)


SAMPLES = {
    "silero": agent_line(
        "livekit.plugins.silero",
        "inference is slower than realtime",
        logging.WARNING,
        delay=12.5,
        job_id="AJ_1",
        pid=720,
    ),
    "agents_vad": agent_line(
        "livekit.agents", "VAD inference is slower than realtime", logging.WARNING, delay=0.31
    ),
    "vad_without_delay": agent_line("livekit.plugins.silero", "inference is slower than realtime"),
    "response": agent_line("ppi-agent", "agent_response_started", job_id="AJ_2"),
    "first_frame": agent_line("ppi-agent", "tts_node_first_audio_frame", job_id="AJ_2"),
    "similar_event": agent_line("ppi-agent", "agent_response_started_late", job_id="AJ_2"),
    "job_request": agent_line(
        "livekit.agents", "received job request", job_id="AJ_2", room="lesson-1", room_id="RM_1"
    ),
    "not_json": "Traceback (most recent call last): inference is slower than realtime",
}

EXPECTED = {
    "slow_vad": {"silero", "agents_vad", "vad_without_delay"},
    "response_started": {"response"},
    "first_audio_frame": {"first_frame"},
}


def test_sample_lines_have_the_real_shape() -> None:
    line = json.loads(SAMPLES["silero"])
    assert {"message", "level", "name", "pid", "timestamp", "delay", "job_id"} <= line.keys()
    assert line["name"] == "livekit.plugins.silero"


@pytest.mark.parametrize("signal_name", sorted(EXPECTED))
def test_pattern_query_and_evaluator_agree(signal_name: str) -> None:
    signal = getattr(SignalCatalog.default(), signal_name)
    for sample, line in SAMPLES.items():
        expected = sample in EXPECTED[signal_name]
        record = json.loads(line) if line.startswith("{") else {}
        assert pattern_matches(signal.metric_filter_pattern(), line) is expected, sample
        assert insights_filter_matches(signal.insights_filter(), record) is expected, sample
        assert signal.matches(record) is expected, sample


def test_delay_value_pattern_and_evaluator_agree() -> None:
    slow_vad = SignalCatalog.default().slow_vad
    pattern = slow_vad.value_filter_pattern()
    assert pattern is not None
    for sample, line in SAMPLES.items():
        record = json.loads(line) if line.startswith("{") else {}
        carries_delay = sample in {"silero", "agents_vad"}
        assert pattern_matches(pattern, line) is carries_delay, sample
        assert (slow_vad.value(record) is not None) is carries_delay, sample
    assert slow_vad.value(json.loads(SAMPLES["silero"])) == 12.5
    assert slow_vad.value_metric_name == "SlowVadInferencesDelay"


def test_default_texts_and_patterns() -> None:
    catalog = SignalCatalog.default()
    assert catalog.slow_vad.metric_filter_pattern() == '{ $.message = "*inference is slower than realtime*" }'
    assert catalog.slow_vad.insights_filter() == 'filter message like "inference is slower than realtime"'
    assert catalog.response_started.metric_filter_pattern() == '{ $.message = "agent_response_started" }'
    assert catalog.slow_vad.insights_query("stats count(*) by @logStream") == (
        'filter message like "inference is slower than realtime"\n| stats count(*) by @logStream'
    )


def test_event_names_and_fields_are_configurable_per_environment() -> None:
    config = DetectionConfig.model_validate(
        {"signals": {"first_audio_frame": {"field": "event", "text": "tts_first_frame"}}}
    )
    frame = config.catalog().first_audio_frame
    line = json.dumps({"message": "tts", "event": "tts_first_frame", "job_id": "AJ_3"})
    assert frame.metric_filter_pattern() == '{ $.event = "tts_first_frame" }'
    assert pattern_matches(frame.metric_filter_pattern(), line)
    assert insights_filter_matches(frame.insights_filter(), json.loads(line))
    assert frame.matches(json.loads(line))


@pytest.mark.parametrize(
    ("definition", "field"),
    [
        ({"text": 'say "hi"'}, "text"),
        ({"text": "a*b"}, "text"),
        ({"text": "x", "field": "code.file.path"}, "field"),
        ({"text": "x", "match": "regex"}, "match"),
    ],
)
def test_definitions_that_would_break_a_pattern_are_rejected(definition: dict[str, str], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        SignalDefinition.model_validate(definition)
    assert caught.value.errors()[0]["loc"][0] == field


def test_tts_pair_must_be_distinguishable() -> None:
    with pytest.raises(ValidationError, match="must not contain"):
        SignalSettings.model_validate(
            {"response_started": {"text": "tts"}, "first_audio_frame": {"text": "tts_first"}}
        )
