"""One agent service's drill resources, only in an environment named for drills (``drills.enabled``):

- the marker permissions, as managed policies the team attaches where it runs things: one for the
  agents' task role (its own task's tags, which the drill hook reads through the task metadata
  endpoint) and one for whoever runs ``lkfr drill`` (the marker on the service's tasks, the kill
  switch, what ``lkfr audit`` reads, and with ``drills.fis`` starting and stopping the experiments);
- with ``drills.fis``: an AWS FIS experiment template per fault FIS has, each on ONE task of the
  service (``COUNT(1)`` of the service's tasks), for ``drills.fis.minutes``, stopped early by a guard
  alarm on the service's fleet-wide first-audio share; and the experiments' least-privilege role.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_fis as fis
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from fleet_remediation.contract.action_events import ACTION_EVENT_DETAIL_TYPE
from fleet_remediation.contract.agent_services import AgentServiceConfig
from fleet_remediation.contract.drills import DRILL_TAG, DrillFault
from fleet_remediation.contract.naming import (
    ECS_SERVICE_NAME_TAG,
    EVENT_BUS_NAME,
    EVENT_SOURCE,
    mode_parameter_name,
    service_mode_parameter_name,
)
from fleet_remediation.contract.sections import TaskActionScope
from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.constructs.detection import Detection
from livekit_fleet_remediation.constructs.drill_experiments import FisExperiments
from livekit_fleet_remediation.constructs.remediation_function import NAG_ARN_START
from livekit_fleet_remediation.drill_config import (
    FisDrills,
)
from livekit_fleet_remediation.nag import acknowledge


class DrillResources(Construct):
    """Public attributes: ``task_role_policy``, ``operator_policy``, ``templates`` (by fault; empty
    without ``drills.fis``) and ``experiments`` (``FisExperiments``, or None)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env_name: str,
        config: EnvironmentConfig,
        detection: Detection,
        functions: Sequence[lambda_.IFunction],
        ledger_table_arn: str,
    ) -> None:
        """``config``: the service's view of the environment; ``functions``: the ones ``lkfr audit``
        reads for this service (the reaper, its responder and drainer)."""
        super().__init__(scope, construct_id)
        stack, service = Stack.of(self), config.agent_service
        # The drainer's own scope for task changes (drainer.task_action_scope) bounds the marker too.
        self.service_tasks_only = config.drainer.task_action_scope is TaskActionScope.SERVICE
        self.tasks_arn = stack.format_arn(
            service="ecs", resource="task", resource_name=f"{service.ecs_cluster}/*"
        )
        self.cluster_arn = stack.format_arn(
            service="ecs", resource="cluster", resource_name=service.ecs_cluster
        )
        self.templates: dict[DrillFault, fis.CfnExperimentTemplate] = {}
        self.experiments: FisExperiments | None = None
        self.task_role_policy = iam.ManagedPolicy(
            self,
            "AgentTaskRolePolicy",
            description=f"Attach to the agents' task role ({env_name}/{service.name}): the drill hook "
            "reads its own task's tags through the task metadata endpoint",
            statements=[iam.PolicyStatement(actions=["ecs:ListTagsForResource"], resources=[self.tasks_arn])],
        )
        self.operator_policy = iam.ManagedPolicy(
            self,
            "OperatorPolicy",
            description=f"Attach to whoever runs lkfr drill on {env_name}/{service.name}",
            statements=self._operator_statements(env_name, service, functions, ledger_table_arn),
        )
        if config.drills.fis is not None:
            self._fis(env_name, service, config.drills.fis, detection)
        self._suppress_task_wildcards()

    def _operator_statements(
        self,
        env_name: str,
        service: AgentServiceConfig,
        functions: Sequence[lambda_.IFunction],
        ledger_table_arn: str,
    ) -> list[iam.PolicyStatement]:
        stack = Stack.of(self)
        switches = [
            stack.format_arn(service="ssm", resource="parameter", resource_name=name.lstrip("/"))
            for name in (mode_parameter_name(env_name), service_mode_parameter_name(env_name, service.name))
        ]
        log_groups = [
            stack.format_arn(
                service="logs",
                resource="log-group",
                resource_name=f"/aws/lambda/{function.function_name}:*",
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            for function in functions
        ]
        ours = (
            {f"aws:ResourceTag/{ECS_SERVICE_NAME_TAG}": service.ecs_service}
            if self.service_tasks_only
            else {}
        )
        own_tag = {"ForAllValues:StringEquals": {"aws:TagKeys": [DRILL_TAG]}}
        return [
            iam.PolicyStatement(
                actions=["ecs:ListTasks"],
                resources=["*"],
                conditions={"ArnEquals": {"ecs:cluster": self.cluster_arn}},
            ),
            iam.PolicyStatement(actions=["ecs:DescribeTasks"], resources=[self.tasks_arn]),
            iam.PolicyStatement(
                actions=["ecs:TagResource", "ecs:UntagResource"],
                resources=[self.tasks_arn],
                conditions={**({"StringEquals": ours} if ours else {}), **own_tag},
            ),
            iam.PolicyStatement(actions=["ssm:GetParameter"], resources=switches),
            iam.PolicyStatement(
                actions=["lambda:GetFunctionConfiguration"], resources=[f.function_arn for f in functions]
            ),
            iam.PolicyStatement(actions=["logs:FilterLogEvents"], resources=log_groups),
            iam.PolicyStatement(actions=["dynamodb:Query"], resources=[ledger_table_arn]),
            _drill_action_events(stack),
        ]

    def _fis(
        self, env_name: str, service: AgentServiceConfig, settings: FisDrills, detection: Detection
    ) -> None:
        self.experiments = FisExperiments(
            self,
            "Fis",
            env_name=env_name,
            service=service,
            settings=settings,
            detection=detection,
            tasks_arn=self.tasks_arn,
            cluster_arn=self.cluster_arn,
        )
        self.templates = self.experiments.templates
        stack = Stack.of(self)
        experiments = stack.format_arn(service="fis", resource="experiment", resource_name="*")
        self.operator_policy.add_statements(
            iam.PolicyStatement(
                actions=["fis:StartExperiment"],
                resources=[
                    *(
                        stack.format_arn(
                            service="fis", resource="experiment-template", resource_name=t.attr_id
                        )
                        for t in self.templates.values()
                    ),
                    experiments,
                ],
            ),
            # StartExperiment tags the experiment with its drill id: FIS authorises that as TagResource.
            iam.PolicyStatement(
                actions=[
                    "fis:TagResource",
                    "fis:GetExperiment",
                    "fis:StopExperiment",
                    "fis:ListExperimentResolvedTargets",
                ],
                resources=[experiments],
            ),
            # List calls take no resource.
            iam.PolicyStatement(
                actions=["fis:ListExperimentTemplates", "fis:ListExperiments"], resources=["*"]
            ),
        )

    def _suppress_task_wildcards(self) -> None:
        acknowledge(
            self,
            "AwsSolutions-IAM5",
            "Task ARNs end in a random id, so the drill's task actions name the agents' "
            "cluster's tasks (task/<cluster>/*); the marker writes are further limited to the "
            "agents' service (aws:ResourceTag/aws:ecs:serviceName) and the drill's tag key "
            "(aws:TagKeys); SSM managed instances to those of the cluster's tasks "
            "(ssm:resourceTag/ECS_TASK_ARN); documents to FIS's own (AWSFIS-Run-*); ListTasks "
            "to the cluster (ecs:cluster); experiments get ids at start (experiment/*); "
            "ListCommands, CancelCommand and the FIS list calls take no resource.",
            [
                re.compile(f"{NAG_ARN_START}ecs:.*:task/.*/\\*$"),
                re.compile(f"{NAG_ARN_START}logs:.*:log-group:.*:\\*$"),
                re.compile(f"{NAG_ARN_START}ssm:.*:document/AWSFIS-Run-\\*$"),
                re.compile(f"{NAG_ARN_START}ssm:.*:managed-instance/\\*$"),
                re.compile(f"{NAG_ARN_START}fis:.*:experiment/\\*$"),
                "Resource::*",
            ],
            apply_to_children=True,
        )


def _drill_action_events(stack: Stack) -> iam.PolicyStatement:
    """The drill's own action events: only that detail-type from our source, on the default bus."""
    return iam.PolicyStatement(
        actions=["events:PutEvents"],
        resources=[stack.format_arn(service="events", resource="event-bus", resource_name=EVENT_BUS_NAME)],
        conditions={
            "StringEquals": {"events:source": EVENT_SOURCE, "events:detail-type": ACTION_EVENT_DETAIL_TYPE}
        },
    )
