"""Regenerate ``tests/fixtures/incident-2026-09-15.jsonl``: a synthetic, deterministic agent log that
reproduces the pattern of the 2026-09-15 incident (seed 000), in the export format of
``aws logs filter-log-events`` (one event per line: logStreamName, timestamp in ms, message,
ingestionTime, eventId).

* Worker ``b9238a5f30f04c3a9207df1601ba88bf``: a test account's job (``AJ_CLYSMmWdT876``, pid 720)
  received at 15:08:03 and never talking; from 16:00:41 silero logs ``inference is slower than
  realtime`` with a growing cumulative ``delay`` (sawtooth: the VAD resets its state now and then);
  from 17:32:53 the 24 lessons placed in its free slot respond but never get a first TTS frame, and
  fall 5.9-83.6 s behind; at 18:12:48 the zombie exits (participant disconnect) and the worker is
  normal again.
* Nine healthy workers run lessons whose first TTS frame arrives 3.0-3.6 s after each response.

Messages are the agents' JSON lines (livekit-agents ``cli/log.py`` ``JsonFormatter``: message,
level, name, extras, pid, code.*, timestamp). ``job_id`` on the VAD and TTS lines stands for the
product's job-context log filter; TTS lines carry no ``room`` (as the incident report notes).
Clock times are the report's, written as UTC.

    .venv/bin/python -m tools.make_incident_fixture [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import string
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

DAY = datetime(2026, 9, 15, tzinfo=UTC)
STREAM_PREFIX = "agent/ppi-livekit-agent/"
BAD_TASK = "b9238a5f30f04c3a9207df1601ba88bf"
ZOMBIE_JOB = "AJ_CLYSMmWdT876"
ZOMBIE_PID = 720
ZOMBIE_START = DAY.replace(hour=15, minute=8, second=3)
VAD_START = DAY.replace(hour=16, minute=0, second=41)
FIRST_VICTIM = DAY.replace(hour=17, minute=32, second=53)
ZOMBIE_EXIT = DAY.replace(hour=18, minute=12, second=48)
HEALTHY_FROM = DAY.replace(hour=17, minute=22)
HEALTHY_UNTIL = DAY.replace(hour=18, minute=18)
VICTIMS = 24
HEALTHY_WORKERS = 9
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "incident-2026-09-15.jsonl"


def at(hour: int, minute: int, second: float = 0) -> datetime:
    return DAY.replace(hour=hour, minute=minute) + timedelta(seconds=second)


@dataclass
class Log:
    rng: random.Random
    events: list[dict[str, Any]] = field(default_factory=list)

    def line(self, stream: str, when: datetime, message: str, level: str, name: str, **extra: Any) -> None:
        code = {
            "livekit.agents": ("/app/.venv/lib/python3.11/site-packages/livekit/agents/worker.py", "_handle"),
            "livekit.plugins.silero": (
                "/app/.venv/lib/python3.11/site-packages/livekit/plugins/silero/vad.py",
                "_main_task",
            ),
            "ppi-agent": ("/app/agent.py", "_on_speech"),
        }[name]
        record = {"message": message, "level": level, "name": name, **extra}
        record.setdefault("pid", 7)
        record["code.file.path"], record["code.function.name"] = code
        record["code.line.number"] = 100 + len(message)
        record["timestamp"] = when.isoformat()
        millis = int(when.timestamp() * 1000)
        self.events.append(
            {
                "logStreamName": STREAM_PREFIX + stream,
                "timestamp": millis,
                "message": json.dumps(record),
                "ingestionTime": millis + self.rng.randint(200, 2500),
                "eventId": "".join(self.rng.choices(string.digits, k=56)),
            }
        )

    def job_id(self) -> str:
        return "AJ_" + "".join(self.rng.choices(string.ascii_letters + string.digits, k=12))

    def received(self, stream: str, when: datetime, job_id: str, room: str) -> None:
        room_id = "RM_" + "".join(self.rng.choices(string.ascii_letters + string.digits, k=12))
        self.line(
            stream,
            when,
            "received job request",
            "INFO",
            "livekit.agents",
            job_id=job_id,
            dispatch_id="",
            room=room,
            room_id=room_id,
            agent_name="ppi-agent",
            resuming=False,
            enable_recording=False,
        )

    def exiting(self, stream: str, when: datetime, job_id: str, pid: int, reason: str) -> None:
        self.line(
            stream, when, "process exiting", "INFO", "livekit.agents", reason=reason, pid=pid, job_id=job_id
        )


def lesson_room(rng: random.Random) -> str:
    return "lesson-" + "".join(rng.choices("0123456789abcdef", k=8))


def zombie(log: Log) -> None:
    """The abandoned test lesson: silent, then CPU-starved VAD warnings at a growing rate."""
    log.received(BAD_TASK, ZOMBIE_START, ZOMBIE_JOB, "test-d9ed7fb0-newpp01_up_wjv1")
    when, delay = VAD_START, 0.0
    while when < ZOMBIE_EXIT - timedelta(seconds=17):
        minutes_in = (when - VAD_START).total_seconds() / 60
        per_minute = 0.4 + 1.6 * min(minutes_in / 90, 1.0) + (0.8 if when >= FIRST_VICTIM else 0.0)
        inference = log.rng.uniform(0.21, 0.6)
        delay = 0.0 if log.rng.random() < 0.02 else delay + inference - 0.032
        log.line(
            BAD_TASK,
            when,
            "inference is slower than realtime",
            "WARNING",
            "livekit.plugins.silero",
            delay=round(delay, 3),
            pid=ZOMBIE_PID,
            job_id=ZOMBIE_JOB,
        )
        when += timedelta(seconds=log.rng.expovariate(per_minute / 60))
    log.line(
        BAD_TASK,
        ZOMBIE_EXIT - timedelta(seconds=17),
        "inference is slower than realtime",
        "WARNING",
        "livekit.plugins.silero",
        delay=round(delay, 3),
        pid=ZOMBIE_PID,
        job_id=ZOMBIE_JOB,
    )
    log.exiting(
        BAD_TASK, ZOMBIE_EXIT, ZOMBIE_JOB, ZOMBIE_PID, "closing agent session due to participant disconnect"
    )


def victims(log: Log) -> int:
    """Lessons in the zombie's neighbouring slot: responses, never a first audio frame."""
    when = FIRST_VICTIM
    for index in range(VICTIMS):
        job, pid = log.job_id(), 900 + index
        log.received(BAD_TASK, when, job, lesson_room(log.rng))
        length = log.rng.uniform(60, 80)
        worst = 5.9 + (83.6 - 5.9) * index / (VICTIMS - 1)
        warnings = log.rng.randint(6, 9)
        for step in range(warnings):
            moment = when + timedelta(seconds=4 + step * (length - 6) / warnings)
            log.line(
                BAD_TASK,
                moment,
                "inference is slower than realtime",
                "WARNING",
                "livekit.plugins.silero",
                delay=round(worst * (step + 1) / warnings, 3),
                pid=pid,
                job_id=job,
            )
        response = when + timedelta(seconds=log.rng.uniform(8, 14))
        while response < when + timedelta(seconds=length):
            log.line(BAD_TASK, response, "agent_response_started", "INFO", "ppi-agent", pid=pid, job_id=job)
            response += timedelta(seconds=log.rng.uniform(18, 26))
        end = when + timedelta(seconds=length)
        log.exiting(BAD_TASK, end, job, pid, "closing agent session due to participant disconnect")
        when = end + timedelta(seconds=log.rng.uniform(20, 30))
    return VICTIMS


