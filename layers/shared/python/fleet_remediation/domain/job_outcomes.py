"""A job's TTS outcome, defined once: the responder (from its Logs Insights rows), the drainer's TTS
recovery evidence, the backtest, the replay and the detection benchmark all judge a job with it.

A job failed when the agent started responding and no first audio frame ever came (the incident's
definition), or when the agent-side emitter wrote an explicit first-audio timeout for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fleet_remediation.contract.signals import SignalCatalog


@dataclass(frozen=True)
class JobOutcome:
    job_id: str
    log_stream: str
    responses: int
    first_frames: int
    timeouts: int = 0
    # First frames that came after their response's timeout line: slow, not silent.
    late_frames: int = 0

    @property
    def failed(self) -> bool:
        return (self.responses > 0 and self.first_frames == 0) or self.timeouts > self.late_frames


def failing_jobs(jobs: Iterable[JobOutcome]) -> list[JobOutcome]:
    return sorted((job for job in jobs if job.failed), key=lambda j: (j.log_stream, j.job_id))


class JobOutcomeCounter:
    """The offline evaluator: the counts the Logs Insights queries compute (per job and log stream,
    over lines that carry a ``job_id``), taken from parsed log lines."""

    def __init__(self, catalog: SignalCatalog) -> None:
        self._catalog = catalog
        self._counts: dict[tuple[str, str], list[int]] = {}

    def add(self, log_stream: str, record: Mapping[str, Any]) -> bool:
        """Count one line; whether it was one of the job's TTS signals."""
        job_id = record.get("job_id")
        hits = self._catalog.tts_counts(record)
        if not isinstance(job_id, str) or not job_id or not any(hits):
            return False
        counts = self._counts.setdefault((job_id, log_stream), [0, 0, 0, 0])
        for index, hit in enumerate(hits):
            counts[index] += hit
        return True

    def outcomes(self) -> list[JobOutcome]:
        return [
            JobOutcome(job_id, stream, *counts) for (job_id, stream), counts in sorted(self._counts.items())
        ]
