"""The per-task TTS reach read by the drainer's tick: one Logs Insights row per task (log stream),
within the row limit at any fleet size Insights can list, and the tick's decision over it.

The drainer's scheduled tick reads these rows (``WorkerLogs.task_reach``) and judges them with
``tick_verdict`` (``silent_task_tick``): a suspect goes to the ladder as a suspect worker, under every
guardrail a suspect-worker event has; a fleet-wide verdict drains nobody.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from fleet_remediation.adapters.task_reach_rows import MAX_TASK_ROWS as MAX_TASK_ROWS
from fleet_remediation.adapters.task_reach_rows import read_task_reach as read_task_reach
from fleet_remediation.adapters.task_reach_rows import task_reach_query as task_reach_query
from fleet_remediation.contract.task_reach import TaskReachSettings
from worker_drainer.decide.task_reach import (
    TaskFacts,
    TaskReach,
    TaskReachAssessment,
    among,
    assess_task_reach,
)


def tick_verdict(
    rows: Sequence[TaskReach],
    settings: TaskReachSettings,
    running: Sequence[TaskFacts],
    now: datetime,
    earlier: Collection[str] | None = None,
) -> TaskReachAssessment:
    """The per-task verdict over the tick's rows and what ECS says of the running tasks; only
    running tasks' streams can be suspects (a replaced task's stream is history). ``earlier``: the
    streams failing at the previous tick (a suspect's second sighting)."""
    streams = {task.log_stream for task in running}
    return among(assess_task_reach(rows, settings, len(streams), running, now, earlier), streams)
