"""Detection from the logs the agents already write: metric filters, the VAD and TTS-reach alarms,
EventBridge routes from alarm state changes to functions, and the fleet dashboard.

Everything derives from ``DetectionConfig`` (the environment's ``detection`` section), the same
model ``tools/backtest.py`` evaluates, so a backtest replays exactly these alarms.
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

from fleet_remediation.contract.detection import PERIOD_SECONDS, DetectionConfig
from fleet_remediation.contract.naming import (
    ALARM_DETAIL_TYPE,
    RUNBOOKS,
    VAD_RUNBOOK,
    FunctionName,
    metric_filter_name,
    tts_reach_alarm_name,
    vad_alarm_name,
)
from fleet_remediation.contract.signals import Signal
from fleet_stack.config import EnvironmentConfig

PERIOD = Duration.seconds(PERIOD_SECONDS)


class Detection(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env_name: str,
        config: EnvironmentConfig,
    ) -> None:
        super().__init__(scope, construct_id)
        self.env_name = env_name
        detection: DetectionConfig = config.detection
        catalog = detection.catalog()
        self.namespace = detection.metric_namespace(env_name)
        self.log_group = logs.LogGroup.from_log_group_name(self, "AgentLogs", config.agent_log_group)
        # Dimensionless metrics: their count (and cost) does not grow with jobs, rooms or workers.
        for signal in catalog:
            self._filter(signal.metric_name, signal.metric_filter_pattern(), "1", cloudwatch.Unit.COUNT)
        delay_pattern, delay_metric = (
            catalog.slow_vad.value_filter_pattern(),
            catalog.slow_vad.value_metric_name,
        )
        if delay_pattern and delay_metric:
            self._filter(
                delay_metric, delay_pattern, f"$.{catalog.slow_vad.value_field}", cloudwatch.Unit.SECONDS
            )

        self.vad_warnings = self._metric(catalog.slow_vad, "Sum")
        self.vad_max_delay = cloudwatch.Metric(
            namespace=self.namespace, metric_name=str(delay_metric), statistic="Maximum", period=PERIOD
        )
        self.responses = self._metric(catalog.response_started, "Sum")
        self.first_frames = self._metric(catalog.first_audio_frame, "Sum")

        vad = detection.vad_alarm
        self.vad_breach = cloudwatch.MathExpression(
            expression=(
                f"IF(FILL(warnings, 0) >= {vad.min_warnings_per_minute:g} "
                f"AND FILL(maxdelay, 0) >= {vad.min_max_delay_seconds:g}, 1, 0)"
            ),
            using_metrics={"warnings": self.vad_warnings, "maxdelay": self.vad_max_delay},
            label="VAD breaching minute (1 = slow-inference rate and delay both over)",
            period=PERIOD,
        )
        self.vad_alarm = cloudwatch.Alarm(
            self,
            "VadAlarm",
            alarm_name=vad_alarm_name(env_name),
            alarm_description=(
                f"Silero VAD slower than realtime (CPU starvation): >= {vad.min_warnings_per_minute:g} "
                f"warnings/min and max delay >= {vad.min_max_delay_seconds:g}s in "
                f"{vad.datapoints_to_alarm} of {vad.evaluation_periods} minutes. "
                f"Runbook: {VAD_RUNBOOK}"
            ),
            metric=self.vad_breach,
            threshold=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=vad.evaluation_periods,
            datapoints_to_alarm=vad.datapoints_to_alarm,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )

        tts = detection.tts_reach_alarm
        # Under the minimum volume the expression is 1 (full reach): a quiet night cannot alarm.
        self.reach = cloudwatch.MathExpression(
            expression=(
                f"IF(FILL(responses, 0) >= {tts.min_responses_per_minute}, "
                "FILL(frames, 0) / FILL(responses, 0), 1)"
            ),
            using_metrics={"responses": self.responses, "frames": self.first_frames},
            label="TTS reach (first audio frames / responses)",
            period=PERIOD,
        )
        # The stack sends both alarms' ALARM and OK to the notification topics (Notifications): the
        # page does not depend on the responder, whose analysis follows in the same incident.
        self.tts_reach_alarm = cloudwatch.Alarm(
            self,
            "TtsReachAlarm",
            alarm_name=tts_reach_alarm_name(env_name),
            alarm_description=(
                f"TTS reach below {tts.threshold:.0%} with >= {tts.min_responses_per_minute} "
                f"responses/min in {tts.datapoints_to_alarm} of {tts.evaluation_periods} minutes: "
                f"users hear nothing. Runbook: {RUNBOOKS[FunctionName.TTS_REACH_ALARM]}"
            ),
            metric=self.reach,
            threshold=tts.threshold,
            comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            evaluation_periods=tts.evaluation_periods,
            datapoints_to_alarm=tts.datapoints_to_alarm,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        self._catalog = catalog
        self.tts_threshold = tts.threshold

    def _filter(self, metric_name: str, pattern: str, value: str, unit: cloudwatch.Unit) -> None:
        logs.MetricFilter(
            self,
            f"{metric_name}Filter",
            log_group=self.log_group,
            filter_name=metric_filter_name(self.env_name, metric_name),
            filter_pattern=logs.FilterPattern.literal(pattern),
            metric_namespace=self.namespace,
            metric_name=metric_name,
            metric_value=value,
            unit=unit,
        )

    def _metric(self, signal: Signal, statistic: str) -> cloudwatch.Metric:
        return cloudwatch.Metric(
            namespace=self.namespace, metric_name=signal.metric_name, statistic=statistic, period=PERIOD
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
                    max_event_age=Duration.hours(1),
                )
            ],
        )

    def add_fleet_widgets(self, dashboard: cloudwatch.Dashboard, agent_log_group: str) -> None:
        """The agents' signals on the fleet dashboard (``FleetDashboard`` lays out the rest)."""
        self.dashboard = dashboard
        catalog = self._catalog
        started, frame = catalog.response_started, catalog.first_audio_frame
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="TTS reach (fleet)",
                left=[self.reach],
                left_y_axis=cloudwatch.YAxisProps(min=0, max=1.1),
                left_annotations=[cloudwatch.HorizontalAnnotation(value=self.tts_threshold, label="alarm")],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Responses vs first audio frames", left=[self.responses, self.first_frames], width=12
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="VAD slower than realtime: warnings/min and max delay (s)",
                left=[self.vad_warnings],
                right=[self.vad_max_delay],
                width=24,
            ),
        )
        per_worker_reach = "\n| ".join(
            [
                f"filter {started.insights_filter().removeprefix('filter ')} "
                f"or {frame.insights_filter().removeprefix('filter ')}",
                f'stats sum(strcontains({started.field}, "{started.text}")) as responses, '
                f'sum(strcontains({frame.field}, "{frame.text}")) as first_frames by @logStream',
                "sort responses desc",
            ]
        )
        self.dashboard.add_widgets(
            cloudwatch.LogQueryWidget(
                title="TTS reach per worker (log stream = ECS task)",
                log_group_names=[agent_log_group],
                query_string=per_worker_reach,
                width=12,
                height=8,
            ),
            cloudwatch.LogQueryWidget(
                title="Slow VAD inference per worker",
                log_group_names=[agent_log_group],
                query_string=catalog.slow_vad.insights_query(
                    f"stats count(*) as warnings, max({catalog.slow_vad.value_field}) as max_delay "
                    "by @logStream",
                    "sort warnings desc",
                ),
                width=12,
                height=8,
            ),
        )
