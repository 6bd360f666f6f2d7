"""Template assertions for detection (metric filters, alarms, rules, dashboard) and the TTS-reach
responder, all derived from the environment's ``detection`` section."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import assertions
from aws_cdk import aws_cloudwatch as cloudwatch

from fleet_remediation.contract.agent_services import AgentService
from fleet_remediation.contract.detection import DetectionConfig
from fleet_remediation.contract.naming import RunbookLinks
from fleet_remediation.contract.settings import TtsReachSettings
from fleet_remediation.contract.signals import SignalCatalog
from livekit_fleet_remediation.config import ConfigError
from livekit_fleet_remediation.constructs.detection import Detection
from livekit_fleet_remediation.constructs.scan_budget import ScanBudgetTally
from tests.example_environments import example_context
from tests.infra.conftest import Synthesized

Match = assertions.Match


def resources(synthesized: Synthesized, kind: str) -> dict[str, dict]:
    return synthesized.template.find_resources(kind)


def test_metric_filters_come_from_the_signal_definitions_without_dimensions(staging: Synthesized) -> None:
    filters = [r["Properties"] for r in resources(staging, "AWS::Logs::MetricFilter").values()]
    catalog = SignalCatalog.default()
    expected_patterns = {signal.metric_filter_pattern() for signal in catalog}
    expected_patterns.add(str(catalog.slow_vad.value_filter_pattern()))
    # The agent package's summary line feeds the same metrics, summing its fields.
    summed = {
        str(s.summary_filter_pattern()): str(s.summary_metric_value()) for s in catalog if s.summary_field
    }
    assert len(summed) == 3
    assert {f["FilterPattern"] for f in filters} == expected_patterns | summed.keys()
    for properties in filters:
        if properties["FilterPattern"] in summed:
            assert (
                properties["MetricTransformations"][0]["MetricValue"] == summed[properties["FilterPattern"]]
            )
    for properties in filters:
        assert properties["LogGroupName"] == "/ppi/livekit/staging/agent"
        (transformation,) = properties["MetricTransformations"]
        assert transformation["MetricNamespace"] == "LiveKitAgents/staging/agents"
        # Metric cost must not grow with traffic: no per-job/room/worker dimensions.
        assert "Dimensions" not in transformation
    delay = next(
        f for f in filters if f["MetricTransformations"][0]["MetricName"] == "SlowVadInferencesDelay"
    )
    assert delay["MetricTransformations"][0]["MetricValue"] == "$.delay"


STAGING_TTS_EXPRESSION = (
    "IF(FILL(timeouts, 0) >= (2 + 0.001 * FILL(responses, 0) + 4.5 * ((0.001 * FILL(responses, 0)) ^ 0.5)) "
    "OR (FILL(responses, 0) >= 20 AND (FILL(responses, 0) - FILL(frames, 0)) >= "
    "(0.03 * FILL(responses, 0) + 1 * (FILL(responses, 0) ^ 0.5))), 1, 0)"
)


def tts_alarm(synthesized: Synthesized, env_name: str = "staging", window_minutes: int = 5) -> dict:
    """One of the TTS page's metric alarms (its fast window by default)."""
    return next(
        r["Properties"]
        for r in resources(synthesized, "AWS::CloudWatch::Alarm").values()
        if r["Properties"]["AlarmName"] == f"livekit-{env_name}-agents-tts-reach-{window_minutes}min"
    )


def tts_page(synthesized: Synthesized, env_name: str = "staging") -> dict:
    """The composite alarm that pages and that the responder handles."""
    return next(
        r["Properties"]
        for r in resources(synthesized, "AWS::CloudWatch::CompositeAlarm").values()
        if r["Properties"]["AlarmName"] == f"livekit-{env_name}-agents-tts-reach"
    )


def window_metric(metric_id: str, metric_name: str, period: int) -> object:
    return Match.object_like(
        {
            "Id": metric_id,
            "MetricStat": {
                "Metric": {"MetricName": metric_name, "Namespace": "LiveKitAgents/staging/agents"},
                "Period": period,
                "Stat": "Sum",
            },
            "ReturnData": False,
        }
    )


