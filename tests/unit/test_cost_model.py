"""The cost model against the stack it prices: every resource type of the synthesized template is
priced or named free, and the functions' metric series are exactly what the dashboard and the
alarms read. The responder's re-check back-off, which bounds an incident's Logs Insights spend."""

from __future__ import annotations

import tempfile
from typing import Any

import pytest

from bench._cost_stack import (
    EXAMPLE_ENVIRONMENT,
    count_stack,
    emf_series,
    example_context,
    synthesized_template,
    unpriced_types,
)
from fleet_remediation.contract import metrics as metric_definitions
from fleet_remediation.contract.naming import METRICS_NAMESPACE
from fleet_remediation.contract.sections import TtsReachSection
from livekit_fleet_remediation.config import load_environment
from tts_reach_alarm.investigation import recheck_due


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as outdir:
        return synthesized_template(outdir)


def test_every_resource_type_in_the_template_is_priced_or_named_free(template: dict[str, Any]) -> None:
    types = {r["Type"] for r in template["Resources"].values()}
    assert unpriced_types(types) == []
    assert unpriced_types([*types, "AWS::RDS::DBInstance"]) == ["AWS::RDS::DBInstance"]


def _read_metric_names(template: dict[str, Any]) -> set[str]:
    """The functions' metrics an alarm or the dashboard names (``"."`` repeats the row above)."""
    names = set()
    for resource in template["Resources"].values():
        properties = resource.get("Properties", {})
        if properties.get("Namespace") == METRICS_NAMESPACE:
            names.add(properties["MetricName"])
        if resource["Type"] == "AWS::CloudWatch::Dashboard":
            body = "".join(p for p in properties["DashboardBody"]["Fn::Join"][1] if isinstance(p, str))
            for definition in metric_definitions.definitions():
                if f'"{definition.name}"' in body:
                    names.add(definition.name)
    return names


def test_the_functions_metric_series_are_what_the_alarms_and_the_dashboard_read(
    template: dict[str, Any],
) -> None:
    series = {d.name for d in metric_definitions.definitions() if d.series}
    assert series == _read_metric_names(template)
    dense, sparse = emf_series()
    # Only InvocationFailed (one per function, alarmed) is published every invocation.
    assert (dense, dense + sparse) == (3, 21)


def test_the_template_counts_read_schedules_and_the_dashboard(template: dict[str, Any]) -> None:
    config = load_environment(example_context(), EXAMPLE_ENVIRONMENT)
    counts = count_stack(template, config.region, config.agent_service.agent_log_group)
    per_month = {f.name.split("-", 2)[2]: f.scheduled_per_month for f in counts.functions.values()}
    # The example environment's one agent service, "agents", has its own responder and drainer.
    assert per_month == {
        "zombie-reaper": 8760.0,
        "agents-tts-reach-alarm": 21900.0,
        "agents-worker-drainer": 43800.0,
    }
    assert counts.dashboards == 1
    assert counts.dashboard_minutes == 180
    assert any(w.agent_logs for w in counts.log_widgets)
    assert any(not w.agent_logs for w in counts.log_widgets)


def test_rechecks_back_off_while_the_page_stays_in_alarm() -> None:
    ticks = range(2, 6 * 60 + 1, 2)
    looks = [m for m in ticks if recheck_due(m, 2, 32)]
    assert looks[:7] == [2, 4, 8, 16, 32, 64, 96]
    assert len(looks) == 15  # six hours, against 30 looks in the first hour without back-off
    assert [m for m in ticks if recheck_due(m, 2, 2)] == list(ticks)


def test_the_back_off_cannot_be_shorter_than_the_recheck() -> None:
    with pytest.raises(ValueError, match="recheck_max_minutes"):
        TtsReachSection(recheck_minutes=4, recheck_max_minutes=2)
    assert TtsReachSection(recheck_minutes=0, recheck_max_minutes=0).recheck_max_minutes == 0
