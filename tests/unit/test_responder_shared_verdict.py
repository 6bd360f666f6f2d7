"""The responder's per-job test names the worker whose jobs fail most; the verdict every path shares
(``fleet_remediation.domain.task_reach``), over the same jobs summed per task, has the last word on
whether the failure is the fleet's: then nobody is named, as the drainer would decide."""

from __future__ import annotations

from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.domain.job_outcomes import JobOutcome
from tts_reach_alarm.analysis import Verdict, assess_concentration
from tts_reach_alarm.per_task import tasks_of, unless_shared

SETTINGS = TtsReachSettings.model_validate(
    {
        "environment_name": "it",
        "mode_parameter_name": "/m",
        "notification_topic_arn": "arn:aws:sns:eu-west-1:123456789012:t",
        "runbook_base_url": "https://runbooks.example.com/repo",
        "aws_region": "eu-west-1",
        "agent_log_group": "/agents",
        "idempotency_table_name": "once",
    }
)
WORKERS = 20


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


def _judged(jobs: list[JobOutcome]) -> tuple[Verdict, Verdict, str]:
    per_job = assess_concentration(jobs, alpha=0.05, min_failed_jobs=3)
    final = unless_shared(per_job, jobs, SETTINGS)
    return per_job.verdict, final.verdict, final.reason


def test_a_failure_on_one_worker_stays_named() -> None:
    per_job, final, _ = _judged(_jobs(failing_workers=1))
    assert (per_job, final) == (Verdict.CONCENTRATED, Verdict.CONCENTRATED)


def test_a_failure_shared_by_a_fifth_of_the_fleet_names_nobody_though_one_worker_fails_most() -> None:
    # Four of twenty workers failing is the shared rule's fleet-wide share (20 %): its edge.
    per_job, final, reason = _judged(_jobs(failing_workers=4))
    assert per_job is Verdict.CONCENTRATED
    assert final is Verdict.FLEET_WIDE
    assert "4 of 20 tasks fail" in reason
    assert "per job, concentrated" in reason


def test_one_worker_short_of_the_fleet_wide_share_stays_named() -> None:
    per_job, final, _ = _judged(_jobs(failing_workers=3))
    assert (per_job, final) == (Verdict.CONCENTRATED, Verdict.CONCENTRATED)


def test_tasks_of_sums_each_streams_jobs() -> None:
    rows = {row.log_stream: row for row in tasks_of(_jobs(failing_workers=2, top_jobs=3))}
    assert len(rows) == WORKERS
    top = rows["agent/w0"]
    assert (top.responses, top.first_frames, top.timeouts, top.late_frames) == (110, 80, 30, 0)
    assert rows["agent/w1"].timeouts == 20
    assert rows["agent/w2"].timeouts == 0
