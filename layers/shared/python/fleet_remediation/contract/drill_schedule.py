"""A drill's answer and its schedule: what counts as the remediation answering each fault (for
``lkfr drill`` and the scheduled drill alike), and ``drills.schedule``, the opt-in weekly drill (the
settings model the construct builds the scheduled drill from and the function reads back).

Beside ``contract.drills`` rather than in it: that module is copied verbatim into the agent package,
which knows nothing of the functions or pydantic.
"""

from __future__ import annotations

from pydantic import Field

from fleet_remediation.contract.agent_services import AGENT_SERVICE_NAME_PATTERN
from fleet_remediation.contract.drainer_steps import TAKING_OUT
from fleet_remediation.contract.drills import DrillFault
from fleet_remediation.contract.models import StrictModel
from fleet_remediation.contract.naming import FunctionName

# What counts as the remediation answering each fault: the drainer taking the task out, or the
# reaper deleting the held room.
ANSWERS = {
    DrillFault.TTS_SILENCE: (FunctionName.WORKER_DRAINER, TAKING_OUT),
    DrillFault.CPU_STARVED: (FunctionName.WORKER_DRAINER, TAKING_OUT),
    DrillFault.ABANDONED_SESSION: (FunctionName.ZOMBIE_REAPER, frozenset({"delete-room"})),
}
# The scheduled drill watches inside one Lambda invocation (at most 900 s) with its calls around it.
SCHEDULED_DRILL_MAX_MINUTES = 12
# EventBridge's ScheduleExpression: at most 256 characters, cron(...) or rate(...).
SCHEDULE_EXPRESSION = r"^(cron|rate)\([0-9A-Za-z*?/,#\- ]{1,240}\)$"


class DrillSchedule(StrictModel):
    """A drill on a schedule (opt-in): the environment's scheduled-drill function drills one task
    of one agent service and tells its verdict in the channel and as an action event."""

    fault: DrillFault = Field(default=DrillFault.TTS_SILENCE, description="The fault each drill fakes.")
    expression: str = Field(
        default="cron(0 10 ? * TUE *)",
        pattern=SCHEDULE_EXPRESSION,
        description="When it runs: an EventBridge schedule expression in UTC (default Tuesdays 10:00); "
        "inside the disruption window, or every drill is refused.",
    )
    minutes: int = Field(
        default=10,
        ge=1,
        le=SCHEDULED_DRILL_MAX_MINUTES,
        description="How long each drill waits for the answer: the marker ends by itself then, and "
        "the whole watch fits one Lambda invocation.",
    )
    poll_seconds: int = Field(
        default=30, ge=5, le=120, description="How often the drill reads the product's record."
    )
    agent_service: str | None = Field(
        default=None,
        pattern=AGENT_SERVICE_NAME_PATTERN,
        description="The agent service it drills (default: the environment's only one).",
    )
