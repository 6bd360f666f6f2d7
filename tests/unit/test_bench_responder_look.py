"""The fleet-scale bench reports the responder's own verdict: its ``investigate`` runs against the
bench's per-task minutes, per job while the window's jobs fit the row limit and per task beyond."""

from __future__ import annotations

import numpy as np

from bench._responder_look import FleetFacts, MinuteInsights, responder_look
from devkit.fleet_groups import groups_for


def _minutes(tasks: int, responses: int, silent: int | list[int] | None) -> MinuteInsights:
    insights = MinuteInsights(calls_per_task=2, endpoints=["tts/eu-west-1"] * tasks)
    for index in range(32):
        answered = np.full(tasks, responses)
        frames, timeouts = answered.copy(), np.zeros(tasks, dtype=np.int64)
        if silent is not None and index >= 28:
            frames[silent], timeouts[silent] = 0, responses
        insights.push(index, answered, frames, timeouts, np.zeros(tasks, dtype=np.int64), np.ones(tasks))
    return insights


def test_at_a_thousand_tasks_the_responder_names_the_silent_task_from_per_task_rows() -> None:
    read, verdict = responder_look(_minutes(1000, 20, 7), 32 * 60.0, 1.0, bad_task=7)
    assert (read, verdict) == ("per-task rows", "concentrated: the silent task")


def test_a_small_fleet_is_read_per_job_and_a_healthy_one_names_nobody() -> None:
    assert responder_look(_minutes(20, 4, None), 32 * 60.0, 1.0, bad_task=None) == (
        "per-job rows",
        "inconclusive",
    )


def test_a_bad_revision_is_told_as_a_group_with_the_fleets_ecs_facts() -> None:
    groups = groups_for("bad-revision-10", 60, 0.0, np.random.default_rng(1))
    bad = [task for task, revision in enumerate(groups.revision) if revision == "agent:8"]
    insights = _minutes(60, 4, bad)
    without = responder_look(insights, 32 * 60.0, 1.0, None)
    assert without == ("per-job rows", "concentrated: one task (no single silent task in this family)")
    assert responder_look(insights, 32 * 60.0, 1.0, None, FleetFacts(groups)) == (
        "per-job rows",
        "group event: task definition",
    )
