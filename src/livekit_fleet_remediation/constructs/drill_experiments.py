"""The AWS FIS side of one agent service's drills (``drills.fis``): an experiment template per
fault FIS has, each on ONE task of the service (``COUNT(1)`` of the service's tasks, by its cluster
and service) for ``drills.fis.minutes``, stopped early by a guard alarm on the service's
fleet-wide first-audio share; and the experiments' least-privilege role (FIS user guide, "Use the
AWS FIS aws:ecs:task actions": ``ecs:DescribeTasks``, ``ssm:SendCommand``, ``ssm:ListCommands``,
``ssm:CancelCommand``, with ``ecs:ListTasks`` to resolve the service's tasks).
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_fis as fis
from aws_cdk import aws_iam as iam
from constructs import Construct

from fleet_remediation.contract.agent_services import AgentServiceConfig
from fleet_remediation.contract.drills import DrillFault
from livekit_fleet_remediation.constructs.detection import Detection
from livekit_fleet_remediation.drill_config import (
    FIS_ACTIONS,
    TEMPLATE_ENVIRONMENT_TAG,
    TEMPLATE_FAULT_TAG,
    TEMPLATE_SERVICE_TAG,
    FisDrills,
)

# The guard counts responses over this window, and stays quiet below this many of them.
GUARD_WINDOW = Duration.minutes(5)
GUARD_MIN_RESPONSES = 20
# FIS's own documents for the ECS task actions (AWS-owned: no account in their ARNs).
FIS_DOCUMENTS = "AWSFIS-Run-*"
# FIS registers each task as an SSM managed instance tagged with its task's ARN.
MANAGED_INSTANCE_TASK_TAG = "ECS_TASK_ARN"


class FisExperiments(Construct):
    """Public attributes: ``guard_alarm``, ``role``, ``templates`` (by fault)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env_name: str,
        service: AgentServiceConfig,
        settings: FisDrills,
        detection: Detection,
        tasks_arn: str,
        cluster_arn: str,
    ) -> None:
        super().__init__(scope, construct_id)
        self.tasks_arn, self.cluster_arn = tasks_arn, cluster_arn
        self.guard_alarm = _guard_alarm(self, env_name, service.name, settings, detection)
        self.role = self._experiment_role()
        self.templates = {
            fault: self._template(env_name, service, settings, fault) for fault in settings.faults()
        }

    def _experiment_role(self) -> iam.Role:
        """What FIS's ECS task actions need (FIS user guide, "Use the AWS FIS aws:ecs:task actions"),
        on this service's cluster's tasks and FIS's own documents only."""
        stack = Stack.of(self)
        role = iam.Role(
            self,
            "ExperimentRole",
            description="AWS FIS drills on one task of the agents' service",
            assumed_by=iam.ServicePrincipal(
                "fis.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": stack.account}}
            ),
        )
        documents = stack.format_arn(
            service="ssm", resource="document", resource_name=FIS_DOCUMENTS, account=""
        )
        instances = stack.format_arn(service="ssm", resource="managed-instance", resource_name="*")
        for statement in (
            iam.PolicyStatement(actions=["ecs:DescribeTasks"], resources=[self.tasks_arn]),
            iam.PolicyStatement(
                actions=["ecs:ListTasks"],
                resources=["*"],
                conditions={"ArnEquals": {"ecs:cluster": self.cluster_arn}},
            ),
            iam.PolicyStatement(actions=["ssm:SendCommand"], resources=[documents]),
            # The managed instances FIS registered for this cluster's tasks only.
            iam.PolicyStatement(
                actions=["ssm:SendCommand"],
                resources=[instances],
                conditions={"StringLike": {f"ssm:resourceTag/{MANAGED_INSTANCE_TASK_TAG}": self.tasks_arn}},
            ),
            # ListCommands and CancelCommand support no resource-level permissions.
            iam.PolicyStatement(actions=["ssm:ListCommands", "ssm:CancelCommand"], resources=["*"]),
        ):
            role.add_to_policy(statement)
        return role

    def _template(
        self, env_name: str, service: AgentServiceConfig, settings: FisDrills, fault: DrillFault
    ) -> fis.CfnExperimentTemplate:
        duration = f"PT{settings.minutes}M"
        parameters = {"duration": duration, "installDependencies": "true"}
        if fault is DrillFault.CPU_STARVED:
            parameters["percent"] = "100"
        else:
            parameters.update(
                delayMilliseconds=str(settings.tts_delay_milliseconds),
                jitterMilliseconds="0",
                sources=",".join(settings.tts_provider_hosts),
                useEcsFaultInjectionEndpoints="true",
            )
        name = "".join(part.capitalize() for part in fault.value.split("-"))
        return fis.CfnExperimentTemplate(
            self,
            f"{name}Template",
            description=f"lkfr drill {fault.value}: {FIS_ACTIONS[fault]} on one task of "
            f"{service.ecs_cluster}/{service.ecs_service} for {settings.minutes} min ({env_name})",
            role_arn=self.role.role_arn,
            stop_conditions=[
                fis.CfnExperimentTemplate.ExperimentTemplateStopConditionProperty(
                    source="aws:cloudwatch:alarm", value=self.guard_alarm.alarm_arn
                )
            ],
            targets={
                "AgentTask": fis.CfnExperimentTemplate.ExperimentTemplateTargetProperty(
                    resource_type="aws:ecs:task",
                    selection_mode="COUNT(1)",
                    parameters={"cluster": service.ecs_cluster, "service": service.ecs_service},
                )
            },
            actions={
                "Fault": fis.CfnExperimentTemplate.ExperimentTemplateActionProperty(
                    action_id=FIS_ACTIONS[fault], parameters=parameters, targets={"Tasks": "AgentTask"}
                )
            },
            tags={
                TEMPLATE_ENVIRONMENT_TAG: env_name,
                TEMPLATE_SERVICE_TAG: service.name,
                TEMPLATE_FAULT_TAG: fault.value,
            },
        )


def _guard_alarm(
    scope: Construct, env_name: str, service: str, settings: FisDrills, detection: Detection
) -> cloudwatch.Alarm:
    """ALARM when ``guard_missing_fraction`` of the service's responses fleet-wide lacked a first
    audio frame over 5 minutes: harm past the one drilled task (or a fleet too small to drill)."""
    missing = cloudwatch.MathExpression(
        expression=f"IF(responses >= {GUARD_MIN_RESPONSES}, (responses - frames) / responses, 0)",
        using_metrics={
            "responses": detection.responses.with_(period=GUARD_WINDOW),
            "frames": detection.first_frames.with_(period=GUARD_WINDOW),
        },
        label="share of responses without a first audio frame, fleet-wide",
        period=GUARD_WINDOW,
    )
    return cloudwatch.Alarm(
        scope,
        "GuardAlarm",
        alarm_name=guard_alarm_name(env_name, service),
        alarm_description=f"Stops the AWS FIS drills of {env_name}/{service}: "
        f"{settings.guard_missing_fraction:.0%} or more of the responses fleet-wide lack a first "
        "audio frame.",
        metric=missing,
        threshold=settings.guard_missing_fraction,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluation_periods=1,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
    )


def guard_alarm_name(environment: str, service: str) -> str:
    return f"livekit-{environment}-{service}-drill-guard"
