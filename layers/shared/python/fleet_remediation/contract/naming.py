"""Every name the stack creates and the functions rely on, defined once: synth and runtime import
these, so a renamed alarm, tag or parameter cannot leave the other side behind."""

from __future__ import annotations

from enum import StrEnum

PRODUCT_PREFIX = "lkfr"
# CloudWatch namespace of the functions' own EMF metrics (the agents' signals have their own).
METRICS_NAMESPACE = "LiveKitFleetRemediation"

# EventBridge: what the functions receive and what the responder emits.
EVENT_BUS_NAME = "default"
EVENT_SOURCE = "livekit.fleet-remediation"
SCHEDULE_DETAIL_TYPE = "Scheduled Event"
ALARM_DETAIL_TYPE = "CloudWatch Alarm State Change"
SUSPECT_WORKER_DETAIL_TYPE = "LiveKit Suspect Worker"

# ECS task tags written by the drainer (and read by agent_cooperation in the agents' image).
DRAINER_TAG_PREFIX = "livekit-drainer:"
EXCLUDE_TAG = f"{DRAINER_TAG_PREFIX}exclude"


class FunctionName(StrEnum):
    """A function's folder under functions/, its Powertools service name and its metric dimension."""

    ZOMBIE_REAPER = "zombie_reaper"
    TTS_REACH_ALARM = "tts_reach_alarm"
    WORKER_DRAINER = "worker_drainer"


RUNBOOKS = {
    FunctionName.ZOMBIE_REAPER: "docs/runbooks/zombie-reaper.md",
    FunctionName.TTS_REACH_ALARM: "docs/runbooks/tts-reach.md",
    FunctionName.WORKER_DRAINER: "docs/runbooks/worker-drainer.md",
}
VAD_RUNBOOK = "docs/runbooks/vad-slow-inference.md"


def stack_name(environment: str) -> str:
    return f"LiveKitFleetRemediation-{environment}"


def lambda_function_name(environment: str, function: FunctionName) -> str:
    return f"{PRODUCT_PREFIX}-{environment}-{function.value.replace('_', '-')}"


def mode_parameter_name(environment: str) -> str:
    """The environment's kill switch (SSM); a function's own switch sits under it."""
    return f"/livekit-fleet-remediation/{environment}/mode"


def vad_alarm_name(environment: str) -> str:
    return f"livekit-{environment}-vad-slow-inference"


def tts_reach_alarm_name(environment: str) -> str:
    return f"livekit-{environment}-tts-reach"


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
