"""Every name the stack creates and the functions rely on, defined once: synth and runtime import
these, so a renamed alarm, tag or parameter cannot leave the other side behind."""

from __future__ import annotations

from enum import StrEnum
from pathlib import PurePosixPath
from typing import Literal, Protocol

PRODUCT_PREFIX = "lkfr"
# CloudWatch namespace of the functions' own EMF metrics (the agents' signals have their own).
METRICS_NAMESPACE = "LiveKitFleetRemediation"

# Every kill-switch parameter lives under this SSM path.
MODE_PARAMETER_ROOT = "/livekit-fleet-remediation"
# SNS message attributes every notification carries (subscription filter policies match on them).
SEVERITY_ATTRIBUTE = "severity"
INCIDENT_ATTRIBUTE = "incident_id"
# On the messages of a service's responder and drainer: a team's subscription can take one service's.
AGENT_SERVICE_ATTRIBUTE = "agent_service"
# Present on the functions' own messages, absent on CloudWatch's alarm notifications: a pager
# subscribed with ``{"notification_kind": [{"exists": false}]}`` gets one page per alarm transition.
NOTIFICATION_KIND_ATTRIBUTE = "notification_kind"

# EventBridge: what the functions receive and what the responder emits.
EVENT_BUS_NAME = "default"
EVENT_SOURCE = "livekit.fleet-remediation"
SCHEDULE_DETAIL_TYPE = "Scheduled Event"
# EventBridge delivers its schedule rules' events from this source only.
SCHEDULE_SOURCE = "aws.events"
ALARM_DETAIL_TYPE = "CloudWatch Alarm State Change"
SUSPECT_WORKER_DETAIL_TYPE = "LiveKit Suspect Worker"

# ECS task tags written by the drainer (and read by livekit_fleet_agent in the agents' image).
DRAINER_TAG_PREFIX = "livekit-drainer:"
EXCLUDE_TAG = f"{DRAINER_TAG_PREFIX}exclude"
# The tag ECS puts on every task a service starts when the service has ECS managed tags on
# (enableECSManagedTags); the drainer's IAM policy conditions its task changes on it.
ECS_SERVICE_NAME_TAG = "aws:ecs:serviceName"
# A room whose JSON metadata sets this key to true is never reaped (the application opts it out).
ROOM_OPT_OUT_KEY = "lkfr_reaper_protected"


class FunctionId(Protocol):
    """What names a function: its folder under functions/ (``value``, also its Powertools service
    name and metric dimension) and its hyphenated ``slug`` in AWS resource names. The built-in three
    are ``FunctionName``s; a function added as a spec brings its own."""

    @property
    def value(self) -> str: ...

    @property
    def slug(self) -> str: ...


class FunctionName(StrEnum):
    """A function's folder under functions/, its Powertools service name and its metric dimension."""

    ZOMBIE_REAPER = "zombie_reaper"
    TTS_REACH_ALARM = "tts_reach_alarm"
    WORKER_DRAINER = "worker_drainer"

    @property
    def slug(self) -> str:
        """The hyphenated form used in AWS resource names (``zombie-reaper``)."""
        return self.value.replace("_", "-")


class DrillFunctionName(StrEnum):
    """The scheduled drill: an environment's function only where ``drills.schedule`` is set, so not
    one of the built-in three every environment gets (no switch, no alarm of it elsewhere)."""

    SCHEDULED_DRILL = "scheduled_drill"

    @property
    def slug(self) -> str:
        return self.value.replace("_", "-")


RUNBOOKS: dict[FunctionName | DrillFunctionName, str] = {
    FunctionName.ZOMBIE_REAPER: "docs/runbooks/zombie-reaper.md",
    FunctionName.TTS_REACH_ALARM: "docs/runbooks/tts-reach.md",
    FunctionName.WORKER_DRAINER: "docs/runbooks/worker-drainer.md",
    DrillFunctionName.SCHEDULED_DRILL: "docs/operations/drill.md",
}
VAD_RUNBOOK = "docs/runbooks/vad-slow-inference.md"
# What ``runbook_base_url`` points at: the built docs site (``make docs``) or a view of the
# repository's files (``.../blob/main``); runbook links follow it.
RunbookLinks = Literal["site", "repository"]
RUNBOOK_LINKS_HELP = (
    "What runbook_base_url points at: `site`, the built docs site (`make docs`) hosted there, links "
    "runbooks/<name>.html; `repository`, a view of the repository's files (.../blob/main), links "
    "docs/runbooks/<name>.md. Notifications, chat messages and the dashboard use it."
)


# The functions each agent service gets its own of; the reaper is the environment's.
PER_SERVICE_FUNCTIONS = frozenset({FunctionName.TTS_REACH_ALARM, FunctionName.WORKER_DRAINER})
# AWS's limits on the names the per-service resources get.
LAMBDA_FUNCTION_NAME_MAX = 64
ALARM_NAME_MAX = 255
LOG_GROUP_NAME_MAX = 512
SSM_PARAMETER_NAME_MAX = 1011


