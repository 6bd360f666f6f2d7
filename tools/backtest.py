"""Backtest the detection alarms on exported agent log events.

    .venv/bin/python -m tools.backtest --log tests/fixtures/incident-2026-09-15.jsonl --env prod

Reads events as ``aws logs filter-log-events`` writes them (one JSON event per line, or the
``{"events": [...]}`` document), evaluates the signals minute by minute with the same definitions
the metric filters use, applies the alarms exactly as the CDK stack defines them (one model,
``DetectionConfig``, from the environment's ``detection`` section of cdk.json), and prints a
minute-by-minute table, when each alarm would have fired, the detection latency counted from the
first failing lesson, how many lessons would still have failed, and what the TTS-reach responder
would have concluded at that moment.

Alarm timing is the end of the breaching minute; CloudWatch adds its own ingestion and evaluation
delay (typically one to three minutes), which the figures do not include.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TextIO

REPO_ROOT = Path(__file__).resolve().parent.parent
for _path in (REPO_ROOT / "layers" / "shared" / "python", REPO_ROOT / "functions"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from devkit.log_export import LogEvent, UnreadableLogError, load_events  # noqa: E402
from devkit.offline_insights import OfflineLogsInsights  # noqa: E402
from fleet_remediation.contract.alarm_math import MinuteCounts, evaluate_alarm  # noqa: E402
from fleet_remediation.contract.detection import DetectionConfig  # noqa: E402
from fleet_remediation.contract.events import TimeWindow  # noqa: E402
from fleet_remediation.contract.settings import TtsReachSettings  # noqa: E402
from fleet_remediation.contract.signals import SignalCatalog  # noqa: E402
from fleet_remediation.domain.job_outcomes import JobOutcome, JobOutcomeCounter  # noqa: E402
from tts_reach_alarm.analysis import Concentration  # noqa: E402
from tts_reach_alarm.investigation import investigate  # noqa: E402
from tts_reach_alarm.transition import analysis_window_minutes  # noqa: E402

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
        minute.responses += catalog.response_started.matches(event.record)
        minute.first_frames += catalog.first_audio_frame.matches(event.record)
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


def load_detection(config_path: Path, env: str) -> DetectionConfig:
    document = json.loads(config_path.read_text())
    context = document.get("context", document)
    environments = context.get("environments", {})
    if env not in environments:
        raise SystemExit(
            f"environment {env!r} not in {config_path} (have: {', '.join(sorted(environments))})"
        )
    return DetectionConfig.model_validate(environments[env].get("detection", {}))


def _transitions(result: BacktestResult, alarm: str) -> list[str]:
    return [f"{t.at:%H:%M} {t.state}" for t in result.transitions() if t.alarm == alarm]


def render(result: BacktestResult, config: DetectionConfig, out: TextIO) -> None:
    tts = config.tts_reach_alarm
    out.write(
        f"VAD alarm: {config.vad_alarm.describe()}\n"
        f"TTS reach alarm: {tts.describe()} (evaluated every minute)\n\n"
    )
    window = f"{tts.window_minutes}-min window"
    out.write(f"minute  vad_n  max_delay  vad  VAD    resp  frames  timeouts  {window}  TTS\n")
    rows = zip(
        result.minutes,
        result.vad_breaching,
        result.vad_alarm,
        result.tts_breaching,
        result.tts_alarm,
        strict=True,
    )
    for minute, vad_breach, vad_state, tts_breach, tts_state in rows:
        if not (minute.vad_warnings or minute.responses or vad_state or tts_state):
            continue
        delay = "-" if minute.vad_max_delay is None else f"{minute.vad_max_delay:.1f}"
        out.write(
            f"{minute.start:%H:%M}   {minute.vad_warnings:>4}  {delay:>9}  "
            f"{'X' if vad_breach else '.':>3}  {'ALARM' if vad_state else 'ok':<5}  "
            f"{minute.responses:>4}  {minute.first_frames:>6}  {minute.first_audio_timeouts:>8}  "
            f"{'breaching' if tts_breach else '.':>13}  {'ALARM' if tts_state else 'ok'}\n"
        )
    failing = result.failing_lessons
    first_failure = failing[0].started if failing else None
    out.write(f"\nsessions: {len(result.lessons)} jobs, {len(failing)} failing (responses, no first audio)\n")
    if first_failure:
        out.write(f"first failing session started {first_failure:%H:%M:%S}\n")
    for name, alarm, states in (
        ("VAD", "vad", result.vad_alarm),
        ("TTS reach", "tts_reach", result.tts_alarm),
    ):
        fired = result.first_alarm(states)
        out.write(f"\n{name} alarm transitions: {', '.join(_transitions(result, alarm)) or 'never fired'}\n")
        if fired is None:
            continue
        if first_failure is not None:
            latency = (fired - first_failure).total_seconds() / 60
            out.write(
                f"{name} alarm fires {fired:%H:%M}: {latency:+.1f} min from the first failing session; "
                f"{result.failed_before(fired)} of {len(failing)} failing sessions had started by then\n"
            )
    if result.verdicts:
        out.write(
            f"\ntts_reach_alarm at each ALARM ({analysis_window_minutes(config)} min window, "
            "its Logs Insights queries answered offline):\n"
        )
    for at, verdict in result.verdicts:
        top = verdict.top
        suspect = f"; suspect stream {top.log_stream}" if verdict.concentrated and top else ""
        out.write(f"  {at:%H:%M} {verdict.reason}{suspect}\n")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--log", type=Path, required=True, help="exported events (JSON lines or document)")
    parser.add_argument("--env", required=True, help="environment name in cdk.json")
    parser.add_argument("--config", type=Path, default=REPO_ROOT / "environments.json")
    args = parser.parse_args(argv)
    config = load_detection(args.config, args.env)
    try:
        events = load_events(args.log)
    except UnreadableLogError as exc:
        sys.stderr.write(f"backtest: error: {exc}\n")
        raise SystemExit(2) from None
    render(run_backtest(events, config), config, sys.stdout)


if __name__ == "__main__":
    main()
