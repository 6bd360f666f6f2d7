"""One home for every setting: what cdk.json accepts is what each function accepts at cold start,
cross-field rules fail synth naming the field, and a signal override reaches every consumer."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from fleet_remediation.contract.settings import DrainerSettings, TtsReachSettings
from fleet_remediation.contract.signals import SignalCatalog
from livekit_fleet_remediation.config import ConfigError
from tests.example_environments import example_context
from tests.infra.conftest import Synthesized
from tts_reach_alarm.analysis import job_outcomes_query
from worker_drainer.adapters.worker_logs import stats_query


def _with(section: str, **values: Any) -> dict[str, Any]:
    context = copy.deepcopy(example_context())
    target = context["environments"]["staging"].setdefault(section, {})
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            target[key] = {**target[key], **value}
        else:
            target[key] = value
    return context


@pytest.mark.parametrize(
    ("section", "values", "message"),
    [
        # The runtime's own bound: a value synth allowed beyond it would fail every cold start.
        (
            "drainer",
            {"timeout_seconds": 900, "insights_timeout_seconds": 200},
            r"environments\.staging\.drainer\.insights_timeout_seconds: Input should be less than or equal "
            r"to 120",
        ),
        (
            "drainer",
            {"timeout_seconds": 220, "policy": {"lease_seconds": 10}},
            r"environments\.staging\.drainer: Value error, policy\.lease_seconds \(10\) must be at least "
            r"timeout_seconds \(220\)",
        ),
        # A per-task look must decide when Insights takes the service profile's p99.
        (
            "drainer",
            {"insights_timeout_seconds": 15},
            r"drainer\.insights_timeout_seconds \(15\) is shorter than a per-task look needs \(22\.00 s\) "
            r"when its Logs Insights query takes the service profile's p99 \(aws-2026-12 v1: 11\.00 s",
        ),
        (
            "drainer",
            {"policy": {"min_healthy_tasks": 0, "max_draining_fraction": 1.0}},
            r"environments\.staging\.drainer\.policy: Value error, min_healthy_tasks 0 with "
            r"max_draining_fraction 1\.0",
        ),
        (
            "reaper",
            {"timeout_seconds": 20, "livekit_request_timeout_seconds": 10},
            r"environments\.staging\.reaper: Value error, a run needs up to 113 s .* timeout_seconds is 20",
        ),
        (
            "tts_reach",
            {"timeout_seconds": 30, "query_timeout_seconds": 17},
            r"environments\.staging\.tts_reach: Value error, a run needs up to 114 s "
            r".* timeout_seconds is 30",
        ),
    ],
)
def test_a_value_the_runtime_would_reject_fails_synth_naming_the_field(
    synth: Callable[..., Synthesized], section: str, values: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        synth("staging", _with(section, **values))


def test_a_signal_override_reaches_the_alarm_the_responder_and_the_drainer(
    synth: Callable[..., Synthesized], cold_start: Callable[..., Any]
) -> None:
    override = {"field": "msg", "text": "vad lagging behind", "match": "contains", "value_field": "lag"}
    context = _with("detection", signals={"slow_vad": override})
    synthesized = synth("staging", context)
    template = synthesized.template.to_json()

    filters = [
        r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::Logs::MetricFilter"
    ]
    vad_patterns = [
        f["FilterPattern"]
        for f in filters
        if f["MetricTransformations"][0]["MetricName"].startswith("SlowVad")
    ]
    assert vad_patterns
    assert all('$.msg = "*vad lagging behind*"' in pattern for pattern in vad_patterns)

    functions = {
        r["Properties"]["FunctionName"]: r
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    }
    drainer = cold_start(
        DrainerSettings,
        functions["lkfr-staging-agents-worker-drainer"],
        NOTIFICATION_TOPIC_ARN="arn:aws:sns:ap-northeast-2:111111111111:t",
        LEDGER_TABLE_NAME="ledger",
        SCAN_BUDGET_TABLE_NAME="scan-tally",
    )
    drainer_query = stats_query(SignalCatalog.from_settings(drainer.signals).slow_vad)
    assert 'filter msg like "vad lagging behind"' in drainer_query
    assert "max(lag)" in drainer_query

    responder = cold_start(
        TtsReachSettings,
        functions["lkfr-staging-agents-tts-reach-alarm"],
        AWS_REGION="ap-northeast-2",
        NOTIFICATION_TOPIC_ARN="arn:aws:sns:ap-northeast-2:111111111111:t",
        IDEMPOTENCY_TABLE_NAME="idempotency",
        SCAN_BUDGET_TABLE_NAME="scan-tally",
    )
    assert responder.detection.signals.slow_vad.text == "vad lagging behind"
    tts_override = {"field": "event", "text": "reply_began"}
    context = _with("detection", signals={"response_started": tts_override})
    functions = {
        r["Properties"]["FunctionName"]: r
        for r in synth("staging", context).template.to_json()["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    }
    responder = cold_start(
        TtsReachSettings,
        functions["lkfr-staging-agents-tts-reach-alarm"],
        AWS_REGION="ap-northeast-2",
        NOTIFICATION_TOPIC_ARN="arn:aws:sns:ap-northeast-2:111111111111:t",
        IDEMPOTENCY_TABLE_NAME="idempotency",
        SCAN_BUDGET_TABLE_NAME="scan-tally",
    )
    assert 'event = "reply_began"' in job_outcomes_query(responder.detection.catalog())


def test_each_function_reads_back_exactly_what_synth_deployed(
    staging: Synthesized, cold_start: Callable[..., Any]
) -> None:
    from fleet_remediation.contract.settings import ReaperSettings

    functions = {
        r["Properties"]["FunctionName"]: r
        for r in staging.template.to_json()["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    }
    deployed = {
        "lkfr-staging-zombie-reaper": (ReaperSettings, staging.stack.remediation.zombie_reaper.settings),
        "lkfr-staging-agents-worker-drainer": (
            DrainerSettings,
            staging.stack.remediation.services["agents"].worker_drainer.settings,
        ),
        "lkfr-staging-agents-tts-reach-alarm": (
            TtsReachSettings,
            staging.stack.remediation.services["agents"].tts_reach.settings,
        ),
    }
    for name, (model, at_synth) in deployed.items():
        tokens = {
            key: value
            for key, value in at_synth.to_lambda_environment().items()
            if not isinstance(functions[name]["Properties"]["Environment"]["Variables"][key], str)
        }
        read = cold_start(
            model, functions[name], **tokens, AWS_REGION=str(at_synth.model_dump().get("aws_region"))
        )
        assert read == at_synth, name


def test_an_environment_lists_its_agent_services_and_a_0_1_layout_says_where_they_moved() -> None:
    from livekit_fleet_remediation.config import load_environment

    context = example_context()
    assert [s.name for s in load_environment(context, "staging").agent_services] == ["agents"]
    old = copy.deepcopy(context)
    service = old["environments"]["staging"].pop("agent_services")[0]
    old["environments"]["staging"].update({k: v for k, v in service.items() if k != "name"})
    with pytest.raises(ConfigError, match=r"moved under agent_services in 0\.2"):
        load_environment(old, "staging")
    two = copy.deepcopy(context)
    two["environments"]["staging"]["agent_services"].append({**service, "name": "outbound"})
    assert [s.name for s in load_environment(two, "staging").agent_services] == ["agents", "outbound"]
    two["environments"]["staging"]["agent_services"][1]["name"] = "agents"
    with pytest.raises(ConfigError, match="agent service names must differ: agents used more than once"):
        load_environment(two, "staging")
