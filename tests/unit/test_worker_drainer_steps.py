"""The drainer's step table (``contract.drainer_steps``) is the one place a step is described: every
step has a row, and the drainer's task scope, messages and metrics follow from the rows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fleet_remediation.contract import drainer_steps, metrics
from fleet_remediation.contract.drainer_steps import NOT_ACTING, ROWS, STEP_TABLE, Step, StepRow
from fleet_remediation.contract.metrics import MetricDefinition
from fleet_remediation.core import messages
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Mode, Outcome
from worker_drainer.act import task_scope_check as task_scope
from worker_drainer.adapters.ecs_tasks import (
    ECS_SERVICE_ACTIONS,
    ECS_TASK_CHANGE_ACTIONS,
    ECS_TASK_TAG_ACTIONS,
)
from worker_drainer.decide.ladder import LadderPlan, PlannedStep
from worker_drainer.decide.task_tags import State
from worker_drainer.tell import record as accounting
from worker_drainer.tell.message import headline, severity, undo_steps
from worker_drainer.tell.message_lines import Line

RUNBOOK = Path(__file__).resolve().parents[2] / "docs" / "runbooks" / "worker-drainer.md"
TASK = "2789d2380f1c4e0c8a4f0b3b6c2d1e0f"


def planned(step: Step) -> PlannedStep:
    return PlannedStep(TASK, f"arn:aws:ecs:eu-west-1:1:task/c/{TASK}", step, "why", State.HEALTHY)


def test_every_step_has_one_row_or_is_a_decision_to_do_nothing() -> None:
    assert [row.step for row in STEP_TABLE] == list(ROWS)  # one row per step
    assert set(ROWS) | NOT_ACTING == set(Step)
    assert not set(ROWS) & NOT_ACTING


@pytest.mark.parametrize("row", STEP_TABLE, ids=lambda row: row.step.value)
def test_each_rows_actions_are_ecs_writes_the_adapter_calls(row: StepRow) -> None:
    assert set(row.task_actions) <= set(ECS_TASK_CHANGE_ACTIONS) | set(ECS_TASK_TAG_ACTIONS)
    assert set(row.service_actions) <= set(ECS_SERVICE_ACTIONS)
    assert set(row.task_actions) | set(row.service_actions) <= drainer_steps.ECS_WRITE_ACTIONS
    assert row.done_form
    assert row.metric.isidentifier()


def test_every_ecs_write_the_adapter_can_make_is_known_as_one() -> None:
    writes = {*ECS_TASK_CHANGE_ACTIONS, *ECS_TASK_TAG_ACTIONS} | (
        set(ECS_SERVICE_ACTIONS) - {"ecs:DescribeServices"}
    )
    assert writes == drainer_steps.ECS_WRITE_ACTIONS


def test_the_task_scope_check_covers_exactly_the_steps_with_task_actions() -> None:
    assert {row.step for row in STEP_TABLE if row.task_actions} == task_scope.TASK_STEPS
    assert Step.SETTLE_CAPACITY not in task_scope.TASK_STEPS  # it changes the service only


def test_each_step_has_its_own_metrics_and_they_are_defined() -> None:
    names = [row.metric for row in STEP_TABLE]
    assert len(set(names)) == len(names)
    assert set(metrics.DRAINER_STEP_PLANNED) == set(metrics.DRAINER_STEP_DONE) == {s.value for s in ROWS}
    for row in STEP_TABLE:
        assert metrics.DRAINER_STEP_PLANNED[row.step.value].name == f"Drainer{row.metric}Planned"
        assert metrics.DRAINER_STEP_DONE[row.step.value].name == f"Drainer{row.metric}Done"


def test_the_drainer_emits_its_step_metrics_from_the_table_only(monkeypatch: pytest.MonkeyPatch) -> None:
    emitted: dict[str, float] = {}

    def capture(metric: MetricDefinition, value: float) -> None:
        emitted[metric.name] = value

    monkeypatch.setattr(accounting, "emit", capture)
    report = ReportBuilder("worker_drainer", "inv-1")
    report.mode = Mode.ENFORCE
    report.action(TASK, Step.CORDON.value, Outcome.DONE, "cordoned")
    accounting.record_metrics(LadderPlan((planned(Step.CORDON), planned(Step.WAIT)), 3, 1), report)
    per_step = {name for name in emitted if re.fullmatch(r"Drainer.+(Planned|Done)", name)}
    table = {f"Drainer{row.metric}{kind}" for row in STEP_TABLE for kind in ("Planned", "Done")}
    assert per_step == table
    assert emitted["DrainerCordonPlanned"] == emitted["DrainerCordonDone"] == 1
    assert emitted["DrainerStopDone"] == 0


@pytest.mark.parametrize("row", STEP_TABLE, ids=lambda row: row.step.value)
def test_each_step_reads_in_a_message_as_its_row_says(row: StepRow) -> None:
    would = Line("would", f"would {row.step.value} {TASK}", row.step.value, TASK, step=planned(row.step))
    assert headline([would])[1] == f"{row.done_form} task {TASK[:8]}"
    assert (severity([would]) is messages.Severity.WARNING) is row.takes_out
    done = Line("done", "done", row.step.value, TASK, step=planned(row.step), outcome=Outcome.DONE)
    undrain = [u for u in undo_steps([done], "prod", "agents") if u.label.startswith("End the drain")]
    assert bool(undrain) is row.marks


def test_the_runbook_has_one_rung_per_step() -> None:
    lines = RUNBOOK.read_text().splitlines()
    start = lines.index(next(line for line in lines if line.startswith("| rung |")))
    rungs = []
    for line in lines[start + 2 :]:
        if not line.startswith("| "):
            break
        rungs.append(line.split("|")[1].strip())
    assert rungs == [row.step.value for row in STEP_TABLE]
