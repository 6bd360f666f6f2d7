"""Detection of one agent service from the logs its agents already write: metric filters, the VAD
and TTS-reach alarms, EventBridge routes from alarm state changes to functions, and the service's
rows of the fleet dashboard.

Everything derives from ``DetectionConfig`` (the service's ``detection`` section, else the
environment's), the same model ``lkfr backtest`` evaluates, so a backtest replays these alarms.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from fleet_remediation.contract.agent_services import AgentService
from fleet_remediation.contract.alarm_math import PERIOD_SECONDS, AlarmDefinition, AnyOf
from fleet_remediation.contract.detection import DetectionConfig, TtsReachAlarmSettings, VadAlarmSettings
from fleet_remediation.contract.events import ALARM_EVENT_MAX_AGE_SECONDS
from fleet_remediation.contract.naming import (
    ALARM_DETAIL_TYPE,
    RUNBOOKS,
    VAD_RUNBOOK,
    FunctionName,
    RunbookLinks,
    alarm_part_name,
    metric_filter_name,
    runbook_url,
    tts_reach_alarm_name,
    vad_alarm_name,
)
from fleet_remediation.contract.signals import Signal, SignalCatalog
from livekit_fleet_remediation.constructs.scan_budget import ScanBudgetTally

PERIOD = Duration.seconds(PERIOD_SECONDS)


class Detection(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env_name: str,
        service: AgentService,
        detection: DetectionConfig,
        scan_tally: ScanBudgetTally,
        runbooks: tuple[str, RunbookLinks],
        agent_log_group: logs.ILogGroup | None = None,
    ) -> None:
        """``agent_log_group``: the agents' log group by reference, else by its name in ``service``.
        ``scan_tally``: the environment's scan budget, which this service's looks count against.
        ``runbooks``: ``runbook_base_url`` and ``runbook_links``, for the pages' descriptions."""
        super().__init__(scope, construct_id)
        self.env_name = env_name
        self._runbooks = runbooks
        self.service = service.name
        catalog = detection.catalog()
        self.namespace = detection.metric_namespace(env_name, service.name)
        self.log_group = agent_log_group or logs.LogGroup.from_log_group_name(
            self, "AgentLogs", service.agent_log_group
        )
        self._catalog = catalog
        delay_metric = self._metric_filters(catalog)
        self.vad_warnings = self._metric(catalog.slow_vad.metric_name, "Sum")
        self.vad_max_delay = self._metric(str(delay_metric), "Maximum")
        self.responses = self._metric(catalog.response_started.metric_name, "Sum")
        self.first_frames = self._metric(catalog.first_audio_frame.metric_name, "Sum")
        self.first_audio_timeouts = self._metric(catalog.first_audio_timeout.metric_name, "Sum")
        self.vad_alarm = self._vad_page(detection.vad_alarm)
        self.tts_reach_alarm = self._tts_reach_page(detection.tts_reach_alarm)
        self.scan_tally = scan_tally

    def _metric_filters(self, catalog: SignalCatalog) -> str | None:
        """One count per signal and the slow-VAD delay's value; returns the delay metric's name."""
        # Dimensionless metrics: their count (and cost) does not grow with jobs, rooms or workers.
        for signal in catalog:
            self._filter(signal.metric_name, signal.metric_filter_pattern(), "1", cloudwatch.Unit.COUNT)
            summary, value = signal.summary_filter_pattern(), signal.summary_metric_value()
            if summary and value:
                # The agent package's summary line carries the count: the metric sums its field.
                self._filter(signal.metric_name, summary, value, cloudwatch.Unit.COUNT, source="Summary")
        delay_pattern, delay_metric = (
            catalog.slow_vad.value_filter_pattern(),
            catalog.slow_vad.value_metric_name,
        )
        if delay_pattern and delay_metric:
            self._filter(
                delay_metric, delay_pattern, f"$.{catalog.slow_vad.value_field}", cloudwatch.Unit.SECONDS
            )
        return delay_metric

    def _vad_page(self, vad: VadAlarmSettings) -> cloudwatch.CompositeAlarm:
        self.vad_breach = self._breach_expression(
            vad.definition(), "VAD breaching minute (1 = slow-inference rate and delay both over)"
        )
        return self._page(
            "Vad",
            vad_alarm_name(self.env_name, self.service),
            vad.alarm(),
            [self.vad_breach] * len(vad.alarm().children),
            f"Silero VAD slower than realtime (CPU starvation): {vad.describe()}. "
            f"Runbook: {self._runbook(VAD_RUNBOOK)}",
        )

    def _tts_reach_page(self, tts: TtsReachAlarmSettings) -> cloudwatch.CompositeAlarm:
        breaches = [
            self._breach_expression(
                child,
                f"TTS reach breaching ({child.period_minutes}-min window; "
                "1 = timeouts or missing frames over)",
            )
            for child in tts.alarm().children
        ]
        self.tts_breach = breaches[0]  # the fast window, on the dashboard
        return self._page(
            "TtsReach",
            tts_reach_alarm_name(self.env_name, self.service),
            tts.alarm(),
            breaches,
            f"Users hear nothing: {tts.describe()}. "
            f"Runbook: {self._runbook(RUNBOOKS[FunctionName.TTS_REACH_ALARM])}",
        )

    def _runbook(self, path: str) -> str:
        base, links = self._runbooks
        return runbook_url(base, path, links)

    def _page(
        self,
        construct_prefix: str,
        name: str,
        page: AnyOf,
        breaches: Sequence[cloudwatch.MathExpression],
        description: str,
    ) -> cloudwatch.CompositeAlarm:
        """A page: a composite alarm named ``name``, ANY of one metric alarm per part (the fast one
        and the one that holds the incident), which have no actions of their own. The stack sends
        the page's ALARM and OK to the notification topics (Notifications): it does not depend on the
        functions, whose analysis follows in the same incident."""
        parts = [
            self._alarm(
                f"{construct_prefix}{part.label.capitalize()}Alarm",
                alarm_part_name(name, part.label),
                part,
                breach,
                f"Part of {name}: {part.label}.",
            )
            for part, breach in zip(page.children, breaches, strict=True)
        ]
        return cloudwatch.CompositeAlarm(
            self,
            f"{construct_prefix}Page",
            composite_alarm_name=name,
            alarm_description=description,
            alarm_rule=cloudwatch.AlarmRule.any_of(
                *(cloudwatch.AlarmRule.from_alarm(part, cloudwatch.AlarmState.ALARM) for part in parts)
            ),
        )

    def _filter(
        self, metric_name: str, pattern: str, value: str, unit: cloudwatch.Unit, source: str = ""
    ) -> None:
        """``source``: a second filter feeding the same metric (the summary line's) is told apart by it."""
        logs.MetricFilter(
            self,
            f"{metric_name}{source}Filter",
            log_group=self.log_group,
            filter_name=metric_filter_name(self.env_name, self.service, metric_name + source),
            filter_pattern=logs.FilterPattern.literal(pattern),
            metric_namespace=self.namespace,
            metric_name=metric_name,
            metric_value=value,
            unit=unit,
        )

    def _metric(self, metric_name: str, statistic: str, period: Duration = PERIOD) -> cloudwatch.Metric:
        return cloudwatch.Metric(
            namespace=self.namespace, metric_name=metric_name, statistic=statistic, period=period
        )

    def _breach_expression(self, definition: AlarmDefinition, label: str) -> cloudwatch.MathExpression:
        """The definition's metric math over the metric-filter metrics it names, per its period."""
        period = Duration.minutes(definition.period_minutes)
        using: dict[str, cloudwatch.IMetric] = {}
        for source in definition.inputs:
            signal: Signal = getattr(self._catalog, source.signal)
            name = signal.value_metric_name if source.value_metric else signal.metric_name
            using[source.metric_id] = self._metric(str(name), source.statistic.value, period)
        return cloudwatch.MathExpression(
            expression=definition.expression.render(), using_metrics=using, label=label, period=period
        )

    def _alarm(
        self,
        construct_id: str,
        alarm_name: str,
        definition: AlarmDefinition,
        breach: cloudwatch.MathExpression,
        description: str,
    ) -> cloudwatch.Alarm:
        """ALARM when N of the last M datapoints of the 0/1 breach expression are 1; CloudWatch
        evaluates it every minute over a sliding window, as ``AlarmEvaluator`` replays it."""
        return cloudwatch.Alarm(
            self,
            construct_id,
            alarm_name=alarm_name,
            alarm_description=description,
            metric=breach,
            threshold=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=definition.evaluation_periods,
            datapoints_to_alarm=definition.datapoints_to_alarm,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

    def route_alarm(
        self,
        construct_id: str,
        alarm: cloudwatch.IAlarm,
        function: lambda_.IFunction,
        dead_letter_queue: sqs.IQueue,
        states: Sequence[str] = ("ALARM", "OK"),
    ) -> events.Rule:
        """An EventBridge rule delivering this alarm's state changes to ``function``, retried, then
        parked in ``dead_letter_queue``."""
        return events.Rule(
            self,
            construct_id,
            description=f"{'/'.join(states)} of {alarm.alarm_name} to {function.function_name}",
            event_pattern=events.EventPattern(
                source=["aws.cloudwatch"],
                detail_type=[ALARM_DETAIL_TYPE],
                resources=[alarm.alarm_arn],
                detail={"state": {"value": list(states)}},
            ),
            targets=[
                targets.LambdaFunction(
                    function,
                    dead_letter_queue=dead_letter_queue,
                    retry_attempts=4,
                    max_event_age=Duration.seconds(ALARM_EVENT_MAX_AGE_SECONDS),
                )
            ],
        )

    def add_fleet_widgets(self, dashboard: cloudwatch.Dashboard) -> None:
        """The service's signals on the fleet dashboard (``FleetDashboard`` lays out the rest)."""
        self.dashboard = dashboard
        named = self.service
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title=f"{named}: TTS reach alarm condition (1 = breaching window)",
                left=[self.tts_breach],
                left_y_axis=cloudwatch.YAxisProps(min=0, max=1.1),
                width=12,
            ),
            cloudwatch.GraphWidget(
                title=f"{named}: responses, first audio frames and first-audio timeouts per minute",
                left=[self.responses, self.first_frames, self.first_audio_timeouts],
                width=12,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title=f"{named}: VAD slower than realtime: warnings/min and max delay (s)",
                left=[self.vad_warnings],
                right=[self.vad_max_delay],
                width=24,
            ),
        )

    def per_worker_queries(self) -> list[tuple[str, str]]:
        """(title, Logs Insights query) of the per-worker views: saved queries, run on demand (a
        dashboard widget would scan the agent logs on every load)."""
        catalog = self._catalog
        per_worker_reach = "\n| ".join(
            [
                f"filter {catalog.tts_selector()}",
                f"stats {catalog.tts_sums()} by @logStream",
                "sort responses + responses_summed desc",
            ]
        )
        return [
            ("TTS reach per worker (log stream = ECS task)", per_worker_reach),
            (
                "slow VAD inference per worker",
                catalog.slow_vad.insights_query(
                    f"stats count(*) as warnings, max({catalog.slow_vad.value_field}) as max_delay "
                    "by @logStream",
                    "sort warnings desc",
                ),
            ),
        ]
