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


def test_the_timeout_text_must_be_distinguishable_from_the_pair() -> None:
    with pytest.raises(
        ValidationError, match=r"first_audio_timeout\.text must not contain first_audio_frame\.text"
    ):
        SignalSettings.model_validate(
            {"first_audio_frame": {"text": "tts_frame"}, "first_audio_timeout": {"text": "tts_frame_timeout"}}
        )


# --- the agent package's summary line (decision 0015) ----------------------------------------------
SUMMARIES = {
    "full": agent_line(
        "livekit_fleet_agent.signals",
        "agent_tts_summary",
        job_id="AJ_3",
        room="lesson-3",
        tts_endpoint="tts/eu-west-1",
        responses=4,
        first_frames=3,
        late_frames=1,
    ),
    "no_late": agent_line("livekit_fleet_agent.signals", "agent_tts_summary", responses=2, first_frames=2),
    "zero_frames": agent_line(
        "livekit_fleet_agent.signals", "agent_tts_summary", responses=1, first_frames=0
    ),
    "text_count": agent_line("livekit_fleet_agent.signals", "agent_tts_summary", responses="4"),
    "other_message": agent_line("ppi-agent", "agent_tts_summary_v2", responses=5),
}


@pytest.mark.parametrize("signal_name", ["response_started", "first_audio_frame", "late_first_frame"])
def test_summary_filter_metric_value_and_evaluator_agree(signal_name: str) -> None:
    """The summary metric filter publishes ``$.<field>`` on the lines its pattern matches: summed,
    that is the offline count, line for line (the pattern read by the independent evaluator)."""
    signal = getattr(SignalCatalog.default(), signal_name)
    pattern, value = signal.summary_filter_pattern(), signal.summary_metric_value()
    assert pattern is not None
    assert value is not None
    field = value.removeprefix("$.")
    for sample, line in {**SAMPLES, **SUMMARIES}.items():
        record = json.loads(line) if line.startswith("{") else {}
        published = record[field] if pattern_matches(pattern, line) else 0
        own = 1 if pattern_matches(signal.metric_filter_pattern(), line) else 0
        assert signal.count(record) == published + own, sample


def test_a_summary_counts_by_its_fields_and_a_per_response_line_counts_one() -> None:
    catalog = SignalCatalog.default()
    assert catalog.tts_counts(json.loads(SUMMARIES["full"])) == (4, 3, 0, 1)
    assert catalog.tts_counts(json.loads(SUMMARIES["zero_frames"])) == (1, 0, 0, 0)
    assert catalog.tts_counts(json.loads(SUMMARIES["text_count"])) == (0, 0, 0, 0)
    assert catalog.tts_counts(json.loads(SAMPLES["response"])) == (1, 0, 0, 0)
    assert catalog.response_started.summary_filter_pattern() == (
        '{ $.message = "agent_tts_summary" && $.responses >= 1 }'
    )


def test_insights_rows_add_the_line_counts_and_the_summed_fields() -> None:
    catalog = SignalCatalog.default()
    sums = catalog.tts_sums()
    assert 'sum(strcontains(message, "agent_response_started")) as responses' in sums
    assert "sum(responses) as responses_summed" in sums
    assert "sum(late_frames) as late_frames_summed" in sums
    assert 'message = "agent_tts_summary"' in catalog.tts_selector()
    row = {"responses": "2", "responses_summed": "5", "first_frames": "", "timeouts": "1"}
    assert catalog.tts_totals(row) == (7, 0, 1, 0)
    with pytest.raises(ValueError, match="non-numeric timeouts_summed"):
        catalog.tts_totals({"timeouts_summed": "x"})


def test_a_team_with_its_own_per_response_lines_leaves_the_summary_out() -> None:
    settings = SignalSettings(
        response_started=SignalDefinition(field="event", text="reply_started"),
        first_audio_frame=SignalDefinition(field="event", text="tts_first_chunk"),
    )
    catalog = SignalCatalog.from_settings(settings)
    assert catalog.response_started.summary_filter_pattern() is None
    assert "sum(responses)" not in catalog.tts_sums()
    assert catalog.tts_counts(json.loads(SUMMARIES["full"]))[:2] == (0, 0)
    assert catalog.tts_counts({"event": "reply_started"}) == (1, 0, 0, 0)
