"""The TTS recovery evidence counts the jobs that reached the TTS step (a response started, or a
first-audio timeout logged) and, of those, the ones that never got their first audio."""

from __future__ import annotations

from fleet_remediation.domain.job_outcomes import JobOutcome
from worker_drainer.recovery import TtsEvidence


def job(job_id: str, responses: int, first_frames: int, timeouts: int = 0) -> JobOutcome:
    return JobOutcome(job_id, "agent/agent/t0", responses, first_frames, timeouts)


def test_a_job_that_never_reached_the_tts_step_is_no_evidence_either_way() -> None:
    assert TtsEvidence.from_outcomes([job("idle", 0, 0), job("idle-2", 0, 3)]) == TtsEvidence(
        jobs=0, failed=0
    )


def test_a_first_audio_timeout_alone_is_a_job_that_failed() -> None:
    evidence = TtsEvidence.from_outcomes([job("timed-out", 0, 0, timeouts=1), job("idle", 0, 0)])
    assert evidence == TtsEvidence(jobs=1, failed=1)


def test_jobs_that_reached_first_audio_count_and_those_that_did_not_fail() -> None:
    outcomes = [
        job("good", 1, 1),
        job("good-2", 2, 2),
        job("silent", 1, 0),
        job("timed-out", 1, 1, timeouts=2),
        job("idle", 0, 0),
    ]
    assert TtsEvidence.from_outcomes(outcomes) == TtsEvidence(jobs=4, failed=2)
