"""The fleet dashboard, top to bottom: every alarm's state and the kill switch; the agents' signals
(``Detection.add_fleet_widgets``); per-worker VAD rate and TTS reach over time; what each function
did; ECS running vs desired tasks; a timeline of the functions' reports.

Every graph of the functions' own metrics takes its identity (namespace, name, dimension set) from
``fleet_remediation.contract.metrics``, the definitions the functions emit through.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from fleet_remediation.contract import metrics as metric_definitions
from fleet_remediation.contract.metrics import MetricDefinition
from fleet_remediation.contract.naming import (
    RUNBOOKS,
    VAD_RUNBOOK,
    FunctionName,
    dashboard_name,
    function_log_group_name,
    function_mode_parameter_name,
    mode_parameter_name,
    runbook_url,
)
from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.constructs.detection import Detection

FIVE_MINUTES = Duration.minutes(5)
INVESTIGATION_RUNBOOK = "docs/runbooks/worker-investigation.md"


def remediation_metric(
    definition: MetricDefinition, environment: str, function: FunctionName | None = None, label: str = ""
) -> cloudwatch.Metric:
    """A graph of one of the functions' EMF metrics, with exactly the dimensions it is emitted with."""
    return cloudwatch.Metric(
        namespace=definition.namespace,
        metric_name=definition.name,
        dimensions_map=definition.dimensions(environment, function),
        statistic="Sum",
        period=FIVE_MINUTES,
        label=label or definition.name,
    )


def remediation_timeline_query() -> str:
    """Every report that did or said something (idle ticks left out), newest first."""
    return "\n| ".join(
        [
            'filter message = "remediation report" and (ispresent(report.actions.0.action) '
            "or ispresent(report.errors.0.code) or ispresent(report.notifications.0))",
            "fields @timestamp, report.function as function, report.mode as mode, report.status as status, "
            "report.trigger.kind as trigger, report.actions.0.action as action, "
            "report.actions.0.resource as resource, report.actions.0.outcome as outcome, "
            "report.errors.0.code as error, report.invocation_id as invocation",
            "sort @timestamp desc",
            "limit 100",
        ]
    )


