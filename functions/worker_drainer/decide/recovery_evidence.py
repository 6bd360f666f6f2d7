"""Recovery evidence (pure): a cordon or a reap is undone by the robot only on evidence for the
same cause it was made for, and only once the recovery window has passed since it was made.

- VAD attribution: no slow-inference warning for ``recovery_minutes``.
- TTS suspect: the worker's jobs reach first audio again: since the cordon at least
  ``tts_recovery_min_jobs`` jobs started a response, and none of them missed its first audio frame
  (nor logged a first-audio timeout).
- Manual: never. Only an operator's ``undrain`` ends a hand drain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from fleet_remediation.contract.policies import DrainerPolicy
from fleet_remediation.domain.job_outcomes import JobOutcome
from worker_drainer.decide.attribution import WorkerAssessment
from worker_drainer.decide.task_tags import Cause


@dataclass(frozen=True)
class Recovery:
    recovered: bool
    reason: str


@dataclass(frozen=True)
class TtsEvidence:
    """A worker's jobs since its cordon: how many started a response, how many never reached audio."""

    jobs: int
    failed: int

    @classmethod
    def from_outcomes(cls, outcomes: Sequence[JobOutcome]) -> TtsEvidence:
        answered = [o for o in outcomes if o.responses > 0 or o.timeouts > 0]
        return cls(jobs=len(answered), failed=sum(o.failed for o in answered))


NOT_YET = Recovery(False, "")


def _window_open(since: datetime | None, now: datetime, policy: DrainerPolicy) -> bool:
    return since is None or now - since >= timedelta(minutes=policy.recovery_minutes)


def vad_recovery(
    worker: WorkerAssessment | None,
    fleet_known: bool,
    since: datetime | None,
    now: datetime,
    policy: DrainerPolicy,
) -> Recovery:
    if not fleet_known or not _window_open(since, now, policy):
        return NOT_YET
    quiet_since = now - timedelta(minutes=policy.recovery_minutes)
    if worker is not None and worker.stats is not None and worker.stats.last_seen > quiet_since:
        return NOT_YET
    return Recovery(True, f"recovered: no slow inference for {policy.recovery_minutes} min")


def tts_recovery(
    evidence: TtsEvidence | None, since: datetime | None, now: datetime, policy: DrainerPolicy
) -> Recovery:
    if evidence is None or not _window_open(since, now, policy):
        return NOT_YET
    if evidence.failed or evidence.jobs < policy.tts_recovery_min_jobs:
        return NOT_YET
    return Recovery(
        True, f"recovered: {evidence.jobs} job(s) since the cordon all reached first audio (TTS evidence)"
    )


def recovery_for(
    cause: Cause,
    worker: WorkerAssessment | None,
    fleet_known: bool,
    tts: TtsEvidence | None,
    since: datetime | None,
    now: datetime,
    policy: DrainerPolicy,
) -> Recovery:
    match cause:
        case Cause.MANUAL:
            return NOT_YET
        case Cause.TTS_SUSPECT:
            return tts_recovery(tts, since, now, policy)
        case Cause.VAD:
            return vad_recovery(worker, fleet_known, since, now, policy)