def test_tts_reach_alarm_is_windowed_metric_math_over_the_three_tts_metrics(staging: Synthesized) -> None:
    """Replaces the per-minute reach assertion (threshold 0.97, >= 10 responses, 3 of 5): the alarm
    is now a 0/1 breach expression over 5-minute sums, ALARM while the window breaches."""
    staging.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "AlarmName": "livekit-staging-agents-tts-reach-5min",
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "Threshold": 1,
            "EvaluationPeriods": 1,
            "DatapointsToAlarm": 1,
            "TreatMissingData": "notBreaching",
            "Metrics": Match.array_with(
                [
                    Match.object_like({"Expression": STAGING_TTS_EXPRESSION, "ReturnData": True}),
                    window_metric("responses", "AgentResponsesStarted", 300),
                    window_metric("frames", "TtsFirstAudioFrames", 300),
                    window_metric("timeouts", "TtsFirstAudioTimeouts", 300),
                ]
            ),
        },
    )
    # The windows page only through the composite: the page does not depend on the responder,
    # CloudWatch itself notifies its ALARM and OK.
    for window in (5, 30):
        assert "AlarmActions" not in tts_alarm(staging, window_minutes=window)
    page = tts_page(staging)
    assert page["AlarmActions"] == page["OKActions"]
    (action,) = [a["Ref"] for a in page["AlarmActions"]]
    assert action.startswith("NotificationsTopic")


def test_the_tts_page_holds_through_its_30_minute_window(staging: Synthesized) -> None:
    """One incident, one page: ANY of the 5-minute window (fast) and the same rule over 30 minutes
    (holds the incident between the bursts of a silent worker's sessions)."""
    hold = tts_alarm(staging, window_minutes=30)
    assert {m["MetricStat"]["Period"] for m in hold["Metrics"] if "MetricStat" in m} == {1800}
    assert (hold["EvaluationPeriods"], hold["DatapointsToAlarm"]) == (1, 1)
    rule = tts_page(staging)["AlarmRule"]
    rendered = json.dumps(rule)
    assert "TtsReach5minAlarm" in rendered
    assert "TtsReach30minAlarm" in rendered
    assert " OR " in rendered


def test_alarm_expressions_are_the_ones_the_offline_evaluators_replay(staging: Synthesized) -> None:
    detection = DetectionConfig.model_validate(example_context()["environments"]["staging"]["detection"])
    expressions = {
        alarm["AlarmName"]: next(m["Expression"] for m in alarm["Metrics"] if "Expression" in m)
        for alarm in (r["Properties"] for r in resources(staging, "AWS::CloudWatch::Alarm").values())
        if "Metrics" in alarm
    }
    for window in detection.tts_reach_alarm.alarm().children:
        name = f"livekit-staging-agents-tts-reach-{window.period_minutes}min"
        assert expressions[name] == window.expression.render()
    for part in detection.vad_alarm.alarm().children:
        name = f"livekit-staging-agents-vad-slow-inference-{part.label}"
        assert expressions[name] == part.expression.render()


