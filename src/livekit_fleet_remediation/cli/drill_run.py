"""One drill's run, as ``lkfr drill`` prints it: the fault, the task, the mode, what the watch saw
and the verdict; through the hook the marker's removal, through AWS FIS the experiment's stop."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from fleet_remediation.contract.drills import DrillFault, DrillMarker
from livekit_fleet_remediation.cli.audit_timeline import Entry
from livekit_fleet_remediation.cli.drill_target import DrillTarget


@dataclass
class DrillRun:
    fault: DrillFault
    target: DrillTarget
    marker: DrillMarker
    started: datetime
    mode: str
    seen: list[Entry] = field(default_factory=list)
    answered: Entry | None = None
    # Through the hook: the marker came off; through FIS: the experiment stopped (or had ended).
    marker_removed: bool = False
    experiment_id: str | None = None

    def document(self) -> dict[str, Any]:
        ended: dict[str, Any] = {"marker_removed": self.marker_removed}
        if self.experiment_id is not None:
            ended = {"experiment_id": self.experiment_id, "experiment_stopped": self.marker_removed}
        return {
            "fault": self.fault.value,
            "task": self.target.task_arn,
            "drill_id": self.marker.drill_id,
            "mode": self.mode,
            "started": iso(self.started),
            "until": iso(self.until),
            "verdict": "pass" if self.answered else "fail",
            "answered_after_seconds": self.answered_after(),
            **ended,
            "timeline": [entry.document() for entry in self.seen],
        }

    @property
    def until(self) -> datetime:
        return datetime.fromtimestamp(self.marker.until, UTC)

    def answered_after(self) -> float | None:
        return (self.answered.at - self.started).total_seconds() if self.answered else None


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def render(run: DrillRun, out: TextIO) -> None:
    verdict = "PASS" if run.answered else "FAIL"
    out.write(f"Drill {run.marker.drill_id} ({run.fault.value}, {run.mode}) on task {run.target.task_id}: ")
    out.write(f"{verdict}\n")
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
