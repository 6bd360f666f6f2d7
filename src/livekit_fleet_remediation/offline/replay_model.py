"""What the replay models of the stack and what it records: the stack's EventBridge rules (the infra
tests check this table against the synthesized template), the events they deliver, and the result
(alarms, verdicts, actions, the lessons spared) that the timeline, ``--json`` and the page show."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fleet_remediation.contract.drainer_steps import ROWS, STEP_TABLE, Step, StepRow
from fleet_remediation.contract.naming import (
    ALARM_DETAIL_TYPE,
    FunctionName,
    task_id_from_log_stream,
    tts_reach_alarm_name,
    vad_alarm_name,
)
from fleet_remediation.core.report_model import Mode
from fleet_remediation.domain import reaping
from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.offline.backtest import Lesson
from livekit_fleet_remediation.offline.replay_world import LoggedJob

SIMULATED_ACCOUNT = "000000000000"
SIMULATED_STORE = "simulated"
# The timeline's actions: the rooms deleted (by the reaper, or by the drainer's reap step, one entry
# a room), every other step of the drainer's step table by its name, and the notifications sent.
DELETE_ROOM, NOTIFY = reaping.DELETE, "notify"


def timeline_action(step: Step) -> str:
    return DELETE_ROOM if step is Step.REAP else step.value


TIMELINE_ACTIONS = (
    DELETE_ROOM,
    *(timeline_action(row.step) for row in STEP_TABLE if row.step is not Step.REAP),
    NOTIFY,
)


def drainer_step(action: str) -> StepRow | None:
    """The step table's row of an action a drainer report names (None for any other action)."""
    return ROWS.get(Step(action)) if action in Step.__members__.values() else None


SIMULATED_PARTS = (
    "the clock (minute by minute, each invocation at the moment the delay profile puts it)",
    "the log source (the exported events feed the alarms and answer the functions' Logs Insights queries; "
    "a stopped task's later lines are not written)",
    "LiveKit (rooms from `received job request` to `process exiting`)",
    "ECS (one task per log stream, from its first line; a replacement RUNNING after the profile's task "
    "start; a rolling deployment where the log shows tasks replaced)",
    "the ledger, idempotency table, EventBridge bus and SNS topic (in memory)",
)


# --- the stack's EventBridge rules ---------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    """One EventBridge rule of the stack and the function it invokes (the infra tests check this table
    against the synthesized template)."""

    function: FunctionName
    schedule_minutes: int | None = None
    alarm: str | None = None
    states: tuple[str, ...] = ()
    suspect_worker: bool = False


def stack_rules(env_name: str, config: EnvironmentConfig) -> tuple[Rule, ...]:
    # The replay covers the environment's first agent service.
    config = config.for_service(config.agent_service)
    service = config.agent_service.name
    vad, tts = vad_alarm_name(env_name, service), tts_reach_alarm_name(env_name, service)
    return (
        Rule(FunctionName.ZOMBIE_REAPER, schedule_minutes=config.reaper.schedule_minutes),
        Rule(FunctionName.ZOMBIE_REAPER, alarm=vad, states=("ALARM",)),
        Rule(FunctionName.TTS_REACH_ALARM, alarm=tts, states=("ALARM", "OK")),
        *(
            (Rule(FunctionName.TTS_REACH_ALARM, schedule_minutes=config.tts_reach.recheck_minutes),)
            if config.tts_reach.recheck_minutes
            else ()
        ),
        Rule(FunctionName.WORKER_DRAINER, schedule_minutes=config.drainer.schedule_minutes),
        Rule(FunctionName.WORKER_DRAINER, alarm=vad, states=("ALARM",)),
        Rule(FunctionName.WORKER_DRAINER, suspect_worker=True),
    )


def alarm_event(
    alarm: str, state: str, previous: str, at: datetime, *, account: str, region: str
) -> dict[str, Any]:
    """CloudWatch's state-change event, with no datapoints: the replay has none to report."""
    stamp = at.strftime("%Y-%m-%dT%H:%M:%S.000+0000")
    return {
        "version": "0",
        "id": f"replay-{alarm}-{at:%Y%m%d%H%M}",
        "detail-type": ALARM_DETAIL_TYPE,
        "source": "aws.cloudwatch",
        "account": account,
        "time": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:cloudwatch:{region}:{account}:alarm:{alarm}"],
        "detail": {
            "alarmName": alarm,
            "state": {"value": state, "reason": "replayed from exported logs", "timestamp": stamp},
            "previousState": {"value": previous, "reason": "", "timestamp": stamp},
            "configuration": {},
        },
    }