def test_tts_alarm_follows_a_changed_configuration(synth: Callable[..., Synthesized]) -> None:
    context = copy.deepcopy(example_context())
    context["environments"]["staging"]["detection"]["tts_reach_alarm"].update(
        {"window_minutes": 3, "min_timeouts": 5, "reach_min_responses": 50}
    )
    alarm = tts_alarm(synth("staging", context), window_minutes=3)
    assert (alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (1, 1)
    expression = next(m["Expression"] for m in alarm["Metrics"] if "Expression" in m)
    assert expression.startswith("IF(FILL(timeouts, 0) >= (5 + 0.001 * FILL(responses, 0)")
    assert "FILL(responses, 0) >= 50 AND" in expression
    assert {m["MetricStat"]["Period"] for m in alarm["Metrics"] if "MetricStat" in m} == {180}


def test_vad_page_is_any_of_3_of_5_and_6_of_30_breaching_minutes(staging: Synthesized) -> None:
    """A breaching minute combines rate and delay; 3 of 5 pages, 6 of 30 holds the incident (one-minute
    periods: a sliding count of breaching minutes, exact in CloudWatch)."""
    for evaluation, datapoints in ((5, 3), (30, 6)):
        staging.template.has_resource_properties(
            "AWS::CloudWatch::Alarm",
            {
                "AlarmName": f"livekit-staging-agents-vad-slow-inference-{datapoints}of{evaluation}min",
                "ComparisonOperator": "GreaterThanOrEqualToThreshold",
                "Threshold": 1,
                "EvaluationPeriods": evaluation,
                "DatapointsToAlarm": datapoints,
                "TreatMissingData": "notBreaching",
                "Metrics": Match.array_with(
                    [
                        Match.object_like(
                            {"Expression": "IF(FILL(warnings, 0) >= 3 AND FILL(maxdelay, 0) >= 2, 1, 0)"}
                        )
                    ]
                ),
            },
        )
    page = next(
        r["Properties"]
        for r in resources(staging, "AWS::CloudWatch::CompositeAlarm").values()
        if r["Properties"]["AlarmName"] == "livekit-staging-agents-vad-slow-inference"
    )
    assert page["AlarmActions"] == page["OKActions"]
    assert "Vad3of5minAlarm" in json.dumps(page["AlarmRule"])
    assert "Vad6of30minAlarm" in json.dumps(page["AlarmRule"])


def test_alarm_state_changes_route_to_the_responder_with_retries_and_dlq(staging: Synthesized) -> None:
    staging.template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": {
                "source": ["aws.cloudwatch"],
                "detail-type": ["CloudWatch Alarm State Change"],
                "detail": {"state": {"value": ["ALARM", "OK"]}},
                "resources": [{"Fn::GetAtt": [Match.string_like_regexp("TtsReachPage"), "Arn"]}],
            },
            "Targets": [
                Match.object_like(
                    {
                        "Arn": {"Fn::GetAtt": [Match.string_like_regexp("TtsReachResponderFunction"), "Arn"]},
                        "RetryPolicy": {"MaximumRetryAttempts": 4, "MaximumEventAgeInSeconds": 3600},
                        "DeadLetterConfig": {
                            "Arn": {
                                "Fn::GetAtt": [
                                    Match.string_like_regexp("TtsReachResponderDeadLetters"),
                                    "Arn",
                                ]
                            }
                        },
                    }
                )
            ],
        },
    )


def test_responder_function_environment_and_permissions(
    staging: Synthesized, cold_start: Callable[..., Any]
) -> None:
    functions = resources(staging, "AWS::Lambda::Function")
    responder = next(
        f["Properties"]
        for f in functions.values()
        if f["Properties"].get("FunctionName") == "lkfr-staging-agents-tts-reach-alarm"
    )
    variables = responder["Environment"]["Variables"]
    assert responder["Handler"] == "tts_reach_alarm.handler.lambda_handler"
    # The alarm's name is derived from the environment by the one naming module on both sides.
    settings = cold_start(
        TtsReachSettings,
        {"Properties": responder},
        AWS_REGION="ap-northeast-2",
        NOTIFICATION_TOPIC_ARN="arn:aws:sns:ap-northeast-2:111111111111:t",
        IDEMPOTENCY_TABLE_NAME="idempotency",
        SCAN_BUDGET_TABLE_NAME="scan-tally",
    )
    assert settings.alarm_name == "livekit-staging-agents-tts-reach"
    staging.template.has_resource_properties(
        "AWS::CloudWatch::CompositeAlarm", {"AlarmName": settings.alarm_name}
    )
    assert variables["AGENT_LOG_GROUP"] == "/ppi/livekit/staging/agent"
    tts_settings = json.loads(variables["DETECTION"])["tts_reach_alarm"]
    assert (tts_settings["window_minutes"], tts_settings["expected_timeout_rate"]) == (5, 0.001)
    assert "IDEMPOTENCY_TABLE_NAME" in variables
    staging.template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "TimeToLiveSpecification": {"AttributeName": "expiration", "Enabled": True},
        },
    )
    statements = [
        statement
        for policy in resources(staging, "AWS::IAM::Policy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    start_query = next(s for s in statements if s["Action"] == "logs:StartQuery")
    assert "/ppi/livekit/staging/agent" in json.dumps(start_query["Resource"])
    assert any(s["Action"] == "events:PutEvents" for s in statements)
    # Each tick reads one alarm's state, that alarm only: the drainer's the VAD alarm, the
    # responder's re-check the TTS page (the composite).
    described = sorted(
        json.dumps(s["Resource"]) for s in statements if s["Action"] == "cloudwatch:DescribeAlarms"
    )
    assert len(described) == 2
    assert "TtsReachPage" in described[0]
    assert "VadPage" in described[1]
    staging.template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "ScheduleExpression": "rate(2 minutes)",
            "Targets": [
                Match.object_like(
                    {
                        "Arn": {"Fn::GetAtt": [Match.string_like_regexp("TtsReachResponderFunction"), "Arn"]},
                        "RetryPolicy": {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 120},
                    }
                )
            ],
        },
    )


