"""The bytes a minute the agent package (``livekit_fleet_agent``) adds to the agents' log group: part
of the bill, since stock livekit-agents does not write them.

``AgentSignalBytes`` is the one interface the model prices: (tasks, responses a minute) → bytes a
minute, CloudWatch's 26 bytes of per-event overhead included. ``per_response_lines`` is the format
the agent package writes today (two lines per response, as the replay's profile measured them);
``SummaryFormat`` the compact format: a summary line per job every interval plus a rare per-event
line (``lkfr cost --agent-summary-line-bytes``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

AgentSignalBytes = Callable[[int, float], float]
# CloudWatch Logs bills this many bytes per event on top of its text.
EVENT_OVERHEAD_BYTES = 26
# A worker runs at most two jobs at once (the deployment shape the incident runbooks describe).
JOBS_PER_TASK = 2


def per_response_lines(bytes_per_response: float) -> AgentSignalBytes:
    """Today's format: ``agent_response_started`` and ``tts_node_first_audio_frame`` per response
    (``bytes_per_response``: both lines with their overhead, as measured)."""

    def bytes_per_minute(tasks: int, responses_per_minute: float) -> float:
        return responses_per_minute * bytes_per_response

    return bytes_per_minute


@dataclass(frozen=True)
class SummaryFormat:
    """A compact summary line per job every ``interval_seconds`` (``summary_bytes`` with its
    overhead), and an event line of ``event_bytes`` for ``events_per_response`` of the responses
    (e.g. a first-audio timeout)."""

    summary_bytes: float
    interval_seconds: float
    event_bytes: float
    events_per_response: float
    jobs_per_task: float = JOBS_PER_TASK

    def __call__(self, tasks: int, responses_per_minute: float) -> float:
        summaries = tasks * self.jobs_per_task * 60 / self.interval_seconds
        events = responses_per_minute * self.events_per_response
        return summaries * self.summary_bytes + events * self.event_bytes
