"""The detection alarms evaluated over exported agent log events, minute by minute, as the stack
defines them (one model, ``DetectionConfig``): the engine of ``lkfr backtest`` and of the replay's alarms.

Alarm timing is the end of the breaching minute; CloudWatch adds its own ingestion and evaluation
delay (typically one to three minutes), which the figures do not include.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from fleet_remediation.contract.alarm_math import MinuteCounts, evaluate_alarm
from fleet_remediation.contract.detection import DetectionConfig
from fleet_remediation.contract.events import TimeWindow
from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.contract.signals import SignalCatalog
from fleet_remediation.domain.job_outcomes import JobOutcome, JobOutcomeCounter
from livekit_fleet_remediation.offline.insights import OfflineLogsInsights
from livekit_fleet_remediation.offline.log_export import LogEvent
from tts_reach_alarm.analysis import Concentration
from tts_reach_alarm.investigation import investigate
from tts_reach_alarm.transition import analysis_window_minutes

MINUTE = timedelta(minutes=1)


@dataclass(kw_only=True)
class Minute(MinuteCounts):
    """One minute's metric-filter counts (what the alarms read), and when it starts."""

    start: datetime


def bucket(events: Sequence[LogEvent], catalog: SignalCatalog) -> list[Minute]:
    if not events:
        return []
    first = events[0].at.replace(second=0, microsecond=0)
    last = events[-1].at.replace(second=0, microsecond=0)
    minutes = [Minute(start=first + i * MINUTE) for i in range(int((last - first) / MINUTE) + 1)]
    for event in events:
        minute = minutes[int((event.at - first) / MINUTE)]
        if catalog.slow_vad.matches(event.record):
            minute.vad_warnings += 1
            delay = catalog.slow_vad.value(event.record)
            if delay is not None:
                minute.vad_max_delay = max(minute.vad_max_delay or 0.0, delay)
        minute.responses += catalog.response_started.count(event.record)
        minute.first_frames += catalog.first_audio_frame.count(event.record)
        minute.first_audio_timeouts += catalog.first_audio_timeout.matches(event.record)
    return minutes


@dataclass
class Lesson:
    job_id: str
    stream: str
    started: datetime | None = None
    room: str | None = None
    outcome: JobOutcome | None = None

    @property
    def responses(self) -> int:
        return self.outcome.responses if self.outcome else 0

    @property
    def first_frames(self) -> int:
        return self.outcome.first_frames if self.outcome else 0

    @property
    def failed(self) -> bool:
        return self.outcome is not None and self.outcome.failed


def lessons(events: Iterable[LogEvent], catalog: SignalCatalog) -> dict[str, Lesson]:
    """Every job in the log, judged by the responder's own job-outcome evaluator."""
    found: dict[str, Lesson] = {}
    counter = JobOutcomeCounter(catalog)
    for event in events:
        job_id = event.record.get("job_id")
        if not isinstance(job_id, str):
            continue
        lesson = found.setdefault(job_id, Lesson(job_id, event.stream))
        if event.record.get("message") == "received job request":
            lesson.started, lesson.room = event.at, event.record.get("room")
        counter.add(event.stream, event.record)
    for outcome in counter.outcomes():
        found[outcome.job_id].outcome = outcome
    return found


# The responder's settings off AWS: only its detection section matters to the investigation.
OFFLINE = "offline"
# Offline queries answer at once; the bound only keeps the responder's deadline arithmetic real.
OFFLINE_QUERY_SECONDS = 60.0


def offline_responder_settings(config: DetectionConfig) -> TtsReachSettings:
    return TtsReachSettings.model_validate(
        {
            "environment_name": OFFLINE,
            "mode_parameter_name": f"/{OFFLINE}/mode",
            "notification_topic_arn": f"arn:aws:sns:{OFFLINE}:000000000000:{OFFLINE}",
            "runbook_base_url": "https://runbooks.invalid/",
            "aws_region": OFFLINE,
            "agent_log_group": OFFLINE,
            "idempotency_table_name": OFFLINE,
            "detection": config,
        }
    )


def responder_view(events: Sequence[LogEvent], config: DetectionConfig, end: datetime) -> Concentration:
    """What tts_reach_alarm concludes on an ALARM at ``end``: its own window and investigation, its
    Logs Insights queries answered over the same events."""
    window = TimeWindow(start=end - timedelta(minutes=analysis_window_minutes(config)), end=end)
    insights = OfflineLogsInsights(events, config.catalog())
    findings = investigate(
        window, offline_responder_settings(config), insights, time.monotonic() + OFFLINE_QUERY_SECONDS
    )
    return findings.concentration


@dataclass(frozen=True)
class AlarmTransition:
    alarm: str  # "vad" or "tts_reach"
    state: str  # "ALARM" or "OK"
    at: datetime  # the end of the minute whose evaluation changed the state


@dataclass
class BacktestResult:
    minutes: list[Minute]
    vad_breaching: list[bool]
    vad_alarm: list[bool]
    tts_breaching: list[bool]
    tts_alarm: list[bool]
    lessons: dict[str, Lesson]
    # The responder's verdict at every ALARM of the TTS-reach alarm, in time order.
    verdicts: list[tuple[datetime, Concentration]] = field(default_factory=list)

    def transitions(self) -> list[AlarmTransition]:
        """Every state change of both alarms (each starts OK), in time order."""
        found: list[AlarmTransition] = []
        for alarm, states in (("vad", self.vad_alarm), ("tts_reach", self.tts_alarm)):
            previous = False
            for minute, state in zip(self.minutes, states, strict=True):
                if state != previous:
                    found.append(AlarmTransition(alarm, "ALARM" if state else "OK", minute.start + MINUTE))
                    previous = state
        return sorted(found, key=lambda t: t.at)

    def first_alarm(self, states: Sequence[bool]) -> datetime | None:
        """When the alarm would first go to ALARM: the end of the minute whose evaluation breaches."""
        for minute, state in zip(self.minutes, states, strict=True):
            if state:
                return minute.start + MINUTE
        return None

    @property
    def failing_lessons(self) -> list[Lesson]:
        return sorted(
            (lesson for lesson in self.lessons.values() if lesson.failed),
            key=lambda lesson: lesson.started or datetime.max.replace(tzinfo=UTC),
        )

    def failed_before(self, moment: datetime | None) -> int:
        """Lessons already placed on the bad worker when remediation could start."""
        failing = self.failing_lessons
        if moment is None:
            return len(failing)
        return sum(1 for lesson in failing if lesson.started is not None and lesson.started < moment)


def run_backtest(events: Sequence[LogEvent], config: DetectionConfig) -> BacktestResult:
    """Both alarms evaluated at the end of every minute, exactly as their definitions deploy."""
    catalog = config.catalog()
    minutes = bucket(events, catalog)
    vad = evaluate_alarm(config.vad_alarm.alarm(), minutes)
    tts = evaluate_alarm(config.tts_reach_alarm.alarm(), minutes)
    result = BacktestResult(
        minutes,
        [breaching for breaching, _ in vad],
        [state for _, state in vad],
        [breaching for breaching, _ in tts],
        [state for _, state in tts],
        lessons(events, catalog),
    )
    result.verdicts = [
        (t.at, responder_view(events, config, t.at))
        for t in result.transitions()
        if t.alarm == "tts_reach" and t.state == "ALARM"
    ]
    return result
