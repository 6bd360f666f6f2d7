"""``FleetRemediation``: the whole remediation system as one construct, for a team's own CDK app."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from aws_cdk import Stack, Tags
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from constructs import Construct

from fleet_remediation.contract.naming import FunctionName
from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.constructs.dashboard import FleetDashboard
from livekit_fleet_remediation.constructs.detection import Detection
from livekit_fleet_remediation.constructs.kill_switch import KillSwitch
from livekit_fleet_remediation.constructs.notifications import Notifications
from livekit_fleet_remediation.constructs.shared_layers import SharedLayers
from livekit_fleet_remediation.constructs.stack_key import StackKey
from livekit_fleet_remediation.constructs.tts_reach import TtsReachResponder
from livekit_fleet_remediation.constructs.worker_drainer import WorkerDrainer
from livekit_fleet_remediation.constructs.zombie_reaper import ZombieReaper
from livekit_fleet_remediation.references import (
    AgentServiceResources,
    check_name_prefix,
    check_stack_environment,
    check_topic,
    with_references,
)

ENVIRONMENT_TAG = "livekit-fleet-remediation:environment"


class FunctionInputs(TypedDict):
    """What every function construct takes from ``FleetRemediation``."""

    env_name: str
    config: EnvironmentConfig
    layers: SharedLayers
    notifications: Notifications
    kill_switch: KillSwitch
    key: StackKey


class FleetRemediation(Construct):
    """The zombie reaper, the TTS-reach responder, the worker drainer, detection (metric filters,
    alarms, rules), the kill switch, notifications and the fleet dashboard, in the enclosing stack.

    Props:

    * ``name_prefix``: this instance's short name (``ENVIRONMENT_NAME_PATTERN``); every resource name
      the construct creates starts from it (``lkfr-<prefix>-zombie-reaper``,
      ``/livekit-fleet-remediation/<prefix>/mode``, ...), so instances with different prefixes share
      a stack, an account and a region. The functions know it as their environment name.
    * ``config``: the settings (``EnvironmentConfig``, the model the functions read at cold start).
      ``config.account`` and ``config.region`` must match the stack's where both are concrete.
    * ``agent_services``: ``AgentServiceResources`` per agent service, keyed by the ``name`` of its
      ``config.agent_services`` entry; referenced names (literal or tokens) replace the config's.
    * ``notification_topic``: an existing SNS topic to publish to instead of creating one.

    Public attributes: ``functions`` (by ``FunctionName``), ``zombie_reaper``, ``tts_reach``,
    ``worker_drainer`` (each with ``.function`` and ``.remediation.alarms``), ``topic``,
    ``mode_parameter_name`` and ``function_mode_parameter_names`` (the kill switch's SSM names),
    ``vad_alarm`` and ``tts_reach_alarm`` (the pages), ``alarms`` (the functions' own),
    ``dashboard`` (``cloudwatch.Dashboard``), ``config`` (with the references' names filled in).
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
        check_stack_environment(Stack.of(self), config)
        check_topic(config, notification_topic)
        self.config = config = with_references(config, agent_services)
        self.name_prefix = name_prefix
        Tags.of(self).add(ENVIRONMENT_TAG, name_prefix)
        self.layers = SharedLayers(self, "Layers")
        self.key = StackKey(self, "StackKey", env_name=name_prefix)
        self.notifications = Notifications(
            self, "Notifications", env_name=name_prefix, config=config, key=self.key, topic=notification_topic
        )
        self.topic = self.notifications.topic
        self.kill_switch = KillSwitch(self, "KillSwitch", env_name=name_prefix, initial_mode=config.mode)
        self.mode_parameter_name = self.kill_switch.parameter_name
        self.function_mode_parameter_names = {
            function: self.kill_switch.function_parameter_name(function) for function in FunctionName
        }
        self.livekit_secret = secretsmanager.Secret.from_secret_name_v2(
            self, "LiveKitCredentials", config.livekit_secret_name
        )
        log_group = next((r.log_group for r in agent_services if r.name == config.agent_service.name), None)
        self._functions(
            name_prefix,
            config,
            Detection(self, "Detection", env_name=name_prefix, config=config, agent_log_group=log_group),
        )
        self.dashboard = FleetDashboard(
            self,
            "FleetDashboard",
            env_name=name_prefix,
            config=config,
            detection=self.detection,
            function_alarms=self.alarms,
        ).dashboard

    @property
    def alarms(self) -> list[cloudwatch.Alarm]:
        """The functions' alarms on themselves (errors, throttles, dead letters, a stopped schedule)."""
        return [
            alarm
            for function in (self.zombie_reaper, self.tts_reach, self.worker_drainer)
            for alarm in function.remediation.alarms
        ]

    def _functions(self, env_name: str, config: EnvironmentConfig, detection: Detection) -> None:
        """The three functions and the routes from detection to them, in the order they depend."""
        self.detection = detection
        shared = FunctionInputs(
            env_name=env_name,
            config=config,
            layers=self.layers,
            notifications=self.notifications,
            kill_switch=self.kill_switch,
            key=self.key,
        )
        self.zombie_reaper = ZombieReaper(self, "ZombieReaper", **shared, livekit_secret=self.livekit_secret)
        # Both pages notify through CloudWatch itself, whatever state the functions are in.
        self.vad_alarm = detection.vad_alarm
        self.tts_reach_alarm = detection.tts_reach_alarm
        self.notifications.notify_on_state_changes(self.vad_alarm)
        self.notifications.notify_on_state_changes(self.tts_reach_alarm)
        detection.route_alarm(
            "VadAlarmToReaper",
            self.vad_alarm,
            self.zombie_reaper.function,
            self.zombie_reaper.remediation.dlq,
            states=("ALARM",),
        )
        self.tts_reach = TtsReachResponder(self, "TtsReach", **shared, detection=detection)
        self.worker_drainer = WorkerDrainer(
            self, "WorkerDrainer", **shared, livekit_secret=self.livekit_secret, detection=detection
        )
        self.functions: dict[FunctionName, lambda_.Function] = {
            FunctionName.ZOMBIE_REAPER: self.zombie_reaper.function,
            FunctionName.TTS_REACH_ALARM: self.tts_reach.function,
            FunctionName.WORKER_DRAINER: self.worker_drainer.function,
        }
