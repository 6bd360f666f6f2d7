"""One settings model per function, used by both sides.

At synth the CDK construct builds the function's model from cdk.json (resource names may be CDK
tokens: plain strings here) and deploys ``to_lambda_environment()``; at cold start the function reads
the same model from those variables (``settings_from_environment``: a field's variable is its name in
any case, a nested model, list or mapping travels as JSON). A value the runtime would reject fails
``make synth`` naming its field path; cross-field rules (budgets that must fit the Lambda timeout, a
lease that must outlive an invocation) live in the sections (``sections.py``), so both sides enforce them.

Each function's cdk.json section (``reaper``, ``tts_reach``, ``drainer``) is embedded whole, under the
same name, so a field's path is the same in cdk.json, in a synth error and in a cold-start error.
"""

from __future__ import annotations

import json
import os
import types
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field, ValidationError, model_validator

from fleet_remediation.contract import naming
from fleet_remediation.contract.agent_services import (
    AGENT_SERVICE_NAME_PATTERN,
    DEFAULT_AGENT_SERVICE,
    AgentService,
)
from fleet_remediation.contract.budgets import LAMBDA_MAX_TIMEOUT_SECONDS, scheduled_drill_seconds_needed
from fleet_remediation.contract.detection import DetectionConfig, TtsReachAlarmSettings
from fleet_remediation.contract.disruption_window import DisruptionWindow
from fleet_remediation.contract.drill_schedule import DrillSchedule
from fleet_remediation.contract.errors import ConfigurationError
from fleet_remediation.contract.models import describe_validation_error
from fleet_remediation.contract.sections import (
    DrainerSection,
    ReaperSection,
    ScanBudgetSection,
    TtsReachSection,
)
from fleet_remediation.contract.signals import SignalSettings
from fleet_remediation.contract.task_reach import TaskReachSettings


class FunctionSettings(BaseModel):
    """What every function reads. Environment variables are the field names upper-cased; nested
    models travel as JSON."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)
    # Fields the Lambda runtime itself sets (reserved variables): read at run time, never deployed.
    runtime_provided: ClassVar[frozenset[str]] = frozenset({"aws_region"})
    # The function these settings configure (its own kill switch, runbook, metrics, log group).
    function: ClassVar[naming.FunctionId]

    environment_name: str = Field(min_length=1, max_length=32, pattern=r"^[a-z][a-z0-9-]*$")
    mode_parameter_name: str = Field(min_length=1)
    function_mode_parameter_name: str | None = Field(
        default=None, min_length=1, description="This function's own kill switch, under the environment's."
    )
    notification_topic_arn: str = Field(min_length=1, description="Readable-text notifications (e-mail).")
    chat_topic_arn: str | None = Field(
        default=None, min_length=1, description="Amazon Q Developer custom-notification JSON (chat channels)."
    )
    runbook_base_url: AnyHttpUrl
    runbook_links: naming.RunbookLinks = "site"
    aws_region: str | None = Field(default=None, description="Set by Lambda; used for console links.")

    @property
    def timeout_seconds(self) -> float:
        raise NotImplementedError

    def to_lambda_environment(self) -> dict[str, str]:
        """The variables that make ``type(self)()`` equal to this model at cold start."""
        environment: dict[str, str] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if name in self.runtime_provided or value is None:
                continue
            environment[name.upper()] = _as_variable(value)
        return environment

    def runbook(self, function: naming.FunctionName | naming.DrillFunctionName) -> str:
        return naming.runbook_url(self.runbook_base_url, naming.RUNBOOKS[function], self.runbook_links)

    @property
    def dashboard_name(self) -> str:
        return naming.dashboard_name(self.environment_name)


def _as_variable(value: Any) -> str:
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if isinstance(value, tuple | list | dict):
        return json.dumps(value, default=_model_json)
    return str(value)


def _model_json(value: Any) -> Any:
    """A model inside a list or mapping (the agent services), as the JSON the function reads back."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise TypeError(f"{type(value).__name__} cannot be a Lambda environment value")