def stack_name(environment: str) -> str:
    return f"LiveKitFleetRemediation-{environment}"


def _scope(environment: str, function: FunctionId, service: str | None) -> str:
    """``<env>`` for the environment's functions, ``<env>-<service>`` for a service's own."""
    per_service = function.value in PER_SERVICE_FUNCTIONS
    if per_service and not service:
        raise ValueError(f"{function.value} runs per agent service: name the service")
    if service and not per_service:
        raise ValueError(f"{function.value} is the environment's, not a service's")
    return f"{environment}-{service}" if service else environment


def lambda_function_name(environment: str, function: FunctionId, service: str | None = None) -> str:
    return f"{PRODUCT_PREFIX}-{_scope(environment, function, service)}-{function.slug}"


def mode_parameter_name(environment: str) -> str:
    """The environment's kill switch (SSM); a function's and a service's own switches sit under it."""
    return f"{MODE_PARAMETER_ROOT}/{environment}/mode"


def function_mode_parameter_name(environment: str, function: FunctionId) -> str:
    """A function's own kill switch, under the environment's (which stays the ceiling); one for all
    agent services' copies of the function."""
    return f"{MODE_PARAMETER_ROOT}/{environment}/{function.slug}/mode"


def service_mode_parameter_name(environment: str, service: str) -> str:
    """An agent service's own kill switch, under the environment's: its responder and drainer read it."""
    return f"{MODE_PARAMETER_ROOT}/{environment}/services/{service}/mode"


def function_alarm_name(environment: str, function: FunctionId, kind: str, service: str | None = None) -> str:
    """A self-monitoring alarm of one function (``kind``: errors, throttles, dlq, ...)."""
    return f"{lambda_function_name(environment, function, service)}-{kind}"


def function_log_group_name(environment: str, function: FunctionId, service: str | None = None) -> str:
    return f"/aws/lambda/{lambda_function_name(environment, function, service)}"


def vad_alarm_name(environment: str, service: str) -> str:
    """A service's composite alarm that pages and that the reaper and its drainer handle."""
    return f"livekit-{environment}-{service}-vad-slow-inference"


def tts_reach_alarm_name(environment: str, service: str) -> str:
    """A service's composite alarm that pages and that its responder handles."""
    return f"livekit-{environment}-{service}-tts-reach"


def alarm_part_name(page_name: str, label: str) -> str:
    """One metric alarm of a composite page (no actions of its own): ``<page>-<label>``."""
    return f"{page_name}-{label}"


def dashboard_name(environment: str) -> str:
    return f"livekit-{environment}-fleet"


def metric_filter_name(environment: str, service: str, metric_name: str) -> str:
    return f"{PRODUCT_PREFIX}-{environment}-{service}-{metric_name}"


def names_too_long(environment: str, service: str) -> list[str]:
    """The per-service names (functions, their log groups and alarms, the pages, the switch) over
    AWS's limits, each said with its length and limit; empty when all fit."""
    longest_alarm_kind = "schedule-stopped"
    names = [
        *(
            (lambda_function_name(environment, function, service), LAMBDA_FUNCTION_NAME_MAX)
            for function in sorted(PER_SERVICE_FUNCTIONS)
        ),
        *(
            (function_alarm_name(environment, function, longest_alarm_kind, service), ALARM_NAME_MAX)
            for function in sorted(PER_SERVICE_FUNCTIONS)
        ),
        *(
            (function_log_group_name(environment, function, service), LOG_GROUP_NAME_MAX)
            for function in sorted(PER_SERVICE_FUNCTIONS)
        ),
        (alarm_part_name(vad_alarm_name(environment, service), "hold"), ALARM_NAME_MAX),
        (alarm_part_name(tts_reach_alarm_name(environment, service), "hold"), ALARM_NAME_MAX),
        (service_mode_parameter_name(environment, service), SSM_PARAMETER_NAME_MAX),
    ]
    return [f"{name} ({len(name)} > {limit})" for name, limit in names if len(name) > limit]


def log_stream_for(task_id: str, prefix: str, container: str) -> str:
    """The awslogs driver names a task's container stream ``<prefix>/<container>/<task id>``."""
    return f"{prefix}/{container}/{task_id}"


def task_id_from_log_stream(log_stream: str) -> str:
    """The inverse of ``log_stream_for``: the stream name's last segment."""
    return log_stream.rsplit("/", 1)[-1]


def runbook_url(base: object, path: str, links: RunbookLinks) -> str:
    """The runbook at ``path`` (``docs/runbooks/<name>.md``) under ``base``, joined with exactly one
    slash: the built docs site's page (``runbooks/<name>.html``) or the repository's file."""
    if links == "site":
        path = str(PurePosixPath(path).relative_to("docs").with_suffix(".html"))
    return f"{str(base).rstrip('/')}/{path.lstrip('/')}"