class FleetDashboard(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env_name: str,
        config: EnvironmentConfig,
        detection: Detection,
        function_alarms: Sequence[cloudwatch.IAlarm],
    ) -> None:
        super().__init__(scope, construct_id)
        self.env_name = env_name
        # Scoped under Detection, where it used to be built: the same logical id, so an update keeps
        # the dashboard instead of creating a same-named one and then deleting it.
        self.dashboard = cloudwatch.Dashboard(
            detection,
            "Dashboard",
            dashboard_name=dashboard_name(env_name),
            default_interval=Duration.hours(3),
        )
        self.dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(
                title="Alarms: detection and the remediation functions' health",
                alarms=[detection.tts_reach_alarm, detection.vad_alarm, *function_alarms],
                width=15,
                height=7,
            ),
            cloudwatch.TextWidget(markdown=self._kill_switch_and_runbooks(config), width=9, height=7),
        )
        detection.add_fleet_widgets(self.dashboard, config.agent_service.agent_log_group)
        self._per_worker_over_time(config)
        self._remediation()
        self._drainer_and_fleet(config)
        self.dashboard.add_widgets(
            cloudwatch.LogQueryWidget(
                title="Remediation timeline: reports that acted, failed or notified (newest first)",
                log_group_names=[function_log_group_name(env_name, function) for function in FunctionName],
                query_string=remediation_timeline_query(),
                view=cloudwatch.LogQueryVisualizationType.TABLE,
                width=24,
                height=8,
            )
        )

    def _kill_switch_and_runbooks(self, config: EnvironmentConfig) -> str:
        env = self.env_name
        ceiling = mode_parameter_name(env)
        own = [function_mode_parameter_name(env, function) for function in FunctionName]
        runbooks = {
            "zombie reaper": RUNBOOKS[FunctionName.ZOMBIE_REAPER],
            "TTS reach": RUNBOOKS[FunctionName.TTS_REACH_ALARM],
            "worker drainer": RUNBOOKS[FunctionName.WORKER_DRAINER],
            "slow VAD": VAD_RUNBOOK,
            "worker investigation": INVESTIGATION_RUNBOOK,
        }
        links = " · ".join(
            f"[{label}]({runbook_url(config.runbook_base_url, path)})" for label, path in runbooks.items()
        )
        return "\n".join(
            [
                "### Kill switch",
                f"Environment (the ceiling): `{ceiling}`",
                "Each function's own (the stricter wins): " + ", ".join(f"`{name}`" for name in own),
                "",
                f"Read: `aws ssm get-parameters --names {ceiling} {' '.join(own)} "
                "--query 'Parameters[].[Name,Value]' --output text`",
                "",
                f"Stop everything: `aws ssm put-parameter --overwrite --name {ceiling} --value off`",
                "",
                "Values: `enforce` | `dry-run` | `off`; read again within 5 s by running functions.",
                "",
                f"### Runbooks\n{links}",
            ]
        )

    def _per_worker_over_time(self, config: EnvironmentConfig) -> None:
        agent_log_group = config.agent_service.agent_log_group
        catalog = config.detection.catalog()
        started, frame = catalog.response_started, catalog.first_audio_frame
        reach = "\n| ".join(
            [
                f"filter {started.insights_filter().removeprefix('filter ')} "
                f"or {frame.insights_filter().removeprefix('filter ')}",
                f'stats sum(strcontains({started.field}, "{started.text}")) as responses, '
                f'sum(strcontains({frame.field}, "{frame.text}")) as first_frames, '
                "first_frames / responses as reach by bin(5m), @logStream",
            ]
        )
        self.dashboard.add_widgets(
            cloudwatch.LogQueryWidget(
                title="Slow VAD warnings per minute, per worker",
                log_group_names=[agent_log_group],
                query_string=catalog.slow_vad.insights_query(
                    "stats count(*) as warnings by bin(1m), @logStream"
                ),
                view=cloudwatch.LogQueryVisualizationType.LINE,
                width=12,
                height=7,
            ),
            cloudwatch.LogQueryWidget(
                title="TTS reach per worker (first frames / responses, 5 min)",
                log_group_names=[agent_log_group],
                query_string=reach,
                view=cloudwatch.LogQueryVisualizationType.LINE,
                width=12,
                height=7,
            ),
        )

    def _remediation(self) -> None:
        env = self.env_name
        m = metric_definitions
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Zombie reaper: rooms",
                left=[
                    remediation_metric(m.ROOMS_REAPED, env),
                    remediation_metric(m.ROOM_REAP_FAILURES, env),
                    remediation_metric(m.ROOMS_TRIMMED_BY_CAP, env),
                    remediation_metric(m.ROOMS_OVER_AGE, env),
                ],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="TTS responder: silent jobs and suspect workers",
                left=[
                    remediation_metric(m.TTS_REACH_FAILING_JOBS, env),
                    remediation_metric(m.TTS_REACH_SUSPECT_WORKERS, env),
                ],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Function health: failed reports, notifications lost",
                left=[
                    remediation_metric(m.INVOCATION_FAILED, env, function, f"{function.value} failed")
                    for function in m.INVOCATION_FAILED.functions
                ]
                + [
                    remediation_metric(m.NOTIFICATIONS_LOST, env, function, f"{function.value} lost")
                    for function in m.NOTIFICATIONS_LOST.functions
                ],
                width=8,
            ),
        )

    def _drainer_and_fleet(self, config: EnvironmentConfig) -> None:
        env = self.env_name
        m = metric_definitions
        ecs = {
            "ClusterName": config.agent_service.ecs_cluster,
            "ServiceName": config.agent_service.ecs_service,
        }

        def container_insights(name: str) -> cloudwatch.Metric:
            return cloudwatch.Metric(
                namespace=m.ECS_CONTAINER_INSIGHTS_NAMESPACE,
                metric_name=name,
                dimensions_map=ecs,
                statistic="Average",
                period=Duration.minutes(1),
            )

        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Worker drainer: draining tasks and steps done",
                left=[
                    remediation_metric(m.DRAINER_TASKS_DRAINING, env),
                    *(remediation_metric(m.DRAINER_STEP_DONE[step], env) for step in m.DRAINER_STEPS),
                    remediation_metric(m.DRAINER_GUARDRAIL_REFUSALS, env),
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="ECS agent tasks: running vs desired (Container Insights)",
                left=[
                    container_insights(m.ECS_RUNNING_TASK_COUNT),
                    container_insights(m.ECS_DESIRED_TASK_COUNT),
                ],
                width=12,
            ),
        )
