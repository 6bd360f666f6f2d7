"""One drill's run (``fleet_remediation.domain.drill_steps.DrillRun``) as ``lkfr drill`` prints it:
the fault, the task, the mode, what the watch saw and the verdict; through the hook the marker's
removal, through AWS FIS the experiment's stop."""

from __future__ import annotations

from datetime import datetime
from typing import Any, TextIO

from fleet_remediation.domain.drill_steps import DrillRun


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def document(run: DrillRun) -> dict[str, Any]:
    ended: dict[str, Any] = {"marker_removed": run.marker_removed}
    if run.experiment_id is not None:
        ended = {"experiment_id": run.experiment_id, "experiment_stopped": run.marker_removed}
    return {
        "fault": run.fault.value,
        "task": run.target.task_arn,
        "drill_id": run.marker.drill_id,
        "mode": run.mode,
        "started": iso(run.started),
        "until": iso(run.until),
        "verdict": run.verdict,
        "answered_after_seconds": run.answered_after(),
        **ended,
        "timeline": [entry.document() for entry in run.seen],
    }


def render(run: DrillRun, out: TextIO) -> None:
    out.write(f"Drill {run.marker.drill_id} ({run.fault.value}, {run.mode}) on task {run.target.task_id}: ")
    out.write(f"{run.verdict.upper()}\n")
    out.write(f"  {iso(run.started)}  fault injected\n")
    for entry in run.seen:
        out.write(f"  {iso(entry.at)}  {entry.function} {entry.kind} {entry.action} {entry.target}\n")
    if run.answered:
        out.write(f"  answered after {run.answered_after():.0f} s\n")
    else:
        out.write(f"  no answer by {iso(run.until)}\n")
    if run.experiment_id is not None:
        stopped = "stopped" if run.marker_removed else "NOT stopped (FIS ends it at its template's duration)"
        out.write(f"  AWS FIS experiment {run.experiment_id} {stopped}\n")
        return
    removed = "removed" if run.marker_removed else "NOT removed (it ends by itself at its until second)"
    out.write(f"  marker {removed}\n")
