"""Every EMF metric the functions emit, defined once.

The functions emit through these definitions (``core.observability.emit``) and the stack graphs and
alarms on them (``MetricDefinition.dimensions``), so a metric's identity — namespace, name and the
exact dimension set — cannot differ between the two sides. CloudWatch matches dimension sets
exactly: a graph asking for ``{service}`` never shows a metric emitted with
``{environment, service}``.

Dimensions: Powertools Metrics adds ``service`` (``POWERTOOLS_SERVICE_NAME``, the function's folder
name) and ``core.invocation.run_reported`` adds ``environment`` and, for an agent service's own
responder and drainer, ``agent_service``; nothing else adds any.

A metric series costs $0.30 a month (``bench.cost``), so only what an alarm or the dashboard reads is
a series; every other count (``series=False``) rides in the same EMF record as a plain field,
readable with Logs Insights but never a metric. A series is billed for the hours it is published
in, so a count of what was done (``sparse``) is published only when it is not zero: a healthy hour
publishes only ``InvocationFailed``, which an alarm watches.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleet_remediation.contract.drainer_steps import STEP_TABLE
from fleet_remediation.contract.naming import METRICS_NAMESPACE, FunctionId, FunctionName

ENVIRONMENT_DIMENSION = "environment"
SERVICE_DIMENSION = "service"
AGENT_SERVICE_DIMENSION = "agent_service"


@dataclass(frozen=True)
class MetricDefinition:
    name: str
    # The functions that emit it, one series each (dimension ``service``).
    functions: tuple[FunctionName, ...]
    description: str
    unit: str = "Count"
    namespace: str = METRICS_NAMESPACE
    # Emitted by the shared pipeline, so by every function, a spec-built one included.
    every_function: bool = False
    # False: a field of the EMF record only, not a metric series (nothing graphs or alarms on it).
    series: bool = True
    # Published only when not zero (graphed as a sum, where a missing datapoint reads as none).
    sparse: bool = False

    def dimensions(
        self, environment: str, function: FunctionId | None = None, agent_service: str | None = None
    ) -> dict[str, str]:
        """The exact dimension set of the series ``function`` emits (the only emitter by default),
        for one agent service's copy of it when ``agent_service`` is given."""
        if function is None:
            if len(self.functions) != 1:
                raise ValueError(f"{self.name} is emitted by several functions: say which one")
            function = self.functions[0]
        if not self.every_function and function not in self.functions:
            raise ValueError(f"{function.value} does not emit {self.name}")
        dimensions = {ENVIRONMENT_DIMENSION: environment, SERVICE_DIMENSION: function.value}
        if agent_service:
            dimensions[AGENT_SERVICE_DIMENSION] = agent_service
        return dimensions


_REAPER = (FunctionName.ZOMBIE_REAPER,)
_RESPONDER = (FunctionName.TTS_REACH_ALARM,)
_DRAINER = (FunctionName.WORKER_DRAINER,)

# --- shared by several functions ---------------------------------------------------------------------
INVOCATION_FAILED = MetricDefinition(
    "InvocationFailed",
    tuple(FunctionName),
    "1 when the invocation's report ended with status 'failed', else 0.",
    every_function=True,
)
# Emitted by the functions that deliver through ``adapters.notifier.NotificationDelivery``: all three.
_DELIVERING = (FunctionName.ZOMBIE_REAPER, FunctionName.TTS_REACH_ALARM, FunctionName.WORKER_DRAINER)
NOTIFICATIONS_SENT = MetricDefinition(
    "NotificationsSent", _DELIVERING, "Notifications delivered to SNS.", series=False
)
NOTIFICATIONS_LOST = MetricDefinition(
    "NotificationsLost",
    _DELIVERING,
    "Notifications SNS did not take within the budget (the invocation fails).",
    sparse=True,
)

# --- zombie_reaper -----------------------------------------------------------------------------------
ROOMS_SEEN = MetricDefinition("RoomsSeen", _REAPER, "Rooms listed by the reaper.", series=False)
ROOMS_OVER_AGE = MetricDefinition(
    "RoomsOverAge", _REAPER, "Rooms over their max age (before the cap).", sparse=True
)
ROOMS_REAPED = MetricDefinition("RoomsReaped", _REAPER, "Rooms the reaper deleted.", sparse=True)
ROOM_REAP_FAILURES = MetricDefinition("RoomReapFailures", _REAPER, "Deletions that failed.", sparse=True)
ROOM_REAPS_UNKNOWN = MetricDefinition(
    "RoomReapsUnknown",
    _REAPER,
    "Deletions whose reply was lost and whose re-read failed too.",
    series=False,
)
ROOMS_WARNED = MetricDefinition(
    "RoomsWarned", _REAPER, "Over-age rooms with participants warned before their grace.", series=False
)
ROOMS_TRIMMED_BY_CAP = MetricDefinition(
    "RoomsTrimmedByCap", _REAPER, "Over-age rooms left for the next run by the per-run cap.", sparse=True
)

# --- tts_reach_alarm ---------------------------------------------------------------------------------
TTS_REACH_FAILING_JOBS = MetricDefinition(
    "TtsReachFailingJobs",
    _RESPONDER,
    "Jobs with responses but no first audio frame in the window.",
    sparse=True,
)
TTS_REACH_SUSPECT_WORKERS = MetricDefinition(
    "TtsReachSuspectWorkers", _RESPONDER, "1 when the failures concentrate on one worker.", sparse=True
)

# --- worker_drainer ----------------------------------------------------------------------------------
DRAINER_TASKS_DRAINING = MetricDefinition(
    "DrainerTasksDraining", _DRAINER, "Tasks marked draining after the tick's plan.", sparse=True
)
DRAINER_GUARDRAIL_REFUSALS = MetricDefinition(
    "DrainerGuardrailRefusals",
    _DRAINER,
    "Steps a guardrail refused (blast radius, healthy minimum).",
    sparse=True,
)
# Each acting step's metrics, planned and done, named by its row of the step table.
DRAINER_STEPS = tuple(row.step.value for row in STEP_TABLE)
DRAINER_STEP_PLANNED = {
    row.step.value: MetricDefinition(
        f"Drainer{row.metric}Planned", _DRAINER, f"'{row.step.value}' steps planned.", series=False
    )
    for row in STEP_TABLE
}
DRAINER_STEP_DONE = {
    row.step.value: MetricDefinition(
        f"Drainer{row.metric}Done", _DRAINER, f"'{row.step.value}' steps done.", sparse=True
    )
    for row in STEP_TABLE
}

# Not ours: ECS Container Insights' service-level task counts (Container Insights must be enabled on
# the agents' cluster), dimensions ClusterName and ServiceName.
ECS_CONTAINER_INSIGHTS_NAMESPACE = "ECS/ContainerInsights"
ECS_RUNNING_TASK_COUNT = "RunningTaskCount"
ECS_DESIRED_TASK_COUNT = "DesiredTaskCount"


def definitions() -> list[MetricDefinition]:
    """Every metric definition above (the cost model counts their series)."""
    found = [value for value in globals().values() if isinstance(value, MetricDefinition)]
    return [*found, *DRAINER_STEP_PLANNED.values(), *DRAINER_STEP_DONE.values()]


def error_metric_name(code: str) -> str:
    """One count per typed error code in a report (``ErrorLiveKitUnavailable``), a field of the EMF
    record: the report's errors and the failed-report alarm already say it."""
    return f"Error{code}"
