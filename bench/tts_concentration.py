"""CPU time of the TTS responder's concentration test (top worker's p-value and the exact
family-wise one) at 1,000 and 5,000 jobs (MAX_JOBS), against the previous implementation (exact
integer arithmetic, kept in devkit/exact_concentration.py), which runs in a child process stopped
after ``--cap`` seconds of wall time ("unfinished").

    PYTHONPATH=agent:functions:layers/shared/python:src:. .venv/bin/python -m bench.tts_concentration
        [--cap 60] [--jobs 1000 --jobs 5000]
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import time
from dataclasses import dataclass

from devkit import exact_concentration
from fleet_remediation.domain.job_outcomes import JobOutcome
from tts_reach_alarm.analysis import MAX_JOBS, assess_concentration


@dataclass(frozen=True)
class Shape:
    name: str
    workers: int
    failure_rate: float
    # The first worker's failure rate (the incident: one worker fails most of its lessons).
    bad_worker_rate: float


SHAPES = (
    Shape("one bad worker of 20 (incident-like)", 20, 0.01, 0.6),
    Shape("fleet-wide, 30% failing on 10 workers", 10, 0.3, 0.3),
)
SIZES = (1000, MAX_JOBS)


def window(shape: Shape, jobs: int, seed: int = 1) -> tuple[list[int], list[int]]:
    """Jobs and failed jobs per worker of a random window of ``jobs`` jobs."""
    rng = random.Random(seed)
    counts, failed = [0] * shape.workers, [0] * shape.workers
    for _ in range(jobs):
        worker = rng.randrange(shape.workers)
        counts[worker] += 1
        rate = shape.bad_worker_rate if worker == 0 else shape.failure_rate
        failed[worker] += rng.random() < rate
    return counts, failed


def outcomes(counts: list[int], failed: list[int]) -> list[JobOutcome]:
    jobs = []
    for worker, (count, bad) in enumerate(zip(counts, failed, strict=True)):
        jobs += [
            JobOutcome(f"AJ_{worker}_{i}", f"agent/agent/{worker:032x}", 3, 0 if i < bad else 3)
            for i in range(count)
        ]
    return jobs


def current(counts: list[int], failed: list[int]) -> tuple[float, float | None]:
    jobs = outcomes(counts, failed)
    started = time.process_time()
    verdict = assess_concentration(jobs, alpha=0.05, min_failed_jobs=2)
    return time.process_time() - started, verdict.p_value_family


def _previous_child(counts: list[int], failed: list[int], results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    started = time.process_time()
    _, family = exact_concentration.top_worker_p_values(counts, failed)
    results.put((time.process_time() - started, float(family)))


def previous(counts: list[int], failed: list[int], cap_seconds: float) -> tuple[float, float] | None:
    """The previous implementation's CPU seconds and result, or None when stopped at the cap."""
    results: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    child = multiprocessing.Process(target=_previous_child, args=(counts, failed, results))
    child.start()
    child.join(cap_seconds)
    if child.is_alive():
        child.terminate()
        child.join()
        return None
    value: tuple[float, float] = results.get()
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=float, default=60.0, help="stop the previous implementation after this")
    parser.add_argument(
        "--jobs",
        type=int,
        action="append",
        help=f"window sizes (repeatable; default {SIZES[0]} and {SIZES[1]})",
    )
    args = parser.parse_args()
    print(f"{'window':<40} {'jobs':>5} {'failed':>6}  {'CPU now':>8}  {'CPU before':>12}  p (now / before)")
    for shape in SHAPES:
        for size in args.jobs or SIZES:
            counts, failed = window(shape, size)
            seconds, p_now = current(counts, failed)
            before = previous(counts, failed, args.cap)
            before_text = f"unfinished@{args.cap:g}s" if before is None else f"{before[0]:.3f} s"
            p_before = "stopped" if before is None else f"{before[1]:.4g}"
            print(
                f"{shape.name:<40} {size:>5} {sum(failed):>6}  {seconds:>6.3f} s  {before_text:>12}  "
                f"{p_now:.4g} / {p_before}"
            )


if __name__ == "__main__":
    main()
