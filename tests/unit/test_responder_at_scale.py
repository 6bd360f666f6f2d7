"""The responder at 1,000 tasks: its per-job read cannot take the window (the smallest time piece
still holds more than its row limit), so it reads one row per task and judges them with the
drainer's verdict: conclusive — the silent task, or the group — instead of "no decision".
Logs Insights is the offline evaluator over exported log events (the queries' own semantics)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from fleet_remediation.contract.events import TimeWindow
from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.core.errors import DeadlineExceededError
from fleet_remediation.core.messages import render_email
from fleet_remediation.core.report import ReportBuilder
from livekit_fleet_remediation.offline.insights import OfflineLogsInsights
from livekit_fleet_remediation.offline.log_export import LogEvent
from tts_reach_alarm.analysis import MAX_JOBS, Verdict
from tts_reach_alarm.investigation import investigate
from tts_reach_alarm.messages import compose_alarm_notification
from tts_reach_alarm.transition import Transition
from tts_reach_alarm.work import Look, ResponderStages

END = datetime(2026, 12, 2, 8, 0, tzinfo=UTC)
TASKS = 1000
SETTINGS = TtsReachSettings.model_validate(
    {
        "environment_name": "it",
        "mode_parameter_name": "/m",
        "notification_topic_arn": "arn:aws:sns:eu-west-1:123456789012:t",
        "runbook_base_url": "https://runbooks.example.com/repo",
        "aws_region": "eu-west-1",
        "agent_log_group": "/ppi/livekit/it/agent",
        "idempotency_table_name": "once",
    }
)


def _fleet(silent: set[int], endpoint_of: dict[int, str] | None = None) -> list[LogEvent]:
    """Six jobs a task, each one summary line in the same second (no time piece can split them);
    a silent task's answers all time out."""
    at = END - timedelta(minutes=1)
    events = []
    for task in range(TASKS):
        stream = f"agent/a/t{task}"
        endpoint = (endpoint_of or {}).get(task, "tts/eu-west-1")
        for job in range(6):
            frames = 0 if task in silent else 2
            summary = {"message": "agent_tts_summary", "job_id": f"AJ_{task}_{job}", "tts_endpoint": endpoint}
            events.append(LogEvent(stream, at, summary | {"responses": 2, "first_frames": frames}))
            if task in silent:
                timeout = {"message": "tts_first_audio_timeout", "job_id": f"AJ_{task}_{job}"}
                events += [LogEvent(stream, at, timeout | {"tts_endpoint": endpoint})] * 2
    return events


def _investigate(events: list[LogEvent]) -> object:
    insights = OfflineLogsInsights(events, SETTINGS.detection.catalog())
    window = TimeWindow(start=END - timedelta(minutes=32), end=END)
    return investigate(window, SETTINGS, insights, time.monotonic() + 60)


def test_one_silent_task_among_a_thousand_is_named_from_per_task_rows() -> None:
    findings = _investigate(_fleet({7}))
    assert findings.truncated  # 6,000 jobs in one second against MAX_JOBS
    assert TASKS * 6 > MAX_JOBS
    assert findings.concentration.verdict is Verdict.CONCENTRATED
    assert findings.concentration.top is not None
    assert findings.concentration.top.log_stream == "agent/a/t7"


def test_a_failing_tts_endpoint_at_scale_is_a_group_and_names_nobody() -> None:
    failing = set(range(0, 60, 10))  # six tasks, all on the endpoint that fails
    findings = _investigate(_fleet(failing, {task: "tts/us-east-1" for task in range(0, 100, 10)}))
    assert findings.truncated
    assert findings.concentration.verdict is Verdict.GROUP
    assert findings.concentration.top is None
    assert "TTS endpoint tts/us-east-1" in findings.concentration.reason


class _Slow:
    """The Insights stand-in whose next queries no longer fit the read's deadline: the per-job read's
    halving at scale runs out of time after ``answered`` queries."""

    def __init__(self, events: list[LogEvent], answered: int) -> None:
        self.inner, self.answered = OfflineLogsInsights(events, SETTINGS.detection.catalog()), answered

    def run_query(
        self, log_group: str, query: str, start: datetime, end: datetime, deadline: float
    ) -> object:
        if "by job_id, @logStream" in query and self.answered <= 0:
            raise DeadlineExceededError("no time left to start a Logs Insights query", resource=log_group)
        self.answered -= 1
        return self.inner.run_query(log_group, query, start, end, deadline)


def test_a_per_job_read_out_of_time_while_halving_turns_to_the_per_task_rows() -> None:
    window = TimeWindow(start=END - timedelta(minutes=32), end=END)
    slow = _Slow(_fleet({7}), answered=1)  # the whole window, at the row limit, then no time
    findings = investigate(window, SETTINGS, slow, time.monotonic() + 60)  # type: ignore[arg-type]
    assert findings.truncated
    assert findings.concentration.top is not None
    assert findings.concentration.top.log_stream == "agent/a/t7"


def test_a_per_job_read_out_of_time_before_any_result_is_no_decision() -> None:
    window = TimeWindow(start=END - timedelta(minutes=32), end=END)
    with pytest.raises(DeadlineExceededError):
        investigate(window, SETTINGS, _Slow(_fleet({7}), answered=0), time.monotonic() + 60)  # type: ignore[arg-type]


def test_a_healthy_fleet_at_scale_names_nobody() -> None:
    findings = _investigate(_fleet(set()))
    assert findings.concentration.verdict is Verdict.INCONCLUSIVE
    assert not findings.concentration.concentrated


def test_the_responders_group_verdict_sends_no_suspect_and_its_page_names_the_group() -> None:
    """The responder's path to the drainer: a group names no suspect, so no suspect-worker event
    leaves (``work.ResponderStages.decide``), and the page says which group fails and that nothing is
    drained."""
    failing = set(range(0, 60, 10))
    findings = _investigate(_fleet(failing, {task: "tts/us-east-1" for task in range(0, 100, 10)}))
    window = TimeWindow(start=END - timedelta(minutes=32), end=END)
    run = SimpleNamespace(event=Transition("ALARM", window, None), deps=SimpleNamespace(settings=SETTINGS))
    assert ResponderStages().decide(run, Look(findings)) is None  # type: ignore[arg-type]
    report = ReportBuilder("tts_reach_alarm", "inv-1")
    note = compose_alarm_notification(findings, run.event, None, SETTINGS, report.facts())
    subject, body = render_email(note)
    assert "(group event: TTS endpoint=tts/us-east-1); nothing drained" in subject
    assert "group event: 6 of the 10 tasks with TTS endpoint tts/us-east-1 fail" in body
    assert "drain nobody" in body