class LiveKitSettings(FunctionSettings):
    livekit_url: AnyHttpUrl
    livekit_secret_id: str = Field(min_length=1)
    disruption_window: DisruptionWindow | None = Field(
        default=None,
        description="When a new reap, cordon or stop may start (none: any time); outside it, held.",
    )


class ReaperSettings(LiveKitSettings):
    function: ClassVar[naming.FunctionName] = naming.FunctionName.ZOMBIE_REAPER

    reaper: ReaperSection
    agent_services: tuple[AgentService, ...] = Field(
        default=(),
        description="Whose deployments hold new deletions, and whose VAD alarms start a run (none: no "
        "deployment hold, no alarm).",
    )
    idempotency_table_name: str | None = Field(
        default=None,
        min_length=1,
        description="Once-keys: a retried run replays its results; a dry run announces a room set once.",
    )
    # Carried for `lkfr drill --stack/--app`, which reads an instance's configuration back from its
    # functions (the environment-wide function carries the environment-wide opt-in); None: not named.
    drills_enabled: bool | None = Field(
        default=None, description="The environment is named for drills (drills.enabled)."
    )

    @property
    def timeout_seconds(self) -> float:
        return self.reaper.timeout_seconds


class ServiceFunctionSettings(FunctionSettings):
    """What a function of one agent service reads beyond the common: which service, and its switch."""

    agent_service: str = Field(
        default=DEFAULT_AGENT_SERVICE,
        pattern=AGENT_SERVICE_NAME_PATTERN,
        description="The agent service this copy of the function serves.",
    )
    service_mode_parameter_name: str | None = Field(
        default=None,
        min_length=1,
        description="The agent service's own kill switch, under the environment's.",
    )

    @property
    def function_name(self) -> str:
        return naming.lambda_function_name(self.environment_name, self.function, self.agent_service)


class TtsReachSettings(ServiceFunctionSettings):
    function: ClassVar[naming.FunctionName] = naming.FunctionName.TTS_REACH_ALARM

    aws_region: str = Field(min_length=1, description="Set by Lambda; used for console links.")
    agent_log_group: str = Field(min_length=1)
    idempotency_table_name: str = Field(min_length=1)
    ecs_cluster: str | None = Field(default=None, min_length=1, description="For the suspect task's link.")
    detection: DetectionConfig = DetectionConfig()
    tts_reach: TtsReachSection = TtsReachSection()
    # The drainer's per-task test (drainer.task_reach): the responder judges per-task rows with it
    # when the window holds more jobs than its per-job read can take.
    task_reach: TaskReachSettings = TaskReachSettings()
    scan_budget: ScanBudgetSection = ScanBudgetSection()
    scan_budget_table_name: str | None = Field(
        default=None, min_length=1, description="The hourly scan tally (none: looks are not budgeted)."
    )

    @property
    def timeout_seconds(self) -> float:
        return self.tts_reach.timeout_seconds

    @property
    def alarm_name(self) -> str:
        return naming.tts_reach_alarm_name(self.environment_name, self.agent_service)


class DrainerSettings(LiveKitSettings, ServiceFunctionSettings):
    function: ClassVar[naming.FunctionName] = naming.FunctionName.WORKER_DRAINER

    reaper: ReaperSection
    drainer: DrainerSection
    signals: SignalSettings = SignalSettings()
    # The responder's alarm section (detection.tts_reach_alarm): a suspect-worker event must carry a
    # p-value below its concentration_alpha.
    tts_reach_alarm: TtsReachAlarmSettings = TtsReachAlarmSettings()
    ecs_cluster: str = Field(min_length=1)
    ecs_service: str = Field(min_length=1)
    ledger_table_name: str = Field(min_length=1)
    agent_log_group: str = Field(min_length=1)
    scan_budget: ScanBudgetSection = ScanBudgetSection()
    scan_budget_table_name: str | None = Field(
        default=None, min_length=1, description="The hourly scan tally (none: looks are not budgeted)."
    )

    @property
    def timeout_seconds(self) -> float:
        return self.drainer.timeout_seconds

    @property
    def vad_alarm_name(self) -> str:
        return naming.vad_alarm_name(self.environment_name, self.agent_service)

    @property
    def agent_container_name(self) -> str:
        return self.drainer.agent_container_name or self.ecs_service

    def log_stream_for(self, task_id: str) -> str:
        return naming.log_stream_for(task_id, self.drainer.agent_log_stream_prefix, self.agent_container_name)


