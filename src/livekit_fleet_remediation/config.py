"""Per-environment configuration, validated at synth: ``FleetRemediation``'s ``config`` prop in a
team's own CDK app, or an entry of the standalone app's environments file.

The functions' sections (``reaper``, ``tts_reach``, ``drainer``, ``detection``) are the very models the
functions read at cold start (``fleet_remediation.contract``); this file adds what exists at deploy time.
An invalid value fails ``cdk synth`` naming the field (``environments.prod.reaper.policy.max_age_minutes``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import AnyHttpUrl, Field, ValidationError, model_validator

from fleet_remediation.contract.agent_services import (
    MAX_AGENT_SERVICES,
    AgentService,
    AgentServiceConfig,
    distinct_names,
    refuse_moved_keys,
)
from fleet_remediation.contract.budgets import insights_look_seconds
from fleet_remediation.contract.detection import DetectionConfig
from fleet_remediation.contract.disruption_window import DisruptionWindow
from fleet_remediation.contract.models import StrictModel, describe_validation_error
from fleet_remediation.contract.naming import RUNBOOK_LINKS_HELP, RunbookLinks, names_too_long
from fleet_remediation.contract.sections import (
    DrainerSection,
    ReaperSection,
    ScanBudgetSection,
    TtsReachSection,
)
from fleet_remediation.core.chat_actions import command_length_problem
from livekit_fleet_remediation.drill_config import DrillSection, drilled_service
from livekit_fleet_remediation.offline.service_profile import AWS_PROFILE

ENVIRONMENT_NAME_PATTERN = r"^[a-z][a-z0-9-]{0,31}$"


class ConfigError(Exception):
    """Raised at synth for an invalid or missing environment configuration."""


SNS_TOPIC_ARN_PATTERN = r"^arn:aws[a-z-]*:sns:[a-z]{2}(-[a-z]+)+-\d:\d{12}:[A-Za-z0-9_-]{1,256}$"


def _check_email(address: str, field: str) -> None:
    local, _, domain = address.partition("@")
    if not local or "." not in domain:
        raise ValueError(f"{field} {address!r} is not an e-mail address")


class SlackChannel(StrictModel):
    """A Slack channel for Amazon Q Developer in chat applications. The workspace must have been
    authorised once in the Amazon Q Developer console; the stack creates the channel configuration."""

    workspace_id: str = Field(pattern=r"^[0-9A-Z]{1,255}$", description="Slack workspace (team) id, T...")
    channel_id: str = Field(pattern=r"^[A-Za-z0-9]+$", description="Slack channel id, C...")


class ChatNotifications(StrictModel):
    """Amazon Q Developer in chat applications forwards only messages in its custom-notification
    schema (or AWS services' own events), so chat gets a second topic carrying that JSON."""

    topic_arn: str | None = Field(
        default=None,
        pattern=SNS_TOPIC_ARN_PATTERN,
        description="An existing topic already mapped to a chat channel, instead of a new one.",
    )
    slack: SlackChannel | None = Field(default=None, description="Map the chat topic to this channel.")


class PagerSubscription(StrictModel):
    """A paging integration. It receives only CloudWatch's alarm notifications (one page per alarm
    transition, even when a function is broken), never the functions' follow-up messages."""

    protocol: Literal["https", "email", "sms"] = Field(description="How SNS delivers to the pager.")
    endpoint: str = Field(min_length=3, description="The https URL, e-mail address or phone number.")

    @model_validator(mode="after")
    def _endpoint_fits_protocol(self) -> PagerSubscription:
        if self.protocol == "https" and not self.endpoint.startswith("https://"):
            raise ValueError(f"endpoint {self.endpoint!r} must start with https://")
        if self.protocol == "email":
            _check_email(self.endpoint, "endpoint")
        return self


class NotificationTargets(StrictModel):
    emails: tuple[str, ...] = Field(
        default=(), description="E-mail addresses subscribed to the environment's notification topic."
    )
    topic_arn: str | None = Field(
        default=None,
        pattern=SNS_TOPIC_ARN_PATTERN,
        description="Publish to this existing topic instead of creating one (same account and region).",
    )
    chat: ChatNotifications | None = None
    pagers: tuple[PagerSubscription, ...] = ()

    @model_validator(mode="after")
    def _emails_look_like_emails(self) -> NotificationTargets:
        for index, address in enumerate(self.emails):
            _check_email(address, f"emails[{index}]")
        return self


class EnvironmentConfig(StrictModel):
    """One environment's settings (an entry of environments.json, or the construct's ``config``)."""

    account: str | None = Field(
        default=None, pattern=r"^\d{12}$", description="Target AWS account (none: the CLI's credentials)."
    )
    region: str = Field(pattern=r"^[a-z]{2}(-[a-z]+)+-\d$", description="Target AWS region.")
    agent_services: list[AgentServiceConfig] = Field(
        min_length=1,
        max_length=MAX_AGENT_SERVICES,
        description="The agent services this deployment covers: each gets its own detection, responder "
        "and drainer; the reaper, the kill switch, the topic and the dashboard are shared.",
    )
    livekit_url: AnyHttpUrl = Field(description="LiveKit server API URL (https://...).")
    livekit_secret_name: str = Field(
        min_length=1, description='Secrets Manager secret: {"api_key": "...", "api_secret": "..."}.'
    )
    runbook_base_url: AnyHttpUrl = Field(description="Where the runbooks are published (see runbook_links).")
    runbook_links: RunbookLinks = Field(default="site", description=RUNBOOK_LINKS_HELP)
    mode: Literal["enforce", "dry-run", "off"] = Field(
        default="dry-run", description="Initial kill-switch value; new environments start in dry-run."
    )
    log_retention_days: int = Field(
        default=30, ge=1, le=3653, description="Retention of the functions' log groups."
    )
    lambda_architecture: Literal["arm64", "x86_64"] = Field(
        default="arm64",
        description="The functions' processor (arm64: 20 % less per GB-second); the dependency layer "
        "for it is in the wheel (`make layers` builds both in a checkout).",
    )
    notifications: NotificationTargets = NotificationTargets()
    reaper: ReaperSection = ReaperSection()
    detection: DetectionConfig = DetectionConfig()
    tts_reach: TtsReachSection = TtsReachSection()
    drainer: DrainerSection = DrainerSection()
    scan_budget: ScanBudgetSection = ScanBudgetSection()
    drills: DrillSection = DrillSection()
    disruption_window: DisruptionWindow | None = Field(
        default=None, description="When the reaper and the drainer may start new disruption (none: any time)."
    )

    _moved_keys = model_validator(mode="before")(refuse_moved_keys)

    @property
    def agent_service(self) -> AgentServiceConfig:
        """The first agent service: the one the operator tools (plan, replay) look at."""
        return self.agent_services[0]

    @property
    def service_identities(self) -> tuple[AgentService, ...]:
        """Each service's name, cluster, service and log group (what the reaper is told)."""
        return tuple(service.identity for service in self.agent_services)

    def for_service(self, service: AgentServiceConfig) -> EnvironmentConfig:
        """One service's view of the environment: that service alone, with its own sections where
        it has them (what its detection, responder and drainer are built from)."""
        return self.model_copy(
            update={
                "agent_services": [service],
                "detection": self.detection_of(service),
                "tts_reach": self.tts_reach_of(service),
                "drainer": self.drainer_of(service),
            }
        )

    def detection_of(self, service: AgentServiceConfig) -> DetectionConfig:
        return service.detection or self.detection

    def tts_reach_of(self, service: AgentServiceConfig) -> TtsReachSection:
        return service.tts_reach or self.tts_reach

    def drainer_of(self, service: AgentServiceConfig) -> DrainerSection:
        return service.drainer or self.drainer

    @model_validator(mode="after")
    def _per_task_look_decides_at_the_profiles_p99(self) -> EnvironmentConfig:
        # The drainer's run already fits its Lambda timeout with insights_timeout_seconds per query
        # (DrainerSection); this proves a per-task look decides within that when Insights is slow.
        query = AWS_PROFILE.insights_queue_and_run_seconds(AWS_PROFILE.per_task_look_bytes, 0.99)
        needed = insights_look_seconds(query)
        for service in self.agent_services:
            drainer = self.drainer_of(service)
            if drainer.insights_timeout_seconds < needed:
                raise ValueError(
                    f"agent service {service.name!r}: drainer.insights_timeout_seconds "
                    f"({drainer.insights_timeout_seconds:g}) is shorter than a per-task look needs "
                    f"({needed:.2f} s) when its Logs Insights query takes the service profile's p99 "
                    f"({AWS_PROFILE.name} v{AWS_PROFILE.version}: {query:.2f} s for "
                    f"{AWS_PROFILE.per_task_look_bytes / 1e6:g} MB; docs/development/service-profile.md)"
                )
        return self

    @model_validator(mode="after")
    def _services_are_distinct(self) -> EnvironmentConfig:
        distinct_names(self.agent_services)
        return self

    @model_validator(mode="after")
    def _scheduled_drill_names_one_service(self) -> EnvironmentConfig:
        drilled_service(self.drills.schedule, self.agent_services)
        return self

    @model_validator(mode="after")
    def _existing_topics_are_ours(self) -> EnvironmentConfig:
        # An SNS topic in another region or account cannot be an alarm action of this stack.
        topics = {"notifications.topic_arn": self.notifications.topic_arn}
        if self.notifications.chat is not None:
            topics["notifications.chat.topic_arn"] = self.notifications.chat.topic_arn
        for field, arn in topics.items():
            if arn is None:
                continue
            _, _, _, region, account, _ = arn.split(":", 5)
            if region != self.region:
                raise ValueError(f"{field}: topic is in {region}, the environment in {self.region}")
            if self.account is not None and account != self.account:
                raise ValueError(f"{field}: topic is in account {account}, the environment in {self.account}")
        return self


def environment_names(context: dict[str, Any] | None) -> list[str]:
    """The environments the ``environments`` context key defines, sorted."""
    environments = (context or {}).get("environments")
    if not isinstance(environments, dict) or not environments:
        raise ConfigError("the configuration has no 'environments' object")
    return sorted(environments)


def check_name_lengths(env_name: str, config: EnvironmentConfig, path: str) -> None:
    """Each service's resources carry the environment's and the service's names: say which to
    shorten when a name would pass an AWS limit (a Lambda function name is at most 64 characters, a
    chat button's command at most 100)."""
    chat = config.notifications.chat
    problem = command_length_problem(env_name, config.region) if chat and chat.slack else None
    if problem:
        raise ConfigError(f"{path}notifications.chat.slack: {problem}")
    for index, service in enumerate(config.agent_services):
        too_long = names_too_long(env_name, service.name)
        if too_long:
            raise ConfigError(
                f"{path}agent_services[{index}].name: {', '.join(too_long)}: shorten the agent service's "
                f"name {service.name!r} or the environment's {env_name!r}"
            )


def load_environment(context: dict[str, Any] | None, name: str | None) -> EnvironmentConfig:
    """Pick and validate one environment from the ``environments`` context key."""
    known = environment_names(context)
    environments = (context or {})["environments"]
    if not name:
        raise ConfigError(f"choose an environment (one of: {', '.join(known)})")
    if name not in environments:
        raise ConfigError(f"environment {name!r} is not in the configuration (have: {', '.join(known)})")
    if not re.fullmatch(ENVIRONMENT_NAME_PATTERN, name):
        raise ConfigError(f"environments.{name}: name must match {ENVIRONMENT_NAME_PATTERN}")
    try:
        config = EnvironmentConfig.model_validate(environments[name])
    except ValidationError as exc:
        raise ConfigError(
            "invalid configuration: " + describe_validation_error(exc, prefix=f"environments.{name}.")
        ) from None
    check_name_lengths(name, config, f"environments.{name}.")
    return config


def context_from_file(path: Path) -> dict[str, Any]:
    """The ``environments`` context held by a file: a ``cdk.json`` (under ``context``) or a plain
    ``{"environments": {...}}`` document, so the console commands read the file the CDK app reads."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file (name your cdk.json or environments file)") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: expected a JSON object with 'environments' (or cdk.json 'context')")
    context = document.get("context", document)
    if not isinstance(context, dict) or "environments" not in context:
        raise ConfigError(f"{path}: has no 'environments' object (at the top or under 'context')")
    return {"environments": context["environments"]}


def load_config_file(path: Path, name: str | None) -> EnvironmentConfig:
    """One validated environment from a cdk.json or environments file; errors name the file."""
    try:
        return load_environment(context_from_file(path), name)
    except ConfigError as exc:
        message = str(exc)
        raise ConfigError(message if message.startswith(str(path)) else f"{path}: {message}") from None
