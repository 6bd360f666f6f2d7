"""What each agent service gets of its own: detection on its log group (metric filters, the VAD and
TTS-reach pages), its TTS-reach responder and its worker drainer, all named after the service.

The reaper, the kill switch, the topics, the key and the dashboard are the environment's
(``FleetRemediation``); the service's VAD page also starts the shared reaper, since rooms are
LiveKit-wide. A service's responder hands its suspect worker to this service's drainer only: the
drainer's suspect-worker rule matches the service's name, and its door refuses any other.
"""

from __future__ import annotations

from typing import TypedDict

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.constructs.detection import Detection
from livekit_fleet_remediation.constructs.drills import DrillResources
from livekit_fleet_remediation.constructs.kill_switch import KillSwitch
from livekit_fleet_remediation.constructs.notifications import Notifications
from livekit_fleet_remediation.constructs.scan_budget import ScanBudgetTally
from livekit_fleet_remediation.constructs.shared_layers import SharedLayers
from livekit_fleet_remediation.constructs.stack_key import StackKey
from livekit_fleet_remediation.constructs.tts_reach import TtsReachResponder
from livekit_fleet_remediation.constructs.worker_drainer import WorkerDrainer
from livekit_fleet_remediation.constructs.zombie_reaper import ZombieReaper


class FunctionInputs(TypedDict):
    """What every function construct takes from ``FleetRemediation``."""

    env_name: str
    config: EnvironmentConfig
    layers: SharedLayers
    notifications: Notifications
    kill_switch: KillSwitch
    key: StackKey


class AgentServiceRemediation(Construct):
    """``shared["config"]`` is the service's view of the environment (``EnvironmentConfig.for_service``).

    Public attributes: ``name``, ``view`` (the service's view of the environment), ``detection``
    (with ``vad_alarm`` and ``tts_reach_alarm``), ``tts_reach`` and ``worker_drainer`` (each with
    ``.function`` and ``.remediation.alarms``), ``drills`` (``DrillResources`` in an environment named
    for drills, else None)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        shared: FunctionInputs,
        reaper: ZombieReaper,
        livekit_secret: secretsmanager.ISecret,
        scan_tally: ScanBudgetTally,
        agent_log_group: logs.ILogGroup | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        config, env_name = shared["config"], shared["env_name"]
        service = config.agent_service
        self.name, self.view = service.name, config
        self.detection = Detection(
            self,
            "Detection",
            env_name=env_name,
            service=service,
            detection=config.detection,
            scan_tally=scan_tally,
            runbooks=(str(config.runbook_base_url), config.runbook_links),
            agent_log_group=agent_log_group,
        )
        # Both pages notify through CloudWatch itself, whatever state the functions are in.
        for page in (self.detection.vad_alarm, self.detection.tts_reach_alarm):
            shared["notifications"].notify_on_state_changes(page)
        self.detection.route_alarm(
            "VadAlarmToReaper",
            self.detection.vad_alarm,
            reaper.function,
            reaper.remediation.dlq,
            states=("ALARM",),
        )
        self.tts_reach = TtsReachResponder(self, "TtsReach", **shared, detection=self.detection)
        self.worker_drainer = WorkerDrainer(
            self, "WorkerDrainer", **shared, livekit_secret=livekit_secret, detection=self.detection
        )
        self.drills: DrillResources | None = None
        if config.drills.enabled:
            self.drills = DrillResources(
                self,
                "Drills",
                env_name=env_name,
                config=config,
                detection=self.detection,
                functions=[reaper.function, self.tts_reach.function, self.worker_drainer.function],
                ledger_table_arn=self.worker_drainer.ledger.table_arn,
            )

    @property
    def alarms(self) -> list[cloudwatch.Alarm]:
        """The service's functions' alarms on themselves."""
        return [*self.tts_reach.remediation.alarms, *self.worker_drainer.remediation.alarms]

    @property
    def pages(self) -> list[cloudwatch.CompositeAlarm]:
        return [self.detection.tts_reach_alarm, self.detection.vad_alarm]
