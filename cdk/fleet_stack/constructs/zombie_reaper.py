"""The zombie reaper: a scheduled function deleting over-age LiveKit rooms."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from constructs import Construct

from fleet_stack.config import EnvironmentConfig
from fleet_stack.constructs.kill_switch import KillSwitch
from fleet_stack.constructs.remediation_function import RemediationFunction, livekit_environment
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
        self.remediation = RemediationFunction(
            self,
            "Reaper",
            env_name=env_name,
            config=config,
            function_dir="zombie_reaper",
            description="Deletes LiveKit rooms older than their max age, oldest first, within caps",
            layers=layers,
            topic=topic,
            kill_switch=kill_switch,
            timeout=Duration.seconds(reaper.timeout_seconds),
            # One reaper at a time: overlapping runs would race for the same rooms and the same cap.
            reserved_concurrency=1,
            expected_invocations_per_hour=60 // reaper.schedule_minutes,
            environment=livekit_environment(config, reaper.livekit_request_timeout_seconds),
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
