"""One stack per environment. The stack only composes constructs; each capability is one construct."""

from __future__ import annotations

from typing import Any, TypedDict

from aws_cdk import Stack, Tags
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

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


class FunctionInputs(TypedDict):
    """What every function construct takes from the stack."""

    env_name: str
    config: EnvironmentConfig
    layers: SharedLayers
    notifications: Notifications
    kill_switch: KillSwitch
    key: StackKey


class FleetRemediationStack(Stack):
    def __init__(
        self, scope: Construct, construct_id: str, *, env_name: str, config: EnvironmentConfig, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        Tags.of(self).add("livekit-fleet-remediation:environment", env_name)
        self.layers = SharedLayers(self, "Layers", architecture=config.lambda_architecture)
        self.key = StackKey(self, "StackKey", env_name=env_name)
        self.notifications = Notifications(
            self, "Notifications", env_name=env_name, config=config, key=self.key
        )
        self.kill_switch = KillSwitch(self, "KillSwitch", env_name=env_name, initial_mode=config.mode)
        self.livekit_secret = secretsmanager.Secret.from_secret_name_v2(
            self, "LiveKitCredentials", config.livekit_secret_name
        )
        self._functions(env_name, config)
        self.dashboard = FleetDashboard(
            self,
            "FleetDashboard",
            env_name=env_name,
            config=config,
            detection=self.detection,
            function_alarms=[
                alarm
                for function in (self.zombie_reaper, self.tts_reach, self.worker_drainer)
                for alarm in function.remediation.alarms
            ],
        )

    def _functions(self, env_name: str, config: EnvironmentConfig) -> None:
        """The three functions and the detection that triggers them, in the order they depend."""
        shared = FunctionInputs(
            env_name=env_name,
            config=config,
            layers=self.layers,
            notifications=self.notifications,
            kill_switch=self.kill_switch,
            key=self.key,
        )
        self.zombie_reaper = ZombieReaper(self, "ZombieReaper", **shared, livekit_secret=self.livekit_secret)
        self.detection = Detection(self, "Detection", env_name=env_name, config=config)
        # Both detection alarms page through CloudWatch itself, whatever state the functions are in.
        self.notifications.notify_on_state_changes(self.detection.vad_alarm)
        self.notifications.notify_on_state_changes(self.detection.tts_reach_alarm)
        self.detection.route_alarm(
            "VadAlarmToReaper",
            self.detection.vad_alarm,
            self.zombie_reaper.function,
            self.zombie_reaper.remediation.dlq,
            states=("ALARM",),
        )
        self.tts_reach = TtsReachResponder(self, "TtsReach", **shared, detection=self.detection)
        self.worker_drainer = WorkerDrainer(
            self, "WorkerDrainer", **shared, livekit_secret=self.livekit_secret, detection=self.detection
        )
