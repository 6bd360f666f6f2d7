"""``FleetRemediation``: the whole remediation system as one construct, for a team's own CDK app."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Stack, TagManager, Tags
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from constructs import Construct

from fleet_remediation.contract.naming import FunctionName
from livekit_fleet_remediation.config import EnvironmentConfig, check_name_lengths
from livekit_fleet_remediation.constructs.agent_service import AgentServiceRemediation, FunctionInputs
from livekit_fleet_remediation.constructs.chat_actions import ChatService
from livekit_fleet_remediation.constructs.dashboard import FleetDashboard
from livekit_fleet_remediation.constructs.kill_switch import KillSwitch
from livekit_fleet_remediation.constructs.notifications import Notifications
from livekit_fleet_remediation.constructs.scan_budget import ScanBudgetTally
from livekit_fleet_remediation.constructs.scheduled_drill import ScheduledDrill
from livekit_fleet_remediation.constructs.shared_layers import SharedLayers
from livekit_fleet_remediation.constructs.stack_key import StackKey
from livekit_fleet_remediation.constructs.zombie_reaper import ZombieReaper
from livekit_fleet_remediation.drill_config import drilled_service
from livekit_fleet_remediation.references import (
    AgentServiceResources,
    check_name_prefix,
    check_stack_environment,
    check_topic,
    with_references,
)

ENVIRONMENT_TAG = "livekit-fleet-remediation:environment"


def _tag_where_untaggable(dashboard: cloudwatch.Dashboard, name_prefix: str) -> None:
    """aws-cdk-lib releases before dashboards took tags (2.221 among them) drop ``Tags.of``'s tag: there
    the same tag is written as a property, so the template is the same on every release in range."""
    resource = dashboard.node.default_child
    if isinstance(resource, cloudwatch.CfnDashboard) and not TagManager.is_taggable(resource):
        resource.add_property_override("Tags", [{"Key": ENVIRONMENT_TAG, "Value": name_prefix}])


class FleetRemediation(Construct):
    """The zombie reaper, the kill switch, notifications and the fleet dashboard, and for each agent
    service its own detection (metric filters, pages, rules), TTS-reach responder and worker
    drainer, in the enclosing stack.

    Props:

    * ``name_prefix``: this instance's short name (``ENVIRONMENT_NAME_PATTERN``); every resource name
      the construct creates starts from it (``lkfr-<prefix>-zombie-reaper``,
      ``lkfr-<prefix>-<service>-worker-drainer``, ``/livekit-fleet-remediation/<prefix>/mode``, ...),
      so instances with different prefixes share a stack, an account and a region. The functions
      know it as their environment name.
    * ``config``: the settings (``EnvironmentConfig``, the model the functions read at cold start).
      ``config.account`` and ``config.region`` must match the stack's where both are concrete.
    * ``agent_services``: ``AgentServiceResources`` per agent service, keyed by the ``name`` of its
      ``config.agent_services`` entry; referenced names (literal or tokens) replace the config's.
    * ``notification_topic``: an existing SNS topic to publish to instead of creating one.

    Public attributes: ``zombie_reaper``; ``scheduled_drill`` (with ``drills.schedule``, else None);
    ``services`` (by agent service name: ``detection`` with
    its ``vad_alarm`` and ``tts_reach_alarm`` pages, ``tts_reach``, ``worker_drainer``); ``functions``
    (by Lambda function name); ``topic``; ``mode_parameter_name``, ``function_mode_parameter_names``
    and ``service_mode_parameter_names`` (the kill switch's SSM names); ``alarms`` (the functions'
    own); ``dashboard`` (``cloudwatch.Dashboard``); ``config`` (with the references' names filled in).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        name_prefix: str,
        config: EnvironmentConfig,
        agent_services: Sequence[AgentServiceResources] = (),
        notification_topic: sns.ITopic | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        check_name_prefix(name_prefix)
        check_name_lengths(name_prefix, config, "")
        check_stack_environment(Stack.of(self), config)
        check_topic(config, notification_topic)
        self.config = config = with_references(config, agent_services)
        self.name_prefix = name_prefix
        Tags.of(self).add(ENVIRONMENT_TAG, name_prefix)
        self.layers = SharedLayers(self, "Layers", architecture=config.lambda_architecture)
        self.key = StackKey(self, "StackKey", env_name=name_prefix)
        self.notifications = Notifications(
            self, "Notifications", env_name=name_prefix, config=config, key=self.key, topic=notification_topic
        )
        self.topic = self.notifications.topic
        self._kill_switch(name_prefix, config)
        self.livekit_secret = secretsmanager.Secret.from_secret_name_v2(
            self, "LiveKitCredentials", config.livekit_secret_name
        )
        # One scan budget for the environment: every service's looks count against one tally. Under
        # the Detection scope, as the dashboard, so both keep their logical ids.
        detection_scope = Construct(self, "Detection")
        self.scan_tally = ScanBudgetTally(detection_scope, "ScanBudget")
        self._functions(name_prefix, config, {r.name: r.log_group for r in agent_services if r.log_group})
        self.dashboard = FleetDashboard(
            self,
            "FleetDashboard",
            env_name=name_prefix,
            config=config,
            services=list(self.services.values()),
            function_alarms=self.alarms,
            # The dashboard keeps its logical id from before agent services had their own detection,
            # so an update keeps it instead of replacing a same-named one.
            dashboard_scope=detection_scope,
        ).dashboard
        _tag_where_untaggable(self.dashboard, name_prefix)

    def _kill_switch(self, name_prefix: str, config: EnvironmentConfig) -> None:
        """The environment's switch, and under it one per function and one per agent service."""
        self.kill_switch = KillSwitch(self, "KillSwitch", env_name=name_prefix, initial_mode=config.mode)
        self.mode_parameter_name = self.kill_switch.parameter_name
        self.function_mode_parameter_names = {
            function: self.kill_switch.function_parameter_name(function) for function in FunctionName
        }
        self.service_mode_parameter_names = {
            service.name: self.kill_switch.service_parameter_name(service.name)
            for service in config.agent_services
        }

    @property
    def alarms(self) -> list[cloudwatch.Alarm]:
        """The functions' alarms on themselves (errors, throttles, dead letters, a stopped schedule)."""
        return [
            *self.zombie_reaper.remediation.alarms,
            *(alarm for service in self.services.values() for alarm in service.alarms),
            *(self.scheduled_drill.remediation.alarms if self.scheduled_drill else []),
        ]

    def _scheduled_drill(self, shared: FunctionInputs, config: EnvironmentConfig) -> ScheduledDrill | None:
        """With ``drills.schedule``: the drill of one agent service on a schedule."""
        if config.drills.schedule is None:
            return None
        drilled = drilled_service(config.drills.schedule, config.agent_services)
        service_view: FunctionInputs = {**shared, "config": config.for_service(drilled)}
        return ScheduledDrill(
            self, "ScheduledDrill", shared=service_view, service=self.services[drilled.name]
        )

    def _functions(
        self, env_name: str, config: EnvironmentConfig, log_groups: dict[str, logs.ILogGroup]
    ) -> None:
        """The reaper, then each agent service's detection, responder and drainer."""
        shared = FunctionInputs(
            env_name=env_name,
            config=config,
            layers=self.layers,
            notifications=self.notifications,
            kill_switch=self.kill_switch,
            key=self.key,
        )
        self.zombie_reaper = ZombieReaper(self, "ZombieReaper", **shared, livekit_secret=self.livekit_secret)
        self.services: dict[str, AgentServiceRemediation] = {}
        for service in config.agent_services:
            self.services[service.name] = AgentServiceRemediation(
                self,
                f"Service-{service.name}",
                shared={**shared, "config": config.for_service(service)},
                reaper=self.zombie_reaper,
                livekit_secret=self.livekit_secret,
                agent_log_group=log_groups.get(service.name),
                scan_tally=self.scan_tally,
            )
        self.scheduled_drill = self._scheduled_drill(shared, config)
        chat = self.notifications.chat_actions
        if chat is not None:
            chat.add_entry_point(
                layers=self.layers,
                key=self.key,
                kill_switch=self.kill_switch,
                services={
                    name: ChatService(s.worker_drainer.ledger, s.worker_drainer.function)
                    for name, s in self.services.items()
                },
                log_retention_days=config.log_retention_days,
            )
        self.functions: dict[str, lambda_.Function] = {
            function.function_name: function
            for function in (
                self.zombie_reaper.function,
                *(s.tts_reach.function for s in self.services.values()),
                *(s.worker_drainer.function for s in self.services.values()),
                *([self.scheduled_drill.function] if self.scheduled_drill else []),
            )
        }