class ScheduledDrillSettings(FunctionSettings):
    """The environment's scheduled drill (``drills.schedule``): one task of one agent service."""

    function: ClassVar[naming.DrillFunctionName] = naming.DrillFunctionName.SCHEDULED_DRILL

    drill: DrillSchedule = Field(description="The drill: its fault, schedule and minutes (drills.schedule).")
    drills_enabled: bool = Field(description="The environment is named for drills (drills.enabled).")
    drilled_service: str = Field(pattern=AGENT_SERVICE_NAME_PATTERN, description="The agent service drilled.")
    ecs_cluster: str = Field(min_length=1, description="The drilled service's cluster.")
    ecs_service: str = Field(
        min_length=1, description="The drilled service: one of its running tasks is drilled."
    )
    ledger_table_name: str = Field(min_length=1, description="The drilled service's drainer's ledger.")
    disruption_window: DisruptionWindow | None = Field(
        default=None, description="When a drill may start (none: any time); outside it, refused."
    )

    @model_validator(mode="after")
    def _watch_fits_one_invocation(self) -> ScheduledDrillSettings:
        if self.timeout_seconds > LAMBDA_MAX_TIMEOUT_SECONDS:
            raise ValueError(
                f"drill: {self.drill.minutes} minutes of watch need "
                f"{self.timeout_seconds:.0f} s, more than Lambda's {LAMBDA_MAX_TIMEOUT_SECONDS} s"
            )
        return self

    @property
    def timeout_seconds(self) -> float:
        return float(int(scheduled_drill_seconds_needed(self.drill.minutes)) + 1)


SettingsT = TypeVar("SettingsT", bound=FunctionSettings)


def settings_for_deployment(model: type[SettingsT], values: Mapping[str, Any], path: str) -> SettingsT:
    """Build ``model`` at synth from explicit values only (never the synthesizing shell's environment);
    a problem is a ``ConfigurationError`` naming the field under ``path`` (e.g. ``environments.prod.``)."""
    try:
        return model.model_validate(dict(values))
    except ValidationError as exc:
        raise ConfigurationError(describe_validation_error(exc, prefix=path)) from None


def settings_from_environment(model: type[SettingsT], environ: Mapping[str, str] = os.environ) -> SettingsT:
    """Build ``model`` at cold start from the function's environment; errors name the variable."""
    try:
        return model.model_validate(_environment_values(model, environ))
    except ValidationError as exc:
        raise ConfigurationError(describe_validation_error(exc, upper=True)) from None


def _environment_values(model: type[FunctionSettings], environ: Mapping[str, str]) -> dict[str, Any]:
    """Each field's variable (its name in any case); a field that takes a model, list or mapping is
    read as JSON, as ``to_lambda_environment`` writes it. A variable no field names is not read."""
    variables = {name.lower(): value for name, value in environ.items()}
    values: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        if name not in variables:
            continue
        if not _travels_as_json(field.annotation):
            values[name] = variables[name]
            continue
        try:
            values[name] = json.loads(variables[name])
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"{name.upper()}: not valid JSON ({exc.msg})") from None
    return values


def _travels_as_json(annotation: Any) -> bool:
    if get_origin(annotation) in (Union, types.UnionType):
        return any(_travels_as_json(arg) for arg in get_args(annotation))
    kind = get_origin(annotation) or annotation
    if not isinstance(kind, type) or issubclass(kind, str | bytes):
        return False
    return issubclass(kind, BaseModel | Mapping | Sequence | set | frozenset)
