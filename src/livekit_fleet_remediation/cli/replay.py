"""Replay the whole loop over exported agent logs, in simulated time: what would have happened.

    lkfr replay --log events.json --env prod --config environments.json [--json] [--html out.html] [--mode M]

It evaluates the detection alarms minute by minute, routes their transitions and the schedules to
the three functions as the stack's EventBridge rules do, and runs the functions' own code against a
world simulated from the log (``livekit_fleet_remediation.offline.replay`` says what is real and what
is simulated). It prints a timeline (alarms, the responder's verdicts, the actions with their
reasons) and a counterfactual: the failed sessions that would have been spared.

Exit status: 0 when the replay ran, 2 on unreadable input (a missing or malformed log, an unknown
environment or an invalid configuration), with a one-line error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TextIO

from fleet_remediation.contract.naming import task_id_from_log_stream
from fleet_remediation.core.errors import ConfigurationError
from fleet_remediation.core.report_model import Mode
from livekit_fleet_remediation.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    CommandFailed,
    Configuration,
    InvalidConfig,
    UsageError,
    add_common,
    config_file,
    configuration,
    load_config,
)
from livekit_fleet_remediation.cli.examples import add_example, use_example
from livekit_fleet_remediation.offline.delay_profiles import PROFILES, profile_named
from livekit_fleet_remediation.offline.log_export import UnreadableLogError, load_events
from livekit_fleet_remediation.offline.replay import Replay, UnreadableInput
from livekit_fleet_remediation.offline.replay_model import SIMULATED_PARTS, ReplayResult


def replay(
    log: Path,
    env_name: str,
    config_path: Path | None,
    mode: Mode = Mode.ENFORCE,
    progress: TextIO | None = None,
    profile: str = "aws",
    seed: int = 1,
    source: Configuration | None = None,
) -> ReplayResult:
    """The replay of ``log`` under the named delay profile (``none``: instant), its draws seeded.
    ``source``: a configuration already read (``--stack``, ``--app``), else the file at ``config_path``."""
    try:
        if source is None:
            chosen = config_file(config_path)
            where, config = str(chosen), load_config(chosen, env_name)
        else:
            where = source.where
            env_name, config = source.load(env_name or None)
    except (UsageError, InvalidConfig, CommandFailed) as exc:
        raise UnreadableInput(str(exc)) from None
    try:
        events = load_events(log)
    except UnreadableLogError as exc:
        raise UnreadableInput(str(exc)) from None
    try:
        engine = Replay(events, env_name, config, mode, str(log), progress, profile_named(profile), seed)
    except ConfigurationError as exc:
        raise UnreadableInput(f"{where}: {exc.message}") from None
    return engine.run()


def render_text(result: ReplayResult, out: TextIO) -> None:
    assert result.lessons is not None
    out.write(
        f"Replay of {result.log}: {result.events} events on {result.streams} log streams, "
        f"{result.start:%Y-%m-%d %H:%M}-{result.end:%H:%M} UTC; environment {result.env_name}, "
        f"kill switch {result.mode.value} (simulated)\n"
        "Real: the stack's EventBridge routing; zombie_reaper run_reaper, tts_reach_alarm run_tts_reach, "
        "worker_drainer run_drainer (their routers, decisions, executors and reports).\n"
        f"Simulated: {'; '.join(SIMULATED_PARTS)}.\n"
        f"{result.delays}\n"
    )
    for warning in result.warnings:
        out.write(f"warning: {warning}\n")
    counts: dict[str, int] = {}
    for invocation in result.invocations:
        counts[invocation.function] = counts.get(invocation.function, 0) + 1
    out.write(
        "Invocations: " + ", ".join(f"{name} {count}" for name, count in sorted(counts.items())) + "\n\n"
    )
    _write_timeline(result, out)
    _write_sessions(result, out)


def _write_timeline(result: ReplayResult, out: TextIO) -> None:
    """Alarms, verdicts, actions and notes, by time (at one minute: alarm, verdict, action, notify)."""
    rows: list[tuple[datetime, int, str, str]] = []
    for alarm in result.alarms:
        rows.append((alarm.at, 0, alarm.state, alarm.alarm))
    for verdict in result.verdicts:
        p = "" if verdict.p_value is None else f" p={verdict.p_value:.3g}"
        suspect = f" -> suspect task {verdict.suspect}" if verdict.suspect else ""
        rows.append((verdict.at, 1, "tts_reach_alarm", f"verdict{p}: {verdict.reason}{suspect}"))
    for action in result.actions:
        text = f"{action.action} {action.target}: {action.reason}"
        rows.append((action.at, 2 if action.action != "notify" else 3, action.function, text))
    for note in result.notes:
        rows.append((note.at, 2, note.function, note.text))
    for at, _, who, text in sorted(rows, key=lambda row: (row[0], row[1])):
        out.write(f"{at:%H:%M:%S}  {who:<16} {text}\n")


def _write_sessions(result: ReplayResult, out: TextIO) -> None:
    """The counterfactual: the failed sessions, which ones the actions spared, and what it assumes."""
    outcome = result.lessons
    assert outcome is not None
    out.write(
        f"\nSessions: {outcome.total} jobs; {len(outcome.failed)} failed in the log (responses, no first "
        f"audio); {outcome.failed_after_remediation} would still have failed; {len(outcome.spared)} spared.\n"
        "Model: a failed session is spared only when its job request reached its worker after that worker "
        "was taken out of rotation (a step the step table marks takes_out: LiveKit would have placed it on "
        "another, healthy worker); every other failed session still fails.\n"
    )
    for task, since, minutes in result.rotation_latency():
        after = "" if minutes is None else f", {minutes:.1f} min after its first failed session started"
        out.write(f"Out of rotation: {task} from {since:%H:%M:%S}{after}.\n")
    for lesson in outcome.spared:
        spans = result.out_of_rotation.get(task_id_from_log_stream(lesson.stream), [])
        cordoned = min(start for start, _ in spans)
        started = lesson.started
        assert started is not None
        out.write(
            f"  spared {lesson.job_id} ({lesson.room}): started {started:%H:%M:%S} on "
            f"{task_id_from_log_stream(lesson.stream)}, out of rotation {cordoned:%H:%M}\n"
        )
    if outcome.after_reap:
        lesson, room, when = outcome.after_reap[0]
        worker = task_id_from_log_stream(lesson.stream)
        out.write(
            f"Not counted: {len(outcome.after_reap)} failed session(s) started on a worker after one of its "
            f"rooms was reaped (first: {room} at {when:%H:%M} on {worker}); a reap that cures the worker "
            "would have spared them too, but the model does not assume it.\n"
        )


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="lkfr replay", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_example(found)
    add_common(found)
    found.add_argument("--json", action="store_true", help="print one JSON document instead of the timeline")
    found.add_argument("--html", type=Path, help="also write a self-contained HTML page of the incident here")
    found.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        default="aws",
        help="the services' delays the replay runs under (default aws; none: every decision at the end "
        "of its minute)",
    )
    found.add_argument(
        "--seed", type=int, default=1, help="the seed of the profile's delay draws (default 1)"
    )
    found.add_argument(
        "--mode",
        choices=[Mode.ENFORCE.value, Mode.DRY_RUN.value],
        default=Mode.ENFORCE.value,
        help="the simulated kill switch (default enforce: what the functions would have done)",
    )
    return found


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    use_example(args)
    # The functions log their reports and emit EMF metrics: not on the replay's output.
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    try:
        source = configuration(args) if args.stack or args.app else None
        result = replay(
            args.log,
            args.env,
            args.config,
            Mode(args.mode),
            progress=sys.stderr,
            profile=args.profile,
            seed=args.seed,
            source=source,
        )
    except (UnreadableInput, UsageError) as exc:
        sys.stderr.write(f"replay: error: {exc}\n")
        return EXIT_USAGE
    if args.html:
        from livekit_fleet_remediation.cli.replay_page import render_page

        args.html.write_text(render_page(result), encoding="utf-8")
    if args.json:
        json.dump(result.document(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render_text(result, sys.stdout)
    return EXIT_OK
