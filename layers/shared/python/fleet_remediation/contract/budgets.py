"""Timing budgets, in one place: the functions plan their deadlines with these numbers and the
settings models check at synth that the per-call timeouts fit the Lambda timeout with them.

Every inner deadline is shorter than its caller's, so a slow dependency ends as a typed error in
the report, never as a killed Lambda.
"""

from __future__ import annotations

# Kept free after the last outside call: log the one report and flush the EMF metrics.
REPORT_MARGIN_SECONDS = 3.0
# Delivering one notification after the work: the readable text and the chat JSON, each one SNS
# publish retried with backoff inside ``PUBLISH_BUDGET_SECONDS``.
PUBLISH_BUDGET_SECONDS = 3.0
NOTIFICATION_BUDGET_SECONDS = 2 * PUBLISH_BUDGET_SECONDS
# The drainer's slowest step (a cordon: five ECS calls and two ledger writes) must fit in this.
DRAINER_STEP_BUDGET_SECONDS = 8.0


def reaper_seconds_needed(livekit_request_timeout_seconds: float) -> float:
    """At least one room's re-check and delete, the notification and the report."""
    return 2 * livekit_request_timeout_seconds + REPORT_MARGIN_SECONDS + NOTIFICATION_BUDGET_SECONDS


def tts_reach_seconds_needed(query_timeout_seconds: float) -> float:
    """Two Logs Insights queries in sequence (outcomes, then the failing jobs' rooms), then publish."""
    return 2 * query_timeout_seconds + REPORT_MARGIN_SECONDS + NOTIFICATION_BUDGET_SECONDS


def drainer_seconds_needed(insights_timeout_seconds: float) -> float:
    """Three Logs Insights queries (statistics, job sightings, a suspect worker's TTS outcomes), one
    step, the notification and the report."""
    return (
        3 * insights_timeout_seconds
        + DRAINER_STEP_BUDGET_SECONDS
        + NOTIFICATION_BUDGET_SECONDS
        + REPORT_MARGIN_SECONDS
    )