def healthy(log: Log, task: str, pid_base: int) -> None:
    """Back-to-back lessons; the first is already under way at HEALTHY_FROM (only lines from then on
    are written, besides its job request), so lessons do not all end together."""
    when = HEALTHY_FROM - timedelta(minutes=log.rng.uniform(0, 20))
    pid = pid_base
    while when < HEALTHY_UNTIL:
        job = log.job_id()
        pid += 1
        log.received(task, when, job, lesson_room(log.rng))
        end = min(when + timedelta(minutes=log.rng.uniform(15, 30)), HEALTHY_UNTIL)
        response = when + timedelta(seconds=log.rng.uniform(8, 14))
        while response < end:
            if response >= HEALTHY_FROM:
                log.line(task, response, "agent_response_started", "INFO", "ppi-agent", pid=pid, job_id=job)
                first_audio = response + timedelta(seconds=log.rng.uniform(3.0, 3.6))
                log.line(
                    task, first_audio, "tts_node_first_audio_frame", "INFO", "ppi-agent", pid=pid, job_id=job
                )
            response += timedelta(seconds=log.rng.uniform(35, 45))
        log.exiting(task, end, job, pid, "job completed")
        when = end + timedelta(minutes=log.rng.uniform(3, 15))


def build(seed: int = 20260915) -> list[dict[str, Any]]:
    log = Log(random.Random(seed))
    zombie(log)
    victims(log)
    for index in range(HEALTHY_WORKERS):
        task = "".join(log.rng.choices("0123456789abcdef", k=32))
        healthy(log, task, pid_base=1000 * (index + 2))
    return sorted(log.events, key=lambda e: (e["timestamp"], e["logStreamName"], e["eventId"]))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    events = build()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as handle:
        for event in events:
            handle.write(json.dumps(event, separators=(",", ":")) + "\n")
    print(f"wrote {len(events)} events, {args.out.stat().st_size} bytes to {args.out}")


if __name__ == "__main__":
    main()
