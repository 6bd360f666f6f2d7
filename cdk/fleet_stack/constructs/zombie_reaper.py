"""The zombie reaper: a scheduled function deleting over-age LiveKit rooms."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from constructs import Construct

from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.contract.settings import ReaperSettings
from fleet_stack.config import EnvironmentConfig
from fleet_stack.constructs.kill_switch import KillSwitch
from fleet_stack.constructs.remediation_function import RemediationFunction, deployed_settings
from fleet_stack.constructs.shared_layers import SharedLayers


class ZombieReaper(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env_name: str,
        config: EnvironmentConfig,
        layers: SharedLayers,
        topic: sns.ITopic,
        kill_switch: KillSwitch,
        livekit_secret: secretsmanager.ISecret,
    ) -> None:
        super().__init__(scope, construct_id)
        reaper = config.reaper
        self.settings = deployed_settings(
            ReaperSettings,
            env_name=env_name,
            config=config,
            topic=topic,
            kill_switch=kill_switch,
            livekit_url=config.livekit_url,
            livekit_secret_id=config.livekit_secret_name,
            reaper=reaper,
        )
        self.remediation = RemediationFunction(
            self,
            "Reaper",
            function=FunctionName.ZOMBIE_REAPER,
            settings=self.settings,
            description="Deletes LiveKit rooms older than their max age, oldest first, within caps",
            layers=layers,
            topic=topic,
            kill_switch=kill_switch,
            log_retention_days=config.log_retention_days,
            # One reaper at a time: overlapping runs would race for the same rooms and the same cap.
            reserved_concurrency=1,
            expected_invocations_per_hour=60 // reaper.schedule_minutes,
        )
        self.function = self.remediation.function
        livekit_secret.grant_read(self.function)
        self.schedule = events.Rule(
            self,
            "Schedule",
            description=f"Run the zombie reaper every {reaper.schedule_minutes} min ({env_name})",
            schedule=events.Schedule.rate(Duration.minutes(reaper.schedule_minutes)),
            targets=[
                targets.LambdaFunction(
                    self.function,
                    dead_letter_queue=self.remediation.dlq,
                    retry_attempts=2,
                    max_event_age=Duration.minutes(10),
                )
            ],
        )
