"""What the replay records of each invocation's report: the verdicts, the actions on the timeline
(every step of the drainer's step table by its name, the rooms deleted), the notes of invocations
that did nothing, and each task's time out of rotation as the step table's ``takes_out`` says."""

from __future__ import annotations

from typing import Any

from fleet_remediation.contract.drainer_steps import Step, StepRow
from fleet_remediation.contract.naming import FunctionName, task_id_from_log_stream
from livekit_fleet_remediation.offline.replay_model import (
    DELETE_ROOM,
    ActionRecord,
    NoteRecord,
    ReplayResult,
    VerdictRecord,
    drainer_step,
)
from livekit_fleet_remediation.offline.replay_world import SimulatedClock


class ReplayRecorder:
    """Records reports into ``result`` at the simulated time."""

    def __init__(self, result: ReplayResult, clock: SimulatedClock) -> None:
        self.result, self.clock = result, clock

    def record(self, function: FunctionName, trigger: str, report: dict[str, Any]) -> None:
        now = self.clock()
        candidates = {c["resource"]: c for c in report["candidates"]}
        summary = report.get("summary") or {}
        # A re-check during an open incident is a verdict only when it found something new.
        if function is FunctionName.TTS_REACH_ALARM and "verdict" in summary and "recheck" not in summary:
            top = next(iter(report["candidates"]), None)
            concentrated = summary["verdict"] == "concentrated"
            suspect = task_id_from_log_stream(top["resource"]) if concentrated and top else None
            self.result.verdicts.append(
                VerdictRecord(
                    now, concentrated, suspect, summary.get("p_value"), str(summary.get("reason", ""))
                )
            )
        acted = False
        for action in report["actions"]:
            if action["outcome"] != "done":
                continue
            plan = candidates.get(action["resource"], {})
            if function is FunctionName.ZOMBIE_REAPER and action["action"] == DELETE_ROOM:
                acted = True
                rule = plan.get("facts", {}).get("rule")
                reason = f"{trigger}: {plan.get('reason', action.get('reason', ''))} [{rule}]"
                self._act(function, DELETE_ROOM, action["resource"], reason)
            elif function is FunctionName.WORKER_DRAINER and (row := drainer_step(action["action"])):
                acted = True
                self._drainer_step(row, action, plan, trigger)
        if not acted and trigger != "schedule" and function is not FunctionName.TTS_REACH_ALARM:
            self.result.notes.append(NoteRecord(now, function.value, f"{trigger}: {quiet_outcome(report)}"))

    def _drainer_step(self, row: StepRow, action: dict[str, Any], plan: dict[str, Any], trigger: str) -> None:
        """One done step of the drainer on the timeline (a reap as the rooms it deleted), and the
        task's time out of rotation as the step table's ``takes_out`` says."""
        task, drainer = action["resource"], FunctionName.WORKER_DRAINER
        planned = str(plan.get("reason", "")).removeprefix(f"{row.step.value}: ")
        if row.step is Step.REAP:
            for room in plan.get("facts", {}).get("rooms_to_reap", []):
                self._act(drainer, DELETE_ROOM, room, f"{trigger}: reap first on task {task}: {planned}")
        else:
            outcome = action.get("reason", "")
            self._act(drainer, row.step.value, task, f"{trigger}: {planned} -> {outcome}")
        at, spans = self.clock(), self.result.out_of_rotation.setdefault(task, [])
        still_out = bool(spans) and spans[-1][1] is None
        if row.takes_out and not still_out:
            spans.append((at, None))
        elif row.step is Step.UNDO and still_out:
            spans[-1] = (spans[-1][0], at)

    def _act(self, function: FunctionName, action: str, target: str, reason: str) -> None:
        self.result.actions.append(ActionRecord(self.clock(), function.value, action, target, reason))


def quiet_outcome(report: dict[str, Any]) -> str:
    """One line saying why an invocation that was triggered by an alarm or an event did nothing."""
    if report["errors"]:
        return "; ".join(f"{e['code']}: {e['message']}" for e in report["errors"])
    summary = report.get("summary") or {}
    if "skipped" in summary:
        return str(summary["skipped"])
    if report["function"] == FunctionName.ZOMBIE_REAPER.value:
        seen, over = summary.get("rooms_seen", 0), summary.get("rooms_over_age", 0)
        return f"nothing to reap ({seen} room(s), {over} over age)"
    unknown = [c["reason"] for c in report["candidates"] if "not a RUNNING task" in c["reason"]]
    refused = [c["reason"] for c in report["candidates"] if "guardrail" in c["reason"]]
    # The worker with the most slow-inference warnings, and why it was not enough.
    slowest = max(report["candidates"], key=lambda c: c["facts"].get("warnings", 0), default=None)
    worst = (
        [f"{slowest['resource']}: {slowest['reason']}"]
        if slowest and slowest["facts"].get("warnings")
        else []
    )
    parts = [str(summary.get("fleet", "")), *worst, *unknown, *refused]
    return "no action: " + "; ".join(p for p in parts if p)
