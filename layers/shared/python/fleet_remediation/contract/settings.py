"""One settings model per function, used by both sides.

At synth the CDK construct builds the function's model from cdk.json (resource names may be CDK
tokens: plain strings here) and deploys ``to_lambda_environment()``; at cold start the function reads
the same model from those variables with pydantic-settings. A value the runtime would reject fails
``make synth`` naming its field path; cross-field rules (budgets that must fit the Lambda timeout, a
lease that must outlive an invocation) live in the sections below, so both sides enforce them.

Each function's cdk.json section (``reaper``, ``tts_reach``, ``drainer``) is embedded whole, under the
same name, so a field's path is the same in cdk.json, in a synth error and in a cold-start error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, ClassVar, TypeVar

from pydantic import AnyHttpUrl, BaseModel, Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from fleet_remediation.contract import budgets, naming
from fleet_remediation.contract.detection import DetectionConfig, TtsReachAlarmSettings
from fleet_remediation.contract.models import StrictModel, describe_validation_error
from fleet_remediation.contract.policies import DrainerPolicy, ReaperPolicy
from fleet_remediation.contract.signals import SignalSettings
from fleet_remediation.core.errors import ConfigurationError

# --- the functions' cdk.json sections ----------------------------------------------------------------


class ReaperSection(StrictModel):
    """``environments.<env>.reaper``."""

    schedule_minutes: int = Field(default=5, ge=1, le=60, description="How often the reaper runs.")
    timeout_seconds: int = Field(default=90, ge=10, le=900, description="Lambda timeout.")
    livekit_request_timeout_seconds: float = Field(default=5.0, gt=0, le=30)
    policy: ReaperPolicy = ReaperPolicy()

    @model_validator(mode="after")
    def _timeouts_in_order(self) -> ReaperSection:
        needed = budgets.reaper_seconds_needed(self.livekit_request_timeout_seconds)
        if needed > self.timeout_seconds:
            raise ValueError(
                f"a run needs up to {needed:g} s (kill switch, the run's once-only record, credentials, the "
                f"room listing and one room at livekit_request_timeout_seconds="
                f"{self.livekit_request_timeout_seconds:g} each, the notification, the report: "
                f"contract/budgets.py); timeout_seconds is {self.timeout_seconds}"
            )
        return self


class TtsReachSection(StrictModel):
    """``environments.<env>.tts_reach``: the responder function; its alarm lives in ``detection``."""

    timeout_seconds: int = Field(default=120, ge=10, le=900, description="Lambda timeout.")
    query_timeout_seconds: float = Field(default=20, gt=0, le=300, description="Per Logs Insights query.")
    recheck_minutes: int = Field(
        default=2,
        ge=0,
        le=60,
        description="Re-check the open incident this often while the TTS page stays in ALARM (0: never).",
    )

    @model_validator(mode="after")
    def _timeouts_in_order(self) -> TtsReachSection:
        call = budgets.LOGS_INSIGHTS_QUERY_FLOOR_SECONDS
        if self.query_timeout_seconds < call:
            raise ValueError(
                f"query_timeout_seconds ({self.query_timeout_seconds:g}) must be at least one Logs Insights "
                f"call's and its stop's worst case ({call:g} s), or no query could ever start"
            )
        needed = budgets.tts_reach_seconds_needed(self.query_timeout_seconds)
        if needed > self.timeout_seconds:
            raise ValueError(
                f"a run needs up to {needed:g} s (kill switch, the page's state, two queries of "
                f"query_timeout_seconds={self.query_timeout_seconds:g}, the suspect-worker event and the "
                f"notification with their once-only records, the report: contract/budgets.py); "
                f"timeout_seconds is "
                f"{self.timeout_seconds}"
            )
        return self


class DrainerVpcConfig(StrictModel):
    """Run the drainer inside the agents' VPC so it can read each task's ``/worker`` endpoint."""

    vpc_id: str = Field(pattern=r"^vpc-[0-9a-f]+$")
    subnet_ids: tuple[str, ...] = Field(min_length=1)
    security_group_ids: tuple[str, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _ids_look_like_ids(self) -> DrainerVpcConfig:
        for index, subnet in enumerate(self.subnet_ids):
            if not subnet.startswith("subnet-"):
                raise ValueError(f"subnet_ids[{index}] {subnet!r} is not a subnet id")
        for index, group in enumerate(self.security_group_ids):
            if not group.startswith("sg-"):
                raise ValueError(f"security_group_ids[{index}] {group!r} is not a security group id")
        return self


class TaskActionScope(StrEnum):
    """Which tasks the drainer's IAM policy lets it stop, tag, untag and (un)protect.

    ``service``: only tasks carrying the ECS managed tag ``aws:ecs:serviceName`` = our service, which
    ECS sets only when the service has ``enableECSManagedTags`` on (the drainer checks that before it
    acts). ``cluster``: any task of the agents' cluster, for a service without managed tags.
    """

    SERVICE = "service"
    CLUSTER = "cluster"


class DrainerSection(StrictModel):
    """``environments.<env>.drainer``."""

    schedule_minutes: int = Field(default=1, ge=1, le=60, description="Reconcile tick.")
    # The run's worst case is 142 s (contract/budgets.py): the default leaves a margin above it.
    timeout_seconds: int = Field(default=150, ge=20, le=900, description="Lambda timeout.")
    livekit_request_timeout_seconds: float = Field(default=5.0, gt=0, le=30)
    ecs_request_timeout_seconds: float = Field(default=5.0, gt=0, le=30)
    insights_timeout_seconds: float = Field(
        default=15.0, gt=0, le=120, description="Per Logs Insights query."
    )
    agent_log_stream_prefix: str = Field(
        default="agent", min_length=1, description="awslogs-stream-prefix of the agent container."
    )
    agent_container_name: str | None = Field(
        default=None, description="The agent container's name (default: the ECS service name)."
    )
    vpc: DrainerVpcConfig | None = None
    task_action_scope: TaskActionScope = Field(
        default=TaskActionScope.SERVICE,
        description="service: task changes only on tasks tagged aws:ecs:serviceName=<service>; cluster: "
        "any task of the cluster.",
    )
    policy: DrainerPolicy = DrainerPolicy()

    @model_validator(mode="after")
    def _timeouts_in_order(self) -> DrainerSection:
        call = budgets.LOGS_INSIGHTS_QUERY_FLOOR_SECONDS
        if self.insights_timeout_seconds < call:
            raise ValueError(
                f"insights_timeout_seconds ({self.insights_timeout_seconds:g}) must be at least one Logs "
                f"Insights call's and its stop's worst case ({call:g} s), or no query could ever start"
            )
        needed = budgets.drainer_seconds_needed(
            self.insights_timeout_seconds, self.ecs_request_timeout_seconds
        )
        if needed > self.timeout_seconds:
            raise ValueError(
                f"a run needs up to {needed:g} s (kill switch, the VAD alarm's state, credentials, "
                f"{budgets.DRAINER_QUERIES} "
                f"queries of insights_timeout_seconds={self.insights_timeout_seconds:g}, one step with ECS "
                f"calls of "
                f"ecs_request_timeout_seconds={self.ecs_request_timeout_seconds:g}, the notification, the "
                f"report: contract/budgets.py); timeout_seconds is {self.timeout_seconds}"
            )
        return self

    @model_validator(mode="after")
    def _lease_outlives_invocation(self) -> DrainerSection:
        # A lease that expires while its holder still acts lets a second invocation act on the same
        # service at the same time.
        if self.policy.lease_seconds < self.timeout_seconds:
            raise ValueError(
                f"policy.lease_seconds ({self.policy.lease_seconds}) must be at least timeout_seconds "
                f"({self.timeout_seconds}): a lease must outlive the invocation that holds it"
            )
        return self


# --- the functions' settings -------------------------------------------------------------------------


class FunctionSettings(BaseSettings):
    """What every function reads. Environment variables are the field names upper-cased; nested
    models travel as JSON."""

    model_config = SettingsConfigDict(extra="forbid", frozen=True, case_sensitive=False)
    # Fields the Lambda runtime itself sets (reserved variables): read at run time, never deployed.
    runtime_provided: ClassVar[frozenset[str]] = frozenset({"aws_region"})
    # The function these settings configure (its own kill switch, runbook, metrics, log group).
    function: ClassVar[naming.FunctionName]

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

    def runbook(self, function: naming.FunctionName) -> str:
        return naming.runbook_url(self.runbook_base_url, naming.RUNBOOKS[function])

    @property
    def dashboard_name(self) -> str:
        return naming.dashboard_name(self.environment_name)


def _as_variable(value: Any) -> str:
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if isinstance(value, tuple | list | dict):
        return json.dumps(value)
    return str(value)


class LiveKitSettings(FunctionSettings):
    livekit_url: AnyHttpUrl
    livekit_secret_id: str = Field(min_length=1)


class ReaperSettings(LiveKitSettings):
    function: ClassVar[naming.FunctionName] = naming.FunctionName.ZOMBIE_REAPER

    reaper: ReaperSection
    idempotency_table_name: str | None = Field(
        default=None,
        min_length=1,
        description="Once-keys: a retried run replays its results; a dry run announces a room set once.",
    )

    @property
    def timeout_seconds(self) -> float:
        return self.reaper.timeout_seconds


class TtsReachSettings(FunctionSettings):
    function: ClassVar[naming.FunctionName] = naming.FunctionName.TTS_REACH_ALARM

    aws_region: str = Field(min_length=1, description="Set by Lambda; used for console links.")
    agent_log_group: str = Field(min_length=1)
    idempotency_table_name: str = Field(min_length=1)
    ecs_cluster: str | None = Field(default=None, min_length=1, description="For the suspect task's link.")
    detection: DetectionConfig = DetectionConfig()
    tts_reach: TtsReachSection = TtsReachSection()

    @property
    def timeout_seconds(self) -> float:
        return self.tts_reach.timeout_seconds

    @property
    def alarm_name(self) -> str:
        return naming.tts_reach_alarm_name(self.environment_name)


class DrainerSettings(LiveKitSettings):
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

    @property
    def timeout_seconds(self) -> float:
        return self.drainer.timeout_seconds

    @property
    def agent_container_name(self) -> str:
        return self.drainer.agent_container_name or self.ecs_service

    def log_stream_for(self, task_id: str) -> str:
        return naming.log_stream_for(task_id, self.drainer.agent_log_stream_prefix, self.agent_container_name)


SettingsT = TypeVar("SettingsT", bound=FunctionSettings)


def settings_for_deployment(model: type[SettingsT], values: Mapping[str, Any], path: str) -> SettingsT:
    """Build ``model`` at synth from explicit values only (never the synthesizing shell's environment);
    a problem is a ``ConfigurationError`` naming the field under ``path`` (e.g. ``environments.prod.``)."""
    try:
        return model.model_validate(dict(values))
    except ValidationError as exc:
        raise ConfigurationError(describe_validation_error(exc, prefix=path)) from None


def settings_from_environment(model: type[SettingsT]) -> SettingsT:
    """Build ``model`` at cold start from the function's environment; errors name the variable."""
    try:
        return model()
    except ValidationError as exc:
        raise ConfigurationError(describe_validation_error(exc, upper=True)) from None
