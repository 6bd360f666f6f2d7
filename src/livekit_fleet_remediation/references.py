"""Existing resources a team hands to ``FleetRemediation`` by reference, and how they meet the config.

An agent service's references are keyed by the ``name`` of its entry in ``config.agent_services``.
A referenced resource's name wins over the config's (a token from a resource in the same app keeps
CDK's dependency tracking and reaches the functions' environment as CloudFormation resolves it); two
literal names that differ are a mistake and fail synth, naming the field.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import Stack, Token
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from pydantic import ValidationError

from fleet_remediation.contract.agent_services import AgentServiceConfig
from fleet_remediation.contract.models import describe_validation_error
from livekit_fleet_remediation.config import ENVIRONMENT_NAME_PATTERN, ConfigError, EnvironmentConfig


@dataclass(frozen=True)
class AgentServiceResources:
    """One agent service's existing resources. ``name``: its entry in ``config.agent_services``;
    ``cluster``, ``service``, ``log_group``: each optional, the config's name where left out."""

    name: str
    cluster: ecs.ICluster | None = None
    service: ecs.IService | None = None
    log_group: logs.ILogGroup | None = None

    def agent_service(self) -> AgentServiceConfig:
        """The ``config.agent_services`` entry these references describe, for a config written in
        code (every reference given)."""
        if self.cluster is None or self.service is None or self.log_group is None:
            raise ConfigError(f"agent service {self.name!r}: cluster, service and log_group are all needed")
        return AgentServiceConfig(
            name=self.name,
            ecs_cluster=self.cluster.cluster_name,
            ecs_service=self.service.service_name,
            agent_log_group=self.log_group.log_group_name,
        )

    def names(self) -> dict[str, str]:
        """The referenced resources' names, under the config field each one fills."""
        given = {
            "ecs_cluster": self.cluster.cluster_name if self.cluster else None,
            "ecs_service": self.service.service_name if self.service else None,
            "agent_log_group": self.log_group.log_group_name if self.log_group else None,
        }
        return {field: name for field, name in given.items() if name is not None}


def check_name_prefix(name_prefix: str) -> None:
    if Token.is_unresolved(name_prefix) or not re.fullmatch(ENVIRONMENT_NAME_PATTERN, name_prefix):
        raise ConfigError(
            f"name_prefix {name_prefix!r} must be a literal matching {ENVIRONMENT_NAME_PATTERN} "
            "(it starts the name of every resource the construct creates)"
        )


def check_stack_environment(stack: Stack, config: EnvironmentConfig) -> None:
    """The enclosing stack deploys where the config says, where both are known at synth."""
    for field, configured, deployed in (
        ("account", config.account, stack.account),
        ("region", config.region, stack.region),
    ):
        if configured is None or Token.is_unresolved(deployed) or configured == deployed:
            continue
        raise ConfigError(
            f"config.{field} is {configured!r}, but stack {stack.stack_name} deploys to {field} {deployed!r}"
        )


def check_topic(config: EnvironmentConfig, topic: sns.ITopic | None) -> None:
    configured = config.notifications.topic_arn
    if topic is None or configured is None or Token.is_unresolved(topic.topic_arn):
        return
    if topic.topic_arn != configured:
        raise ConfigError(
            f"notifications.topic_arn is {configured!r}, but the referenced topic is {topic.topic_arn!r}"
        )


def with_references(
    config: EnvironmentConfig, references: Sequence[AgentServiceResources]
) -> EnvironmentConfig:
    """``config`` with each referenced agent service's names taken from its resources."""
    services = list(config.agent_services)
    index_of = {service.name: index for index, service in enumerate(services)}
    seen: set[str] = set()
    for reference in references:
        if reference.name in seen:
            raise ConfigError(f"agent_services: {reference.name!r} is referenced twice")
        seen.add(reference.name)
        if reference.name not in index_of:
            raise ConfigError(
                f"agent_services: no agent service named {reference.name!r} in the config "
                f"(have: {', '.join(sorted(index_of))})"
            )
        index = index_of[reference.name]
        services[index] = _merged(services[index], reference, f"agent_services[{index}]")
    return config.model_copy(update={"agent_services": services})


def _merged(service: AgentServiceConfig, reference: AgentServiceResources, where: str) -> AgentServiceConfig:
    names = reference.names()
    for field, referenced in names.items():
        configured = getattr(service, field)
        if Token.is_unresolved(referenced) or Token.is_unresolved(configured) or referenced == configured:
            continue
        raise ConfigError(
            f"{where}.{field} is {configured!r}, but the referenced resource is named {referenced!r}"
        )
    try:
        return AgentServiceConfig.model_validate({**service.model_dump(), **names})
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, prefix=f"{where}.")) from None
