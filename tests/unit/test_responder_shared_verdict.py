"""The responder's per-job test names the worker whose jobs fail most; the verdict every path shares
(``fleet_remediation.domain.task_reach``), over the same jobs summed per task with their TTS
endpoint and ECS's facts, has the last word (``tts_reach_alarm.per_task``): a failure the fleet or a
group shares names nobody, a worker the per-task test holds and clears is not named, and a worker
whose tasks' facts ECS could not all tell is withheld."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fleet_remediation.contract.task_reach import TaskReachSettings
from fleet_remediation.core.errors import AwsApiError
from fleet_remediation.domain.group_verdict import TaskFacts
from fleet_remediation.domain.job_outcomes import JobOutcome
from fleet_remediation.domain.task_reach import TaskReach
from tts_reach_alarm.adapters.task_facts import FactsRead
from tts_reach_alarm.analysis import Concentration, Verdict, assess_concentration
from tts_reach_alarm.per_task import per_task_concentration, tasks_of, unless_shared

REACH = TaskReachSettings()
WORKERS = 20
NOW = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


def _jobs(failing_workers: int, top_jobs: int = 12) -> list[JobOutcome]:
    """Four healthy jobs a worker; the first ``failing_workers`` workers have two silent jobs (ten
    responses, ten timeouts each), the first of them ``top_jobs`` such jobs."""
    jobs = []
    for worker in range(WORKERS):
        stream = f"agent/w{worker}"
        jobs += [JobOutcome(f"ok-{worker}-{j}", stream, 20, 20) for j in range(4)]
        silent = top_jobs if worker == 0 else 2 if worker < failing_workers else 0
        jobs += [JobOutcome(f"bad-{worker}-{j}", stream, 10, 0, 10) for j in range(silent)]
    return jobs


def _facts(zone_of: dict[int, str] | None = None, started: dict[int, datetime] | None = None) -> FactsRead:
    """Every worker running, in eu-west-1b unless ``zone_of`` says otherwise, started a day ago."""
    return FactsRead(
        tuple(
            TaskFacts(
                f"agent/w{w}",
                (zone_of or {}).get(w, "eu-west-1b" if w % 2 else "eu-west-1c"),
                "arn:aws:ecs:eu-west-1:1:task-definition/agent:7",
                (started or {}).get(w, NOW - timedelta(days=1)),
            )
            for w in range(WORKERS)
        )
    )


def _judged(
    jobs: list[JobOutcome], facts: FactsRead | None = None, endpoints: dict[str, str] | None = None
) -> tuple[Verdict, Concentration]:
    per_job = assess_concentration(jobs, alpha=0.05, min_failed_jobs=3)
    return per_job.verdict, unless_shared(per_job, tasks_of(jobs, endpoints), REACH, facts, NOW)


def test_a_failure_on_one_worker_stays_named_with_or_without_ecs() -> None:
    for facts in (None, _facts()):
        per_job, final = _judged(_jobs(failing_workers=1), facts)
        assert (per_job, final.verdict) == (Verdict.CONCENTRATED, Verdict.CONCENTRATED)
        assert final.top is not None
        assert final.top.log_stream == "agent/w0"


def test_a_failure_shared_by_a_fifth_of_the_fleet_names_nobody_though_one_worker_fails_most() -> None:
    # Four of twenty workers failing is the shared rule's fleet-wide share (20 %): its edge.
    per_job, final = _judged(_jobs(failing_workers=4))
    assert per_job is Verdict.CONCENTRATED
    assert final.verdict is Verdict.FLEET_WIDE
    assert final.top is None
    assert "4 of 20 tasks fail" in final.reason
    assert "per job, concentrated" in final.reason


def test_one_worker_short_of_the_fleet_wide_share_stays_named() -> None:
    per_job, final = _judged(_jobs(failing_workers=3))
    assert (per_job, final.verdict) == (Verdict.CONCENTRATED, Verdict.CONCENTRATED)


def test_three_failing_workers_on_one_tts_endpoint_are_a_group_and_nobody_is_named() -> None:
    endpoints = {f"agent/w{w}": "tts/us-east-1" if w < 3 else "tts/eu-west-1" for w in range(WORKERS)}
    _, final = _judged(_jobs(failing_workers=3), endpoints=endpoints)
    assert final.verdict is Verdict.GROUP
    assert final.top is None
    assert final.group is not None
    assert final.group.label == "TTS endpoint=tts/us-east-1"
    assert final.evidence()["group"] == "TTS endpoint=tts/us-east-1"


def test_three_failing_workers_in_one_zone_are_a_group_from_ecs_facts_only() -> None:
    _, final = _judged(_jobs(failing_workers=3), _facts({0: "eu-west-1a", 1: "eu-west-1a", 2: "eu-west-1a"}))
    assert final.verdict is Verdict.GROUP
    assert final.group is not None
    assert final.group.label == "availability zone=eu-west-1a"
    assert "3 of the 3 tasks with availability zone eu-west-1a fail" in final.reason


def test_a_worker_the_per_task_test_holds_and_does_not_suspect_is_not_named() -> None:
    """Its failed jobs each miss one first frame of ten: per job it concentrates, per task its 12
    missing of 200 responses are 6 %, under ``min_failing_share`` (10 %)."""
    jobs = [job for job in _jobs(failing_workers=0, top_jobs=0)]
    jobs += [JobOutcome(f"slow-{j}", "agent/w0", 10, 9, 1) for j in range(12)]
    per_job, final = _judged(jobs, _facts())
    assert per_job is Verdict.CONCENTRATED
    assert final.verdict is Verdict.INCONCLUSIVE
    assert final.top is None
    assert final.reason.startswith("not named: per task, 12 of 200 responses without a first frame")


def test_a_worker_in_warm_up_that_still_plays_frames_is_not_named() -> None:
    jobs = [*_jobs(failing_workers=1), JobOutcome("ok-late", "agent/w0", 4, 4)]
    _, final = _judged(jobs, _facts(started={0: NOW - timedelta(minutes=2)}))
    assert final.verdict is Verdict.INCONCLUSIVE
    assert "not named: per task" in final.reason


def test_a_worker_ecs_says_is_no_longer_running_is_not_named() -> None:
    running = FactsRead(tuple(f for f in _facts().running if f.log_stream != "agent/w0"))
    _, final = _judged(_jobs(failing_workers=1), running)
    assert final.verdict is Verdict.INCONCLUSIVE
    assert final.reason.startswith("not named: its task is no longer running")


def test_a_worker_is_withheld_while_any_tasks_facts_are_unknown() -> None:
    known = _facts().running
    unread = FactsRead(
        known[:10],
        tuple(f.log_stream for f in known[10:]),
        (AwsApiError("throttled", aws_code="ThrottlingException"),),
    )
    _, final = _judged(_jobs(failing_workers=1), unread)
    assert final.verdict is Verdict.INCONCLUSIVE
    assert final.top is None
    assert "unknown for 10 task(s) (throttled)" in final.reason
    assert "a group by zone, revision or start could not be ruled out" in final.reason


def test_a_group_is_told_even_while_some_facts_are_unknown() -> None:
    endpoints = {f"agent/w{w}": "tts/us-east-1" if w < 3 else "tts/eu-west-1" for w in range(WORKERS)}
    unread = FactsRead(
        (),
        tuple(f"agent/w{w}" for w in range(WORKERS)),
        (AwsApiError("throttled", aws_code="ThrottlingException"),),
    )
    _, final = _judged(_jobs(failing_workers=3), unread, endpoints)
    assert final.verdict is Verdict.GROUP


def test_tasks_of_sums_each_streams_jobs_with_its_endpoint() -> None:
    rows = {
        row.log_stream: row
        for row in tasks_of(_jobs(failing_workers=2, top_jobs=3), {"agent/w0": "tts/us-east-1"})
    }
    assert len(rows) == WORKERS
    top = rows["agent/w0"]
    assert (top.responses, top.first_frames, top.timeouts, top.late_frames) == (110, 80, 30, 0)
    assert top.tts_endpoint == "tts/us-east-1"
    assert rows["agent/w1"].tts_endpoint == ""
    assert rows["agent/w1"].timeouts == 20
    assert rows["agent/w2"].timeouts == 0


def _rows(silent: set[int]) -> list[TaskReach]:
    return [
        TaskReach(f"agent/w{w}", 40, 0 if w in silent else 40, 40 if w in silent else 0)
        for w in range(WORKERS)
    ]


def test_the_per_task_read_names_a_silent_task_only_when_every_fact_was_read() -> None:
    named = per_task_concentration(_rows({5}), REACH, _facts(), NOW)
    assert named.verdict is Verdict.CONCENTRATED
    assert named.top is not None
    assert named.top.log_stream == "agent/w5"
    known = _facts().running
    withheld = per_task_concentration(_rows({5}), REACH, FactsRead(known[1:], ("agent/w0",)), NOW)
    assert withheld.verdict is Verdict.INCONCLUSIVE
    assert withheld.top is None
    assert "unknown for 1 task(s) (ECS does not know them)" in withheld.reason


def test_the_per_task_read_tells_a_zone_group_and_names_nobody() -> None:
    found = per_task_concentration(_rows({0, 2}), REACH, _facts({0: "eu-west-1a", 2: "eu-west-1a"}), NOW)
    assert found.verdict is Verdict.GROUP
    assert found.top is None
    assert found.group is not None
    assert found.group.label == "availability zone=eu-west-1a"