def test_dashboard_shows_reach_vad_remediation_and_per_worker_views(staging: Synthesized) -> None:
    (dashboard,) = resources(staging, "AWS::CloudWatch::Dashboard").values()
    assert dashboard["Properties"]["DashboardName"] == "livekit-staging-fleet"
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for text in ("TTS reach", "SlowVadInferencesDelay", "RoomsReaped", "TtsReachSuspectWorkers"):
        assert text in body
    # The per-worker views are saved queries on the agent log group, named on the dashboard.
    saved = resources(staging, "AWS::Logs::QueryDefinition").values()
    assert len(saved) == 4
    for query in saved:
        assert "@logStream" in query["Properties"]["QueryString"]
        assert query["Properties"]["LogGroupNames"] == ["/ppi/livekit/staging/agent"]
        assert query["Properties"]["Name"] in body


def test_the_dashboards_only_logs_insights_widget_reads_the_functions_logs(staging: Synthesized) -> None:
    """A load scans no agent logs: every Logs Insights widget left reads the functions' own logs."""
    (dashboard,) = resources(staging, "AWS::CloudWatch::Dashboard").values()
    parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"][1]
    body = json.loads("".join(p if isinstance(p, str) else "TOKEN" for p in parts))
    queries = [w["properties"]["query"] for w in body["widgets"] if w["type"] == "log"]
    assert len(queries) == 1
    assert "/aws/lambda/" in queries[0]
    assert "/ppi/livekit/staging/agent" not in queries[0]


@pytest.mark.parametrize(
    "tts_settings",
    [
        {"datapoints_to_alarm": 9},  # a key of the old alarm: unknown now
        {"window_minutes": 45},  # the responder's 30 minutes cannot cover the alarm's 45
    ],
)
def test_invalid_detection_settings_fail_at_synth_naming_the_field(
    synth: Callable[..., Synthesized], tts_settings: dict[str, int]
) -> None:
    context = copy.deepcopy(example_context())
    context["environments"]["staging"]["detection"] = {"tts_reach_alarm": tts_settings}
    with pytest.raises(ConfigError, match=r"environments\.staging\.detection\.tts_reach_alarm"):
        synth("staging", context)


@pytest.mark.parametrize(
    ("links", "vad", "tts"),
    [
        ("site", "runbooks/vad-slow-inference.html", "runbooks/tts-reach.html"),
        ("repository", "docs/runbooks/vad-slow-inference.md", "docs/runbooks/tts-reach.md"),
    ],
)
def test_the_pages_descriptions_link_the_runbooks_as_runbook_links_says(
    links: RunbookLinks, vad: str, tts: str
) -> None:
    base = "https://docs.example.com/voice/fleet-remediation"
    stack = cdk.Stack(cdk.App(), "Pages")
    detection = Detection(
        stack,
        "Detection",
        env_name="staging",
        service=AgentService(ecs_cluster="agents", ecs_service="agents", agent_log_group="/agents"),
        detection=DetectionConfig(),
        scan_tally=ScanBudgetTally(stack, "ScanBudget"),
        runbooks=(base, links),
    )

    def description(page: cloudwatch.CompositeAlarm) -> str:
        cfn = page.node.default_child
        assert isinstance(cfn, cloudwatch.CfnCompositeAlarm)
        return str(stack.resolve(cfn.alarm_description))

    assert description(detection.vad_alarm).endswith(f" Runbook: {base}/{vad}")
    assert description(detection.tts_reach_alarm).endswith(f" Runbook: {base}/{tts}")
