"""The scheduled drill (``drills.schedule``, opt-in): one function on an EventBridge schedule that
drills one task of one agent service and tells the verdict, with a role that may do no more than a
drill does — read the service's switches and running tasks, write and remove only the drill's own
tag on that service's tasks, read the answering functions' reports and the drainer's ledger."""

from __future__ import annotations

import re

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from constructs import Construct

from fleet_remediation.contract.drills import DRILL_TAG
from fleet_remediation.contract.events import DRILL_EVENT_AGES
from fleet_remediation.contract.naming import (
    ECS_SERVICE_NAME_TAG,
    DrillFunctionName,
    FunctionName,
    function_log_group_name,
)
from fleet_remediation.contract.sections import TaskActionScope
from fleet_remediation.contract.settings import ScheduledDrillSettings
from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.constructs.agent_service import AgentServiceRemediation, FunctionInputs
from livekit_fleet_remediation.constructs.remediation_function import (
    NAG_ARN_START,
    RemediationFunction,
    deployed_settings,
)
from livekit_fleet_remediation.nag import acknowledge


class ScheduledDrill(Construct):
    """Public attributes: ``remediation`` (the ``RemediationFunction``), ``function``, ``rule``."""

    def __init__(
        self, scope: Construct, construct_id: str, *, shared: FunctionInputs, service: AgentServiceRemediation
    ) -> None:
        """``shared``: with the drilled service's view of the environment (``for_service``)."""
        super().__init__(scope, construct_id)
        env_name, config = shared["env_name"], shared["config"]
        schedule = config.drills.schedule
        if schedule is None:
            raise ValueError("a scheduled drill needs drills.schedule")
        agent = config.agent_service
        kill_switch = shared["kill_switch"]
        settings = self._settings(shared, service)
        self.remediation = RemediationFunction(
            self,
            "Drill",
            function=DrillFunctionName.SCHEDULED_DRILL,
            settings=settings,
            description=f"Drills one task of {agent.name} on a schedule and tells the verdict",
            layers=shared["layers"],
            notifications=shared["notifications"],
            kill_switch=kill_switch,
            key=shared["key"],
            log_retention_days=config.log_retention_days,
            # One drill at a time, and never twice for one schedule event.
            reserved_concurrency=1,
        )
        self.function = self.remediation.function
        kill_switch.service_parameter(agent.name).grant_read(self.function)
        self._grant_drill(env_name, config, service.worker_drainer.ledger.table_arn)
        self.rule = events.Rule(
            self,
            "Schedule",
            description=f"Run the scheduled drill ({env_name}/{agent.name}, {schedule.fault.value})",
            schedule=events.Schedule.expression(schedule.expression),
            # A drill is never retried: a late or repeated one is not the drill that was scheduled.
            targets=[
                self.remediation.target(
                    retry_attempts=0, max_event_age_seconds=DRILL_EVENT_AGES.schedule_seconds
                )
            ],
        )

    def _grant_drill(self, env_name: str, config: EnvironmentConfig, ledger_arn: str) -> None:
        stack = Stack.of(self)
        agent = config.agent_service
        tasks = stack.format_arn(service="ecs", resource="task", resource_name=f"{agent.ecs_cluster}/*")
        cluster = stack.format_arn(service="ecs", resource="cluster", resource_name=agent.ecs_cluster)
        # The drainer's own scope for task changes (drainer.task_action_scope) bounds the marker too.
        service_only = config.drainer.task_action_scope is TaskActionScope.SERVICE
        ours = (
            {"StringEquals": {f"aws:ResourceTag/{ECS_SERVICE_NAME_TAG}": agent.ecs_service}}
            if service_only
            else {}
        )
        reports = [
            stack.format_arn(
                service="logs",
                resource="log-group",
                resource_name=f"{function_log_group_name(env_name, function, service)}:*",
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            for function, service in (
                (FunctionName.ZOMBIE_REAPER, None),
                (FunctionName.WORKER_DRAINER, agent.name),
            )
        ]
        for statement in (
            iam.PolicyStatement(
                actions=["ecs:ListTasks"], resources=["*"], conditions={"ArnEquals": {"ecs:cluster": cluster}}
            ),
            iam.PolicyStatement(actions=["ecs:DescribeTasks"], resources=[tasks]),
            iam.PolicyStatement(
                actions=["ecs:TagResource", "ecs:UntagResource"],
                resources=[tasks],
                conditions={**ours, "ForAllValues:StringEquals": {"aws:TagKeys": [DRILL_TAG]}},
            ),
            iam.PolicyStatement(actions=["logs:FilterLogEvents"], resources=reports),
            iam.PolicyStatement(actions=["dynamodb:Query"], resources=[ledger_arn]),
        ):
            self.function.add_to_role_policy(statement)
        self._suppress_task_wildcards()

    def _settings(self, shared: FunctionInputs, service: AgentServiceRemediation) -> ScheduledDrillSettings:
        config, agent = shared["config"], shared["config"].agent_service
        return deployed_settings(
            ScheduledDrillSettings,
            env_name=shared["env_name"],
            config=config,
            notifications=shared["notifications"],
            kill_switch=shared["kill_switch"],
            drill=config.drills.schedule,
            drills_enabled=config.drills.enabled,
            drilled_service=agent.name,
            ecs_cluster=agent.ecs_cluster,
            ecs_service=agent.ecs_service,
            ledger_table_name=service.worker_drainer.ledger.table_name,
            disruption_window=config.disruption_window,
        )

    def _suppress_task_wildcards(self) -> None:
        acknowledge(
            self.remediation.role,
            "AwsSolutions-IAM5",
            "Task ARNs end in a random id, so the drill's task calls name the agents' cluster's tasks "
            "(task/<cluster>/*); its tag writes are limited to the drill's own key (aws:TagKeys) and, "
            "under the drainer's service scope, to the agents' service (aws:ResourceTag); ListTasks "
            "takes no resource and is limited to the cluster (ecs:cluster); the ':*' CDK adds to a "
            "log group ARN stands for that group's streams, which FilterLogEvents reads.",
            [
                re.compile(f"{NAG_ARN_START}ecs:.*:task/.*/\\*$"),
                re.compile(f"{NAG_ARN_START}logs:.*:log-group:.*:\\*$"),
                "Resource::*",
            ],
            apply_to_children=True,
        )
