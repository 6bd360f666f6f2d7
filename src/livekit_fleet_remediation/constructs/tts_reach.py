"""One agent service's TTS-reach responder: its function, idempotency table, and the route from the
service's TTS-reach alarm. ``config`` is the service's view (``EnvironmentConfig.for_service``)."""

from __future__ import annotations

import re

from aws_cdk import Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from constructs import Construct

from fleet_remediation.contract.events import responder_event_ages
from fleet_remediation.contract.naming import (
    EVENT_BUS_NAME,
    EVENT_SOURCE,
    SUSPECT_WORKER_DETAIL_TYPE,
    FunctionName,
)
from fleet_remediation.contract.settings import TtsReachSettings
from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.constructs.detection import Detection
from livekit_fleet_remediation.constructs.function_parts import idempotency_table, schedule
from livekit_fleet_remediation.constructs.kill_switch import KillSwitch
from livekit_fleet_remediation.constructs.notifications import Notifications
from livekit_fleet_remediation.constructs.remediation_function import (
    NAG_ARN_START,
    RemediationFunction,
    deployed_settings,
)
from livekit_fleet_remediation.constructs.shared_layers import SharedLayers
from livekit_fleet_remediation.constructs.stack_key import StackKey
from livekit_fleet_remediation.nag import acknowledge
from tts_reach_alarm.adapters.task_facts import TASK_FACTS_ACTIONS


class TtsReachResponder(Construct):
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
        detection: Detection,
    ) -> None:
        super().__init__(scope, construct_id)
        # Once-keys: one per alarm transition and action, expiring after a day.
        self.idempotency_table = idempotency_table(self)
        self.scan_budget_table_name = detection.scan_tally.table.table_name
        self.settings = self._settings(env_name, config, notifications, kill_switch)
        self.remediation = RemediationFunction(
            self,
            "Responder",
            function=FunctionName.TTS_REACH_ALARM,
            settings=self.settings,
            description="On the TTS-reach alarm: find silent sessions, blame a worker beyond chance, notify",
            layers=layers,
            notifications=notifications,
            kill_switch=kill_switch,
            key=key,
            log_retention_days=config.log_retention_days,
            # An alarm transition and a scheduled re-check may run side by side (the once-guard keeps
            # them from acting twice); a capped count keeps a burst of events from taking the account's.
            reserved_concurrency=2,
        )
        self.function = self.remediation.function
        self.idempotency_table.grant_read_write_data(self.function)
        self.remediation.grant_logs_insights(detection.log_group)
        detection.scan_tally.grant(self.function)
        self._grant_events_and_page_state(detection)
        self._grant_task_facts(config.agent_service.ecs_cluster)
        self.route = detection.route_alarm(
            "TtsReachAlarmToResponder", detection.tts_reach_alarm, self.function, self.remediation.dlq
        )
        self.recheck = self._recheck(
            f"{env_name}/{config.agent_service.name}", config.tts_reach.recheck_minutes
        )

    def _settings(
        self, env_name: str, config: EnvironmentConfig, notifications: Notifications, kill_switch: KillSwitch
    ) -> TtsReachSettings:
        return deployed_settings(
            TtsReachSettings,
            env_name=env_name,
            config=config,
            notifications=notifications,
            kill_switch=kill_switch,
            service=config.agent_service.name,
            aws_region=Stack.of(self).region,
            agent_log_group=config.agent_service.agent_log_group,
            idempotency_table_name=self.idempotency_table.table_name,
            ecs_cluster=config.agent_service.ecs_cluster,
            detection=config.detection,
            tts_reach=config.tts_reach,
            task_reach=config.drainer.task_reach,
            scan_budget=config.scan_budget,
            scan_budget_table_name=self.scan_budget_table_name,
        )

    def _grant_events_and_page_state(self, detection: Detection) -> None:
        # The suspect-worker event, only that detail-type from our source: the drainer acts on it.
        self.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["events:PutEvents"],
                resources=[
                    Stack.of(self).format_arn(
                        service="events", resource="event-bus", resource_name=EVENT_BUS_NAME
                    )
                ],
                conditions={
                    "StringEquals": {
                        "events:source": EVENT_SOURCE,
                        "events:detail-type": SUSPECT_WORKER_DETAIL_TYPE,
                    }
                },
            )
        )
        # While the page stays in ALARM, a scheduled re-check may name the worker its first analysis
        # could not (the tick reads the page's state first and does nothing while it is OK).
        self.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["cloudwatch:DescribeAlarms"], resources=[detection.tts_reach_alarm.alarm_arn]
            )
        )

    def _grant_task_facts(self, cluster: str) -> None:
        """The ECS facts of the tasks in its rows (zone, revision, start) for the group verdict:
        DescribeTasks on the agents' cluster's tasks, and no other ECS action."""
        tasks = Stack.of(self).format_arn(service="ecs", resource="task", resource_name=f"{cluster}/*")
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=list(TASK_FACTS_ACTIONS), resources=[tasks])
        )
        acknowledge(
            self.remediation.role,
            "AwsSolutions-IAM5",
            "Task ARNs end in a random id, so the one ECS read (DescribeTasks) names the agents' "
            "cluster's tasks (task/<cluster>/*); it changes nothing.",
            [re.compile(f"{NAG_ARN_START}ecs:.*:task/.*/\\*$")],
            apply_to_children=True,
        )

    def _recheck(self, whose: str, minutes: int) -> events.Rule | None:
        if not minutes:
            return None
        return schedule(
            self,
            "Recheck",
            minutes=minutes,
            description=f"Re-check an open TTS incident every {minutes} min ({whose})",
            # A missed tick is replaced by the next one.
            target=self.remediation.target(
                retry_attempts=0,
                max_event_age_seconds=responder_event_ages(minutes).schedule_seconds,
            ),
        )
