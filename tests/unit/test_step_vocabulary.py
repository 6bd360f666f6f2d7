"""One vocabulary: every row of the drainer's step table reaches the replay's timeline (and its time
out of rotation follows the row's ``takes_out``), the replay page's lanes, and the audit's timeline
and undo commands. A row missing from any of them fails here."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from fleet_remediation.contract.drainer_steps import MARKING, STEP_TABLE, Step, StepRow
from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.core.audit_timeline import ACTED, from_report, undo_command
from livekit_fleet_remediation.cli.common import load_config
from livekit_fleet_remediation.cli.replay_page import action_lanes
from livekit_fleet_remediation.offline.log_export import load_events
from livekit_fleet_remediation.offline.replay import Replay
from livekit_fleet_remediation.offline.replay_model import TIMELINE_ACTIONS, timeline_action

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "incident-2026-09-15.jsonl"
CONFIG = REPO / "examples" / "standalone" / "environments.json"
TASK = "2789d238aa5f4b0f9c3e8d1b2a4c6e8f"
ROOM = "lesson-room-1"


def drainer_report(row: StepRow) -> dict[str, Any]:
    """A drainer report whose one done action is ``row``'s step (a reap names the room it deletes)."""
    step = row.step.value
    return {
        "function": FunctionName.WORKER_DRAINER.value,
        "invocation_id": f"inv-{step}",
        "started_at": "2026-09-15T17:36:00Z",
        "finished_at": "2026-09-15T17:36:01Z",
        "mode": "enforce",
        "status": "ok",
        "summary": {},
        "errors": [],
        "candidates": [
            {
                "resource": TASK,
                "decision": "act",
                "reason": f"{step}: planned",
                "facts": {"rooms_to_reap": [ROOM]},
            }
        ],
        "actions": [{"action": step, "outcome": "done", "resource": TASK, "reason": "done"}],
    }


@pytest.fixture(scope="module")
def replay() -> Replay:
    return Replay(load_events(FIXTURE), "prod", load_config(CONFIG, "prod"))


@pytest.mark.parametrize("row", STEP_TABLE, ids=lambda row: row.step.value)
def test_every_step_reaches_the_replay_timeline_and_takes_out_as_its_row_says(
    replay: Replay, row: StepRow
) -> None:
    replay.result.actions.clear()
    replay.result.out_of_rotation.clear()
    replay.recorder.record(FunctionName.WORKER_DRAINER, "schedule", drainer_report(row))
    recorded = [(a.action, a.target) for a in replay.result.actions]
    assert recorded == [(timeline_action(row.step), ROOM if row.step is Step.REAP else TASK)]
    assert timeline_action(row.step) in TIMELINE_ACTIONS
    spans = replay.result.out_of_rotation.get(TASK, [])
    assert bool(spans) is row.takes_out, spans


def test_an_undo_puts_the_task_back_in_rotation(replay: Replay) -> None:
    replay.result.out_of_rotation.clear()
    rows = {row.step: row for row in STEP_TABLE}
    replay.recorder.record(FunctionName.WORKER_DRAINER, "schedule", drainer_report(rows[Step.CORDON]))
    cordoned = replay.world.clock()
    replay.world.clock.now = cordoned + timedelta(minutes=5)
    replay.recorder.record(FunctionName.WORKER_DRAINER, "undo", drainer_report(rows[Step.UNDO]))
    assert replay.result.out_of_rotation[TASK] == [(cordoned, cordoned + timedelta(minutes=5))]


def test_every_step_has_its_lane_and_colour_on_the_replay_page() -> None:
    lanes = {lane["action"]: lane["color"] for lane in action_lanes()}
    for row in STEP_TABLE:
        assert lanes.get(timeline_action(row.step), "").startswith("#"), row.step
    assert len(set(lanes.values())) == len(lanes), "two lanes share a colour"


@pytest.mark.parametrize("row", STEP_TABLE, ids=lambda row: row.step.value)
def test_every_step_reaches_the_audit_with_the_undo_its_row_implies(row: StepRow) -> None:
    (entry,) = [e for e in from_report(drainer_report(row)) if e.kind == ACTED]
    assert (entry.action, entry.target) == (row.step.value, TASK)
    undo = undo_command(entry, "prod", None)
    if row.step in MARKING:
        assert undo == f"lkfr undo --env prod --task {TASK}"
    elif row.step is Step.UNDO:
        assert undo == f"lkfr undo --env prod --task {TASK} --drain"
    else:
        assert undo is None
