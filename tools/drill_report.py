"""What ``make drill`` prints: per run, the timeline from the fault to the replacement taking calls
(real seconds after the first fault, and the same moment in minutes of the replay's clock, which runs
``SCALE`` times faster), and the sessions lost without and with the remediation."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fleet_remediation.contract.naming import task_id_from_log_stream
from livekit_fleet_remediation.offline.replay_model import DELETE_ROOM, NOTIFY, TIMELINE_ACTIONS, ReplayResult
from tools.drill_run import SCALE, RunRecord

# Every action of the timeline but the messages: cordons, stops, reaps, undos.
ACTIONS = tuple(action for action in TIMELINE_ACTIONS if action != NOTIFY)


@dataclass
class FaultFigures:
    name: str
    task: str
    calls: int
    starvation: str
    events: list[tuple[float, str]] = field(default_factory=list)  # (real seconds after the fault, what)
    failed_without: int = 0
    failed_on_drilled: int = 0
    failed_with: int = 0
    # Rooms the functions deleted, and drainer steps they took, on the drilled task and on the others.
    reaped: dict[bool, int] = field(default_factory=lambda: {True: 0, False: 0})
    steps: dict[bool, list[str]] = field(default_factory=lambda: {True: [], False: []})
    replacement_registered: float = 0.0
    replacement_first_call: float | None = None

    def document(self) -> dict[str, Any]:
        return {
            "fault": self.name,
            "task": self.task,
            "calls": self.calls,
            "cpu_limit": self.starvation or None,
            "timeline": [
                {"real_seconds": round(at, 1), "replayed_minutes": round(at * SCALE / 60, 1), "what": what}
                for at, what in self.events
            ],
            "sessions_failed_without_remediation": self.failed_without,
            "sessions_failed_with_remediation": self.failed_with,
            "sessions_failed_on_drilled_task": self.failed_on_drilled,
            "sessions_failed_elsewhere": self.failed_without - self.failed_on_drilled,
            "drilled_task_rooms_reaped": self.reaped[True],
            "other_rooms_reaped": self.reaped[False],
            "drilled_task_steps": self.steps[True],
            "other_tasks_steps": self.steps[False],
            "replacement_registered_real_seconds": round(self.replacement_registered, 1),
            "replacement_first_call_real_seconds": _rounded(self.replacement_first_call),
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _seconds(origin: datetime, at: datetime) -> float:
    """Real seconds after ``origin`` of a moment on the replay's clock."""
    return (at - origin).total_seconds() / SCALE


def figures(record: RunRecord, result: ReplayResult, registered: float, took: float | None) -> FaultFigures:
    assert result.lessons is not None
    origin = record.simulated(min(record.faults.values()))
    found = FaultFigures(record.name, record.task_id, record.calls, record.starvation)
    for fault, real in sorted(record.faults.items(), key=lambda item: item[1]):
        found.events.append((_seconds(origin, record.simulated(real)), f"fault: {fault}"))
    mine = [
        lesson for lesson in result.lessons.failed if task_id_from_log_stream(lesson.stream) == record.task_id
    ]
    starts = [lesson.started for lesson in mine if lesson.started is not None and lesson.started >= origin]
    if starts:
        found.events.append(
            (
                _seconds(origin, min(starts)),
                "first failed session on the drilled task (started after the fault)",
            )
        )
    for page in (a for a in result.alarms if a.state == "ALARM" and a.at >= origin):
        found.events.append((_seconds(origin, page.at), f"page: {page.alarm} ALARM"))
    for action in (a for a in result.actions if a.action in ACTIONS):
        if action.action == DELETE_ROOM:
            drilled = action.target in record.rooms
            found.reaped[drilled] += 1
            whose = "the drilled task's room" if drilled else "another task's room"
        else:
            drilled = record.task_id in action.target
            found.steps[drilled].append(action.action)
            whose = "the drilled task" if drilled else "another task"
        text = f"{action.action} {action.target[:40]} ({action.function}; {whose})"
        found.events.append((_seconds(origin, action.at), text))
    found.events.sort()
    found.failed_without = len(result.lessons.failed)
    found.failed_with = result.lessons.failed_after_remediation
    found.failed_on_drilled = len(mine)
    found.replacement_registered, found.replacement_first_call = registered, took
    return found


def _run_text(run: FaultFigures) -> list[str]:
    lines = [f"\n== {run.name}: drilled task {run.task[:12]}, {run.calls} calls placed during the run"]
    if run.starvation:
        lines.append(f"   CPU limit: {run.starvation}")
    lines.append("     real s  replayed min")
    lines += [f"   +{at:6.1f}   +{at * SCALE / 60:5.1f}      {what}" for at, what in run.events]
    first = (
        "no call within a minute"
        if run.replacement_first_call is None
        else f"first call after {run.replacement_first_call:.1f} s"
    )
    lines.append(f"   replacement (real): registered after {run.replacement_registered:.1f} s, {first}")
    lines.append(
        f"   sessions failed: without remediation {run.failed_without} "
        f"({run.failed_on_drilled} on the drilled task), with it {run.failed_with}"
    )
    lines.append(
        f"   drainer steps: on the drilled task {', '.join(run.steps[True]) or 'none'}; "
        f"on other tasks {', '.join(run.steps[False]) or 'none'}; rooms deleted: "
        f"{run.reaped[True]} of the drilled task, {run.reaped[False]} of other tasks"
    )
    return lines


def render(runs: list[FaultFigures], workers: int, cost: tuple[float, float], cpus: int) -> str:
    wall, cpu = cost
    head = [
        f"make drill: {workers} livekit-agents workers on livekit-server; the replay's clock runs {SCALE}x "
        f"({60 / SCALE:g} real seconds = 1 replayed minute); functions in process through the replay "
        "(AWS delay profile), not the Lambda emulator; timelines from the first fault",
    ]
    body = [line for run in runs for line in _run_text(run)]
    tail = [f"\ncost: {wall:.0f} s wall, {cpu:.0f} s CPU on {cpus} cores"]
    return "\n".join(head + body + tail)
