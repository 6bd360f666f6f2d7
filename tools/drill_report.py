"""What ``make drill`` prints: per run, the timeline from the fault to the replacement taking calls
(real seconds after the first fault, and the same moment in minutes of the replay's clock, which runs
``SCALE`` times faster), and the sessions lost without and with the remediation."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fleet_remediation.contract.naming import task_id_from_log_stream
from livekit_fleet_remediation.offline.replay_model import DELETE_ROOM, NOTIFY, TIMELINE_ACTIONS, ReplayResult
from tools.drill_live import LiveRemediation
from tools.drill_run import SCALE, RunRecord

# Every action of the timeline but the messages: cordons, stops, reaps, undos.
ACTIONS = tuple(action for action in TIMELINE_ACTIONS if action != NOTIFY)


@dataclass(frozen=True)
class ArmRun:
    """One run of a fault: the recorded run, the replay over its lines, what the live remediation did
    on the fleet (None: the functions were off), and the replacement's timing after the run (None:
    the remediation had replaced the drilled task already)."""

    record: RunRecord
    result: ReplayResult
    live: LiveRemediation | None
    after_run: tuple[float, float | None] | None


@dataclass
class FaultFigures:
    name: str
    task: str
    calls: int
    starvation: str
    events: list[tuple[float, str]] = field(default_factory=list)  # (real seconds after the fault, what)
    # Sessions failed in each arm's own run (None: that arm was not run), and of them on the drilled task.
    failed_without: int | None = None
    failed_with: int | None = None
    failed_on_drilled_without: int | None = None
    failed_on_drilled_with: int | None = None
    # Rooms the functions deleted, and drainer steps they took, on the drilled task and on the others.
    reaped: dict[bool, int] = field(default_factory=lambda: {True: 0, False: 0})
    steps: dict[bool, list[str]] = field(default_factory=lambda: {True: [], False: []})
    replacement_registered: float = 0.0
    replacement_first_call: float | None = None
    # True: the remediation did not take the drilled task out; the replacement came after the run.
    replacement_after_run: bool = True

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
            "sessions_failed_on_drilled_task_without_remediation": self.failed_on_drilled_without,
            "sessions_failed_on_drilled_task_with_remediation": self.failed_on_drilled_with,
            "drilled_task_rooms_reaped": self.reaped[True],
            "other_rooms_reaped": self.reaped[False],
            "drilled_task_steps": self.steps[True],
            "other_tasks_steps": self.steps[False],
            "replacement_registered_real_seconds": round(self.replacement_registered, 1),
            "replacement_first_call_real_seconds": _rounded(self.replacement_first_call),
            "replacement_after_the_run": self.replacement_after_run,
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _seconds(origin: datetime, at: datetime) -> float:
    """Real seconds after ``origin`` of a moment on the replay's clock."""
    return (at - origin).total_seconds() / SCALE


def _failed(run: ArmRun) -> tuple[int, int]:
    """Sessions failed in the run's own log, and of them on the drilled task."""
    assert run.result.lessons is not None
    failed = run.result.lessons.failed
    mine = [x for x in failed if task_id_from_log_stream(x.stream) == run.record.task_id]
    return len(failed), len(mine)


def figures(name: str, without: ArmRun | None, with_: ArmRun | None) -> FaultFigures:
    """The fault's figures: the timeline of the run with remediation (else of the run without it, with
    what the functions would have done), and the sessions failed in each run."""
    shown = with_ or without
    assert shown is not None
    record, result = shown.record, shown.result
    assert result.lessons is not None
    origin = record.simulated(min(record.faults.values()))
    found = FaultFigures(name, record.task_id, record.calls, record.starvation)
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
    verb = "" if shown.live is not None else "would have: "
    # The replay's last invocations run past the lines: what they decide, the run did not see.
    ended = record.simulated(record.ended)
    for action in (a for a in result.actions if a.action in ACTIONS and a.at <= ended):
        if action.action == DELETE_ROOM:
            drilled = action.target in record.rooms
            found.reaped[drilled] += 1
            whose = "the drilled task's room" if drilled else "another task's room"
        else:
            drilled = record.task_id in action.target
            found.steps[drilled].append(action.action)
            whose = "the drilled task" if drilled else "another task"
        text = f"{verb}{action.action} {action.target[:40]} ({action.function}; {whose})"
        found.events.append((_seconds(origin, action.at), text))
    fault_real = min(record.faults.values())
    if shown.live is not None:
        found.events += [(at - fault_real, what) for at, what in shown.live.events]
        if shown.live.replacement is not None:
            found.replacement_registered, found.replacement_first_call = shown.live.replacement
            found.replacement_after_run = False
    if shown.after_run is not None:
        found.replacement_registered, found.replacement_first_call = shown.after_run
    found.events.sort()
    if without is not None:
        found.failed_without, found.failed_on_drilled_without = _failed(without)
    if with_ is not None:
        found.failed_with, found.failed_on_drilled_with = _failed(with_)
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
    when = (
        "after the run (the functions did not take the task out)"
        if run.replacement_after_run
        else "started by the cordon"
    )
    lines.append(
        f"   replacement (real, {when}): registered after {run.replacement_registered:.1f} s, {first}"
    )
    without = _count(run.failed_without, run.failed_on_drilled_without)
    with_ = _count(run.failed_with, run.failed_on_drilled_with)
    lines.append(f"   sessions failed: without remediation {without}, with it {with_}")
    lines.append(
        f"   drainer steps: on the drilled task {', '.join(run.steps[True]) or 'none'}; "
        f"on other tasks {', '.join(run.steps[False]) or 'none'}; rooms deleted: "
        f"{run.reaped[True]} of the drilled task, {run.reaped[False]} of other tasks"
    )
    return lines


def _count(failed: int | None, on_drilled: int | None) -> str:
    return "not run" if failed is None else f"{failed} ({on_drilled} on the drilled task)"


def render(runs: list[FaultFigures], workers: int, cost: tuple[float, float], cpus: int) -> str:
    wall, cpu = cost
    head = [
        f"make drill: {workers} livekit-agents workers on livekit-server; the replay's clock runs {SCALE}x "
        f"({60 / SCALE:g} real seconds = 1 replayed minute); each fault run twice, with the functions off "
        "and with them acting on the live fleet (in process through the replay every replayed minute, AWS "
        "delay profile; not the Lambda emulator); timelines from the first fault, of the run with them",
    ]
    body = [line for run in runs for line in _run_text(run)]
    tail = [f"\ncost: {wall:.0f} s wall, {cpu:.0f} s CPU on {cpus} cores"]
    return "\n".join(head + body + tail)
