"""Which incident a drainer run belongs to, so its message lands in that incident's thread
(``core.messages``: alarm transition → responder → drainer → resolved share one id).

* a suspect-worker event: the TTS-reach incident the responder put in it (if it carries none, the
  one its alarm and window name, deterministically);
* the VAD alarm: that alarm transition's incident (an OK belongs to the ALARM it ends);
* the schedule or a manual invoke: the incident that started the ladder this run advances (recorded
  on the task at its first rung, ``task_tags.INCIDENT_TAG``), else a new one named after the run.

Ids are made to fit an ECS tag value (``task_tags.incident_tag_value``) wherever they come from, so the
id on the task and the id in every message are the same string.
"""

from __future__ import annotations

from datetime import datetime

from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.core import incidents
from worker_drainer.decide.plan_model import LadderPlan, Snapshot
from worker_drainer.decide.task_tags import incident_tag_value
from worker_drainer.events import DrainerTrigger

FUNCTION = FunctionName.WORKER_DRAINER


def trigger_incident(parsed: DrainerTrigger, environment: str, service: str, now: datetime) -> str:
    """The incident the event itself names (or, for the schedule and manual runs, a new one)."""
    suspect, alarm = parsed.suspect, parsed.alarm
    if suspect is not None:
        found = suspect.incident_id or incidents.alarm_incident_id(
            environment, suspect.alarm_name, suspect.window.end
        )
    elif alarm is not None:
        found = incidents.transition_incident_id(environment, alarm)
    elif parsed.manual is not None and parsed.manual.chat is not None:
        found = parsed.manual.chat.incident
    else:
        scheduled = parsed.trigger.detail.get("time")
        moment = datetime.fromisoformat(scheduled) if parsed.manual is None and scheduled else now
        found = incidents.run_incident_id(environment, FUNCTION, moment, service)
    return incident_tag_value(found)


def message_incident(
    parsed: DrainerTrigger, run_incident: str, plan: LadderPlan, snapshot: Snapshot | None
) -> str:
    """An event's run threads under the event's incident; a schedule or manual run under the
    incident of the first ladder it tells about (steps that act first, then refusals)."""
    if parsed.suspect is not None or parsed.alarm is not None or snapshot is None:
        return run_incident
    told = [s.task_id for s in plan.steps if s.acting] + [s.task_id for s in plan.steps if s.notify]
    recorded = (snapshot.marks[task_id].incident for task_id in told if task_id in snapshot.marks)
    return next((found for found in recorded if found), run_incident)


def alarm_behind(parsed: DrainerTrigger) -> str | None:
    """The alarm whose transition started the run: the VAD alarm, or the suspect's TTS-reach alarm."""
    if parsed.alarm is not None:
        return parsed.alarm.alarm_name
    return parsed.suspect.alarm_name if parsed.suspect is not None else None
