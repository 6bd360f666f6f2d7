"""Every name the stack creates and the functions rely on, defined once: synth and runtime import
these, so a renamed alarm, tag or parameter cannot leave the other side behind."""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol

PRODUCT_PREFIX = "lkfr"
# CloudWatch namespace of the functions' own EMF metrics (the agents' signals have their own).
METRICS_NAMESPACE = "LiveKitFleetRemediation"

# Every kill-switch parameter lives under this SSM path.
MODE_PARAMETER_ROOT = "/livekit-fleet-remediation"
# SNS message attributes every notification carries (subscription filter policies match on them).
SEVERITY_ATTRIBUTE = "severity"
INCIDENT_ATTRIBUTE = "incident_id"
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


RUNBOOKS = {
    FunctionName.ZOMBIE_REAPER: "docs/runbooks/zombie-reaper.md",
    FunctionName.TTS_REACH_ALARM: "docs/runbooks/tts-reach.md",
    FunctionName.WORKER_DRAINER: "docs/runbooks/worker-drainer.md",
}
VAD_RUNBOOK = "docs/runbooks/vad-slow-inference.md"


def stack_name(environment: str) -> str:
    return f"LiveKitFleetRemediation-{environment}"


def lambda_function_name(environment: str, function: FunctionId) -> str:
    return f"{PRODUCT_PREFIX}-{environment}-{function.slug}"


def mode_parameter_name(environment: str) -> str:
    """The environment's kill switch (SSM); a function's own switch sits under it."""
    return f"{MODE_PARAMETER_ROOT}/{environment}/mode"


def function_mode_parameter_name(environment: str, function: FunctionId) -> str:
    """A function's own kill switch, under the environment's (which stays the ceiling)."""
    return f"{MODE_PARAMETER_ROOT}/{environment}/{function.slug}/mode"


def function_alarm_name(environment: str, function: FunctionId, kind: str) -> str:
    """A self-monitoring alarm of one function (``kind``: errors, throttles, dlq, ...)."""
    return f"{lambda_function_name(environment, function)}-{kind}"


def function_log_group_name(environment: str, function: FunctionId) -> str:
    return f"/aws/lambda/{lambda_function_name(environment, function)}"


def vad_alarm_name(environment: str) -> str:
    """The composite alarm that pages and that the reaper and the drainer handle."""
    return f"livekit-{environment}-vad-slow-inference"


def tts_reach_alarm_name(environment: str) -> str:
    """The composite alarm that pages and that the responder handles."""
    return f"livekit-{environment}-tts-reach"


def alarm_part_name(page_name: str, label: str) -> str:
    """One metric alarm of a composite page (no actions of its own): ``<page>-<label>``."""
    return f"{page_name}-{label}"


def dashboard_name(environment: str) -> str:
    return f"livekit-{environment}-fleet"


def metric_filter_name(environment: str, metric_name: str) -> str:
    return f"{PRODUCT_PREFIX}-{environment}-{metric_name}"


def log_stream_for(task_id: str, prefix: str, container: str) -> str:
    """The awslogs driver names a task's container stream ``<prefix>/<container>/<task id>``."""
    return f"{prefix}/{container}/{task_id}"


def task_id_from_log_stream(log_stream: str) -> str:
    """The inverse of ``log_stream_for``: the stream name's last segment."""
    return log_stream.rsplit("/", 1)[-1]


def runbook_url(base: object, path: str) -> str:
    """Join a runbook base URL and a relative document path with exactly one slash."""
    return f"{str(base).rstrip('/')}/{path.lstrip('/')}"
