"""Backtest the detection alarms on exported agent log events.

    lkfr backtest --log tests/fixtures/incident-2026-09-15.jsonl --env prod --config environments.json

Reads events as ``aws logs filter-log-events`` writes them (one JSON event per line, or the
``{"events": [...]}`` document), evaluates the signals minute by minute with the same definitions
the metric filters use, applies the alarms exactly as the CDK stack defines them (one model,
``DetectionConfig``, from the environment's ``detection`` section of the environments file), and prints a
minute-by-minute table, when each alarm would have fired, the detection latency counted from the
first failing session, how many sessions would still have failed, and what the TTS-reach responder
would have concluded at that moment.

Alarm timing is the end of the breaching minute; CloudWatch adds its own ingestion and evaluation
delay (typically one to three minutes), which the figures do not include.

Exit status: 0 when the backtest ran, 2 on unreadable input (a missing or malformed log, an unknown
environment or an invalid configuration), with a one-line error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from fleet_remediation.contract.detection import DetectionConfig
from fleet_remediation.contract.models import describe_validation_error
from livekit_fleet_remediation.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    CommandFailed,
    Configuration,
    UsageError,
    add_common,
    config_file,
    configuration,
    load_context,
)
from livekit_fleet_remediation.cli.examples import add_example, use_example
from livekit_fleet_remediation.offline.backtest import BacktestResult, run_backtest
from livekit_fleet_remediation.offline.log_export import UnreadableLogError, load_events
from tts_reach_alarm.transition import analysis_window_minutes


def load_detection(
    path: Path | None, env: str | None, source: Configuration | None = None
) -> DetectionConfig:
    """Only the environment's ``detection`` section: a backtest needs no LiveKit or AWS settings.
    ``source``: a configuration already read (``--stack``, ``--app``), else the file at ``path``."""
    if source is None:
        config_path = config_file(path)
        source = Configuration(str(config_path), load_context(config_path)["environments"], config_path)
    env = source.choose(env)
    try:
        return DetectionConfig.model_validate(source.environments[env].get("detection", {}))
    except ValidationError as exc:
        detail = describe_validation_error(exc, prefix=f"environments.{env}.detection.")
        raise UsageError(f"{source.where}: invalid configuration: {detail}") from None


def document(result: BacktestResult) -> dict[str, Any]:
    """``--json``: each alarm's transitions and the responder's verdicts, times in UTC."""
    return {
        "transitions": [
            {"alarm": t.alarm, "state": t.state, "at": t.at.isoformat()} for t in result.transitions()
        ],
        "failing_sessions": len(result.failing_lessons),
        "verdicts": [
            {
                "at": at.isoformat(),
                "reason": verdict.reason,
                "concentrated": verdict.concentrated,
                "suspect_stream": verdict.top.log_stream if verdict.concentrated and verdict.top else None,
            }
            for at, verdict in result.verdicts
        ],
    }


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
    _write_outcome(result, config, out)


def _write_outcome(result: BacktestResult, config: DetectionConfig, out: TextIO) -> None:
    """When each alarm fires against the first failing session, and the responder's verdicts."""
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


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="lkfr backtest", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_example(found)
    add_common(found)
    found.add_argument("--json", action="store_true", help="one JSON document instead of the table")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    use_example(args)
    try:
        source = configuration(args) if args.stack or args.app else None
        config = load_detection(args.config, args.env, source)
        events = load_events(args.log)
    except (UsageError, UnreadableLogError, CommandFailed) as exc:
        sys.stderr.write(f"backtest: error: {exc}\n")
        return EXIT_USAGE
    result = run_backtest(events, config)
    if args.json:
        json.dump(document(result), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render(result, config, sys.stdout)
    return EXIT_OK
