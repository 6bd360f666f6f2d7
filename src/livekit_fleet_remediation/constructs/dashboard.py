"""The fleet dashboard, top to bottom: every alarm's state and the kill switch; what the reaper did
and the functions' health; then, per agent service under a heading naming it, its signals
(``Detection.add_fleet_widgets``), its per-worker views as saved Logs Insights queries, what its
responder and drainer did and its ECS running vs desired tasks; last, a timeline of every
function's reports.

A load does not bill by the glance: every graph is a metric; the per-worker views (nothing but the
agents' logs can break a signal down by task without a metric series per task) are saved queries a
person runs when needed, each billed for the agent logs of its time range; the one Logs Insights
widget left, the timeline, reads only the functions' own small logs (``lkfr cost`` prices it).

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
    service_mode_parameter_name,
)
from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.constructs.agent_service import AgentServiceRemediation
from livekit_fleet_remediation.constructs.dashboard_queries import add_per_worker_queries

FIVE_MINUTES = Duration.minutes(5)
INVESTIGATION_RUNBOOK = "docs/runbooks/worker-investigation.md"


def remediation_metric(
    definition: MetricDefinition,
    environment: str,
    function: FunctionName | None = None,
    label: str = "",
    service: str | None = None,
) -> cloudwatch.Metric:
    """A graph of one of the functions' EMF metrics, with exactly the dimensions it is emitted with
    (``service``: the agent service of a service's responder or drainer)."""
    return cloudwatch.Metric(
        namespace=definition.namespace,
        metric_name=definition.name,
        dimensions_map=definition.dimensions(environment, function, service),
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
            "fields @timestamp, report.function as function, report.agent_service as agent_service, "
            "report.mode as mode, report.status as status, "
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
        services: Sequence[AgentServiceRemediation],
        function_alarms: Sequence[cloudwatch.IAlarm],
        dashboard_scope: Construct | None = None,
    ) -> None:
        """``dashboard_scope``: where the dashboard itself is (its logical id), else here."""
        super().__init__(scope, construct_id)
        self.env_name = env_name
        self.dashboard = cloudwatch.Dashboard(
            dashboard_scope or self,
            "Dashboard",
            dashboard_name=dashboard_name(env_name),
            default_interval=Duration.hours(3),
        )
        self.dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(
                title="Alarms: each agent service's pages and the remediation functions' health",
                alarms=[*(page for service in services for page in service.pages), *function_alarms],
                width=15,
                height=7,
            ),
            cloudwatch.TextWidget(markdown=self._kill_switch_and_runbooks(config), width=9, height=7),
        )
        self._reaper_and_health([service.name for service in services])
        for service in services:
            self._service_rows(service, service.view)
        self.dashboard.add_widgets(
            cloudwatch.LogQueryWidget(
                title="Remediation timeline: reports that acted, failed or notified (newest first)",
                log_group_names=[
                    function_log_group_name(env_name, function, service)
                    for function, service in _functions_of([service.name for service in services])
                ],
                query_string=remediation_timeline_query(),
                view=cloudwatch.LogQueryVisualizationType.TABLE,
                width=24,
                height=8,
            )
        )

    def _service_rows(self, service: AgentServiceRemediation, view: EnvironmentConfig) -> None:
        """One agent service's rows, under a heading naming it."""
        self.dashboard.add_widgets(
            cloudwatch.TextWidget(
                markdown=f"## Agent service `{service.name}` "
                f"({view.agent_service.ecs_cluster}/{view.agent_service.ecs_service})",
                width=24,
                height=1,
            )
        )
        service.detection.add_fleet_widgets(self.dashboard)
        self._per_worker_queries(service, view)
        self._responder(service.name)
        self._drainer_and_fleet(view)

    def _kill_switch_and_runbooks(self, config: EnvironmentConfig) -> str:
        env = self.env_name
        ceiling = mode_parameter_name(env)
        own = [function_mode_parameter_name(env, function) for function in FunctionName]
        per_service = [service_mode_parameter_name(env, service.name) for service in config.agent_services]
        runbooks = {
            "zombie reaper": RUNBOOKS[FunctionName.ZOMBIE_REAPER],
            "TTS reach": RUNBOOKS[FunctionName.TTS_REACH_ALARM],
            "worker drainer": RUNBOOKS[FunctionName.WORKER_DRAINER],
            "slow VAD": VAD_RUNBOOK,
            "worker investigation": INVESTIGATION_RUNBOOK,
        }
        links = " · ".join(
            f"[{label}]({runbook_url(config.runbook_base_url, path, config.runbook_links)})"
            for label, path in runbooks.items()
        )
        return "\n".join(
            [
                "### Kill switch",
                f"Environment (the ceiling): `{ceiling}`",
                "Each function's own (the stricter wins): " + ", ".join(f"`{name}`" for name in own),
                "Each agent service's own: " + ", ".join(f"`{name}`" for name in per_service),
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

    def _per_worker_queries(self, service: AgentServiceRemediation, view: EnvironmentConfig) -> None:
        """The per-worker views as saved queries (free until run) and a text widget naming them."""
        self.dashboard.add_widgets(add_per_worker_queries(self, self.env_name, service, view))

    def _reaper_and_health(self, services: Sequence[str]) -> None:
        env = self.env_name
        m = metric_definitions

        def health(definition: MetricDefinition, what: str) -> list[cloudwatch.Metric]:
            return [
                remediation_metric(
                    definition,
                    env,
                    function,
                    f"{service + ' ' if service else ''}{function.value} {what}",
                    service,
                )
                for function, service in _functions_of(services)
                if function in definition.functions
            ]

        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Zombie reaper: rooms",
                left=[
                    remediation_metric(m.ROOMS_REAPED, env),
                    remediation_metric(m.ROOM_REAP_FAILURES, env),
                    remediation_metric(m.ROOMS_TRIMMED_BY_CAP, env),
                    remediation_metric(m.ROOMS_OVER_AGE, env),
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Function health: failed reports, notifications lost",
                left=health(m.INVOCATION_FAILED, "failed") + health(m.NOTIFICATIONS_LOST, "lost"),
                width=12,
            ),
        )

    def _responder(self, service: str) -> None:
        env = self.env_name
        m = metric_definitions
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title=f"{service}: TTS responder: silent jobs and suspect workers",
                left=[
                    remediation_metric(m.TTS_REACH_FAILING_JOBS, env, service=service),
                    remediation_metric(m.TTS_REACH_SUSPECT_WORKERS, env, service=service),
                ],
                width=24,
            ),
        )

    def _drainer_and_fleet(self, view: EnvironmentConfig) -> None:
        env = self.env_name
        m = metric_definitions
        service = view.agent_service
        ecs = {"ClusterName": service.ecs_cluster, "ServiceName": service.ecs_service}

        def container_insights(name: str) -> cloudwatch.Metric:
            return cloudwatch.Metric(
                namespace=m.ECS_CONTAINER_INSIGHTS_NAMESPACE,
                metric_name=name,
                dimensions_map=ecs,
                statistic="Average",
                period=Duration.minutes(1),
            )

        def drainer(definition: MetricDefinition) -> cloudwatch.Metric:
            return remediation_metric(definition, env, service=service.name)

        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title=f"{service.name}: worker drainer: draining tasks and steps done",
                left=[
                    drainer(m.DRAINER_TASKS_DRAINING),
                    *(drainer(m.DRAINER_STEP_DONE[step]) for step in m.DRAINER_STEPS),
                    drainer(m.DRAINER_GUARDRAIL_REFUSALS),
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title=f"{service.name}: ECS agent tasks: running vs desired (Container Insights)",
                left=[
                    container_insights(m.ECS_RUNNING_TASK_COUNT),
                    container_insights(m.ECS_DESIRED_TASK_COUNT),
                ],
                width=12,
            ),
        )


def _functions_of(services: Sequence[str]) -> list[tuple[FunctionName, str | None]]:
    """Every function's copy: the reaper, and each agent service's responder and drainer."""
    per_service = (FunctionName.TTS_REACH_ALARM, FunctionName.WORKER_DRAINER)
    return [(FunctionName.ZOMBIE_REAPER, None), *((f, s) for s in services for f in per_service)]
