"""The zombie reaper: a scheduled function deleting over-age LiveKit rooms."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from fleet_remediation.contract.events import REAPER_EVENT_AGES
from fleet_remediation.contract.naming import FunctionName
from fleet_remediation.contract.settings import ReaperSettings
from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.constructs.function_parts import idempotency_table, schedule
from livekit_fleet_remediation.constructs.kill_switch import KillSwitch
from livekit_fleet_remediation.constructs.notifications import Notifications
from livekit_fleet_remediation.constructs.remediation_function import RemediationFunction, deployed_settings
from livekit_fleet_remediation.constructs.shared_layers import SharedLayers
from livekit_fleet_remediation.constructs.stack_key import StackKey


class ZombieReaper(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env_name: str,
        config: EnvironmentConfig,
        layers: SharedLayers,
        notifications: Notifications,
        kill_switch: KillSwitch,
        key: StackKey,
        livekit_secret: secretsmanager.ISecret,
    ) -> None:
        super().__init__(scope, construct_id)
        reaper = config.reaper
        # Once-keys: a retried event replays its run instead of acting again; a dry run announces a
        # set of rooms once. Records expire after a day.
        self.idempotency_table = idempotency_table(self)
        self.settings = self._settings(env_name, config, notifications, kill_switch)
        self.remediation = RemediationFunction(
            self,
            "Reaper",
            function=FunctionName.ZOMBIE_REAPER,
            settings=self.settings,
            description="Deletes LiveKit rooms older than their max age, oldest first, within caps",
            layers=layers,
            notifications=notifications,
            kill_switch=kill_switch,
            key=key,
            log_retention_days=config.log_retention_days,
            # One reaper at a time: overlapping runs would race for the same rooms and the same cap.
            reserved_concurrency=1,
            expected_invocations_per_hour=60 // reaper.schedule_minutes,
        )
        self.function = self.remediation.function
        livekit_secret.grant_read(self.function)
        self.idempotency_table.grant_read_write_data(self.function)
        self._grant_deployment_reads(config)
        schedule(
            self,
            "Schedule",
            minutes=reaper.schedule_minutes,
            description=f"Run the zombie reaper every {reaper.schedule_minutes} min ({env_name})",
            target=self.remediation.target(
                retry_attempts=2, max_event_age_seconds=REAPER_EVENT_AGES.schedule_seconds
            ),
        )

    def _grant_deployment_reads(self, config: EnvironmentConfig) -> None:
        """The agent services' deployments hold new deletions: DescribeServices on those services."""
        stack = Stack.of(self)
        services = [
            stack.format_arn(
                service="ecs", resource="service", resource_name=f"{s.ecs_cluster}/{s.ecs_service}"
            )
            for s in config.agent_services
        ]
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=["ecs:DescribeServices"], resources=services)
        )

    def _settings(
        self, env_name: str, config: EnvironmentConfig, notifications: Notifications, kill_switch: KillSwitch
    ) -> ReaperSettings:
        return deployed_settings(
            ReaperSettings,
            env_name=env_name,
            config=config,
            notifications=notifications,
            kill_switch=kill_switch,
            livekit_url=config.livekit_url,
            livekit_secret_id=config.livekit_secret_name,
            disruption_window=config.disruption_window,
            agent_services=config.service_identities,
            reaper=config.reaper,
            idempotency_table_name=self.idempotency_table.table_name,
            drills_enabled=True if config.drills.enabled else None,
        )