def on_schedule(rule: Rule, at: datetime) -> bool:
    """EventBridge ``rate(N minutes)``: every N minutes; the replay aligns the ticks to the clock."""
    assert rule.schedule_minutes is not None
    return int(at.timestamp() // 60) % rule.schedule_minutes == 0


# --- what the replay records -----------------------------------------------------------------------------
@dataclass(frozen=True)
class AlarmChange:
    alarm: str
    state: str
    at: datetime


@dataclass(frozen=True)
class VerdictRecord:
    at: datetime
    concentrated: bool
    suspect: str | None
    p_value: float | None
    reason: str


@dataclass(frozen=True)
class ActionRecord:
    at: datetime
    function: str
    action: str  # one of TIMELINE_ACTIONS
    target: str
    reason: str


@dataclass(frozen=True)
class NoteRecord:
    """What an alarm- or event-triggered invocation concluded when it did nothing (timeline only)."""

    at: datetime
    function: str
    text: str


@dataclass(frozen=True)
class Invocation:
    at: datetime
    function: str
    trigger: str
    report: dict[str, Any]


@dataclass(frozen=True)
class LessonsOutcome:
    total: int
    failed: list[Lesson]
    spared: list[Lesson]
    # Failed lessons that started on a worker after one of its rooms was reaped (not counted as spared).
    after_reap: list[tuple[Lesson, str, datetime]]

    @property
    def failed_after_remediation(self) -> int:
        return len(self.failed) - len(self.spared)


@dataclass
class ReplayResult:
    log: str
    env_name: str
    mode: Mode
    events: int
    streams: int
    start: datetime
    end: datetime
    # Which delays the replay ran under (``replay_timing.describe``).
    delays: str = ""
    alarms: list[AlarmChange] = field(default_factory=list)
    verdicts: list[VerdictRecord] = field(default_factory=list)
    actions: list[ActionRecord] = field(default_factory=list)
    notes: list[NoteRecord] = field(default_factory=list)
    invocations: list[Invocation] = field(default_factory=list)
    lessons: LessonsOutcome | None = None
    warnings: list[str] = field(default_factory=list)
    out_of_rotation: dict[str, list[tuple[datetime, datetime | None]]] = field(default_factory=dict)
    # Per-minute counts for the page (``offline.series.minute_series``).
    series: dict[str, Any] = field(default_factory=dict)

    def rotation_latency(self) -> list[tuple[str, datetime, float | None]]:
        """Each task taken out of rotation: when, and the minutes since its first failed session
        started (None when none failed on it before)."""
        assert self.lessons is not None
        found = []
        for task, spans in self.out_of_rotation.items():
            if not spans:
                continue
            since = spans[0][0]
            failed = [
                lesson.started
                for lesson in self.lessons.failed
                if lesson.started is not None
                and task_id_from_log_stream(lesson.stream) == task
                and lesson.started <= since
            ]
            found.append((task, since, (since - min(failed)).total_seconds() / 60 if failed else None))
        return found

    def document(self) -> dict[str, Any]:
        """The ``--json`` document."""
        assert self.lessons is not None
        return {
            "delays": self.delays,
            "alarms": [{"alarm": a.alarm, "state": a.state, "at": _iso(a.at)} for a in self.alarms],
            "verdicts": [
                {
                    "at": _iso(v.at),
                    "concentrated": v.concentrated,
                    "suspect": v.suspect,
                    "p_value": v.p_value,
                    "reason": v.reason,
                }
                for v in self.verdicts
            ],
            "actions": [
                {
                    "at": _iso(a.at),
                    "function": a.function,
                    "action": a.action,
                    "target": a.target,
                    "reason": a.reason,
                }
                for a in self.actions
            ],
            "lessons": {
                "total": self.lessons.total,
                "failed_in_log": len(self.lessons.failed),
                "failed_after_remediation": self.lessons.failed_after_remediation,
                "spared": [lesson.job_id for lesson in self.lessons.spared],
            },
            "out_of_rotation": [
                {
                    "task": task,
                    "from": _iso(since),
                    "minutes_after_first_failed_session": None if minutes is None else round(minutes, 2),
                }
                for task, since, minutes in self.rotation_latency()
            ],
        }


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def counterfactual(
    found: dict[str, Lesson],
    out_of_rotation: dict[str, list[tuple[datetime, datetime | None]]],
    jobs: Sequence[LoggedJob],
    deletions: Sequence[tuple[datetime, str, str]],
) -> LessonsOutcome:
    """The failed lessons and which of them the actions would have spared: those whose job request
    reached a worker while it was out of rotation. ``deletions``: the rooms reaped (when, room, sid)."""
    failed = sorted(
        (lesson for lesson in found.values() if lesson.failed),
        key=lambda lesson: lesson.started or datetime.max.replace(tzinfo=UTC),
    )

    def spared(lesson: Lesson) -> bool:
        if lesson.started is None:
            return False
        spans = out_of_rotation.get(task_id_from_log_stream(lesson.stream), [])
        return any(start < lesson.started and (end is None or lesson.started < end) for start, end in spans)

    stream_of_room = {(job.room, job.room_id): job.stream for job in jobs}
    reaps = [
        (when, room, stream_of_room[(room, sid)])
        for when, room, sid in deletions
        if (room, sid) in stream_of_room
    ]
    after_reap = []
    for lesson in failed:
        earlier = [(room, when) for when, room, stream in reaps if stream == lesson.stream]
        if lesson.started is not None and earlier and earlier[0][1] < lesson.started:
            after_reap.append((lesson, *earlier[0]))
    return LessonsOutcome(len(found), failed, [x for x in failed if spared(x)], after_reap)
