"""One job-outcome evaluator: the responder's rows, the offline counter (backtest, replay,
offline Insights) and the drainer's TTS evidence judge a job the same way."""

from __future__ import annotations

from fleet_remediation.adapters.logs_insights import Row
from fleet_remediation.contract.signals import SignalCatalog
from fleet_remediation.domain.job_outcomes import JobOutcome, JobOutcomeCounter, failing_jobs
from tts_reach_alarm.analysis import parse_job_outcomes

CATALOG = SignalCatalog.default()


def _line(message: str, job_id: str = "AJ_1") -> dict[str, str]:
    return {"message": message, "job_id": job_id, "level": "INFO"}


def test_a_job_fails_without_a_first_frame_or_with_an_explicit_timeout() -> None:
    assert JobOutcome("a", "s", responses=2, first_frames=0).failed
    assert JobOutcome("b", "s", responses=2, first_frames=2, timeouts=1).failed
    assert not JobOutcome("c", "s", responses=2, first_frames=1).failed
    assert not JobOutcome("d", "s", responses=0, first_frames=0).failed


def test_the_offline_counter_and_the_insights_rows_agree() -> None:
    counter = JobOutcomeCounter(CATALOG)
    lines = [
        ("agent/c/t1", _line("agent_response_started", "AJ_1")),
        ("agent/c/t1", _line("tts_node_first_audio_frame", "AJ_1")),
        ("agent/c/t2", _line("agent_response_started", "AJ_2")),
        ("agent/c/t2", _line("tts_first_audio_timeout", "AJ_2")),
        ("agent/c/t2", _line("received job request", "AJ_2")),
        ("agent/c/t2", {"message": "agent_response_started"}),
    ]
    counted = [counter.add(stream, record) for stream, record in lines]
    assert counted == [True, True, True, True, False, False]
    offline = counter.outcomes()
    rows: list[Row] = [
        {
            "job_id": job.job_id,
            "@logStream": job.log_stream,
            "responses": str(job.responses),
            "first_frames": str(job.first_frames),
            "timeouts": str(job.timeouts),
        }
        for job in offline
    ]
    assert parse_job_outcomes(rows) == offline
    assert [job.job_id for job in failing_jobs(offline)] == ["AJ_2"]


def test_rows_without_a_timeouts_column_count_no_timeouts() -> None:
    (job,) = parse_job_outcomes(
        [{"job_id": "AJ_1", "@logStream": "s", "responses": "3", "first_frames": "0"}]
    )
    assert job == JobOutcome("AJ_1", "s", 3, 0, 0)
    assert job.failed
