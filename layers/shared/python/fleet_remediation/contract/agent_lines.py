"""The log bytes the agent package (``livekit_fleet_agent``) adds, for the cost model (decision 0015).

Measured on a real livekit-agents worker (the SDK's CLI and JSON formatter, the real livekit-server)
by ``python -m devkit.signal_bytes``: one summary line is about ``SUMMARY_LINE_BYTES`` bytes, one
first-audio timeout line about ``TIMEOUT_LINE_BYTES``; the former per-response lines cost about
``PER_RESPONSE_LINES_BYTES`` bytes per response. The SDK's own lines (``received job request``, the
slow-VAD warnings...) are written with or without the package and are not counted here.
"""

from __future__ import annotations

import math

SUMMARY_LINE_BYTES = 490
TIMEOUT_LINE_BYTES = 604
PER_RESPONSE_LINES_BYTES = 1119
DEFAULT_SUMMARY_INTERVAL_SECONDS = 30.0
DEFAULT_JOBS_PER_TASK = 2
DEFAULT_TIMEOUT_RATE = 0.001


def agent_signal_bytes(
    tasks: int,
    responses_per_minute: float,
    interval_seconds: float = DEFAULT_SUMMARY_INTERVAL_SECONDS,
    *,
    jobs_per_task: int = DEFAULT_JOBS_PER_TASK,
    timeout_rate: float = DEFAULT_TIMEOUT_RATE,
) -> float:
    """Bytes a minute the package's lines add over a fleet of ``tasks`` (each running
    ``jobs_per_task`` jobs at once) answering ``responses_per_minute``.

    Each job writes a summary per ``interval_seconds`` in which it started or played at least one
    response: with its responses arriving at random (Poisson) at r a minute, an interval holds one
    with probability 1 - exp(-r x interval / 60). Timeout lines are one per timed-out response.
    """
    if tasks < 0 or responses_per_minute < 0 or interval_seconds <= 0 or jobs_per_task < 1:
        raise ValueError("tasks and responses must be >= 0, the interval > 0 and jobs_per_task >= 1")
    jobs = tasks * jobs_per_task
    if jobs == 0 or responses_per_minute == 0:
        return 0.0
    intervals_a_minute = 60.0 / interval_seconds
    per_job = responses_per_minute / jobs
    busy = 1.0 - math.exp(-per_job / intervals_a_minute)
    summaries = jobs * intervals_a_minute * busy
    return summaries * SUMMARY_LINE_BYTES + responses_per_minute * timeout_rate * TIMEOUT_LINE_BYTES


def per_response_signal_bytes(
    responses_per_minute: float, *, timeout_rate: float = DEFAULT_TIMEOUT_RATE
) -> float:
    """Bytes a minute of the per-response format (``line_format="per_response"``), for comparison."""
    return responses_per_minute * (PER_RESPONSE_LINES_BYTES + timeout_rate * TIMEOUT_LINE_BYTES)
