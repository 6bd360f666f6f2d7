"""Per-environment configuration from cdk.json context, validated at synth.

The functions' sections (``reaper``, ``tts_reach``, ``drainer``) and ``detection`` are the very models
the functions read at cold start (``fleet_remediation.contract``); this file adds only what exists at
deploy time. An invalid value fails ``cdk synth`` with a message naming the field
(``environments.prod.reaper.policy.max_age_minutes: ...``), never a Lambda at 3 a.m.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import AnyHttpUrl, Field, ValidationError, model_validator

from fleet_remediation.contract.detection import DetectionConfig
from fleet_remediation.contract.models import StrictModel, describe_validation_error
from fleet_remediation.contract.settings import DrainerSection, ReaperSection, TtsReachSection

ENVIRONMENT_NAME_PATTERN = r"^[a-z][a-z0-9-]{0,31}$"


class ConfigError(Exception):
    """Raised at synth for an invalid or missing environment configuration."""


class NotificationTargets(StrictModel):
    emails: tuple[str, ...] = Field(
        default=(), description="E-mail addresses subscribed to the environment's notification topic."
    )

    @model_validator(mode="after")
    def _emails_look_like_emails(self) -> NotificationTargets:
        for index, address in enumerate(self.emails):
            local, _, domain = address.partition("@")
            if not local or "." not in domain:
                raise ValueError(f"emails[{index}] {address!r} is not an e-mail address")
        return self


class EnvironmentConfig(StrictModel):
    account: str | None = Field(default=None, pattern=r"^\d{12}$")
    region: str = Field(pattern=r"^[a-z]{2}(-[a-z]+)+-\d$")
    agent_log_group: str = Field(
        min_length=1, max_length=512, description="The agents' CloudWatch log group."
    )
    ecs_cluster: str = Field(min_length=1)
    ecs_service: str = Field(min_length=1)
    livekit_url: AnyHttpUrl = Field(description="LiveKit server API URL (https://...).")
    livekit_secret_name: str = Field(
        min_length=1, description='Secrets Manager secret: {"api_key": "...", "api_secret": "..."}.'
    )
    runbook_base_url: AnyHttpUrl = Field(description="Where docs/ is published; runbook links start here.")
    mode: Literal["enforce", "dry-run", "off"] = Field(
        default="dry-run", description="Initial kill-switch value; new environments start in dry-run."
    )
    log_retention_days: int = Field(default=30, ge=1, le=3653)
    notifications: NotificationTargets = NotificationTargets()
    reaper: ReaperSection = ReaperSection()
    detection: DetectionConfig = DetectionConfig()
    tts_reach: TtsReachSection = TtsReachSection()
    drainer: DrainerSection = DrainerSection()


def load_environment(context: dict[str, Any] | None, name: str | None) -> EnvironmentConfig:
    """Pick and validate one environment from the ``environments`` context key."""
    environments = (context or {}).get("environments")
    if not isinstance(environments, dict) or not environments:
        raise ConfigError("cdk.json context has no 'environments' object")
    if not name:
        raise ConfigError(
            f"choose an environment with -c env=NAME (one of: {', '.join(sorted(environments))})"
        )
    if name not in environments:
        raise ConfigError(
            f"environment {name!r} is not in cdk.json (have: {', '.join(sorted(environments))})"
        )
    if not re.fullmatch(ENVIRONMENT_NAME_PATTERN, name):
        raise ConfigError(f"environments.{name}: name must match {ENVIRONMENT_NAME_PATTERN}")
    try:
        return EnvironmentConfig.model_validate(environments[name])
    except ValidationError as exc:
        raise ConfigError(
            "invalid configuration: " + describe_validation_error(exc, prefix=f"environments.{name}.")
        ) from None
