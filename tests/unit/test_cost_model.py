"""The cost model against the stack it prices: every resource type of the synthesized template is
priced or named free, and the functions' metric series are exactly what the dashboard and the
alarms read. The responder's re-check back-off, which bounds an incident's Logs Insights spend.
``lkfr cost`` over that template: every line the bill has, the dashboard's use as an input."""

from __future__ import annotations

import json
import tempfile
from typing import Any

import pytest

from bench._cost_scans import baseline_scenario, replay_usage
from bench.cost import BASELINE_MINUTES, EXAMPLE_ENVIRONMENT, example_context
from fleet_remediation.contract import metrics as metric_definitions
from fleet_remediation.contract.naming import METRICS_NAMESPACE
from fleet_remediation.contract.sections import TtsReachSection
from livekit_fleet_remediation.cli import cost as cost_command
from livekit_fleet_remediation.config import load_environment
from livekit_fleet_remediation.cost.estimate import emf_series
from livekit_fleet_remediation.cost.prices import US_EAST_1, price_file_document
from livekit_fleet_remediation.cost.stack import count_stack, synthesized_template, unpriced_types
from livekit_fleet_remediation.cost.usage import shipped_profile
from tests.example_environments import EXAMPLE_CONFIG
from tts_reach_alarm.investigation import recheck_due


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as outdir:
        return synthesized_template(EXAMPLE_ENVIRONMENT, example_context(), outdir)


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
    counts = count_stack(template, config.region, [config.agent_service.agent_log_group])
    per_month = {f.name.split("-", 2)[2]: f.scheduled_per_month for f in counts.functions.values()}
    # The example environment's one agent service, "agents", has its own responder and drainer; the
    # chat entry point runs only when someone presses a button.
    assert per_month == {
        "zombie-reaper": 8760.0,
        "agents-tts-reach-alarm": 21900.0,
        "agents-worker-drainer": 43800.0,
        "chat": 0.0,
    }
    assert counts.dashboards == 1
    assert counts.dashboard_minutes == 180
    # The dashboard's one Logs Insights widget reads the functions' reports, not the agents' logs.
    assert [w.agent_logs for w in counts.log_widgets] == [False]
    assert (counts.keys, counts.rotating_keys) == (1, 1)
    assert all(f.traced for f in counts.functions.values())


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


def test_the_shipped_usage_profile_is_the_replays_healthy_hour() -> None:
    """lkfr cost prices the profile the package ships: it is what the functions' own code does in a
    healthy hour now (``python -m bench.cost --write-profile`` writes it again after a change)."""
    config = load_environment(example_context(), EXAMPLE_ENVIRONMENT)
    usage, volume = replay_usage(baseline_scenario(BASELINE_MINUTES), EXAMPLE_ENVIRONMENT, config)
    shipped = shipped_profile()
    assert usage.to_json() == shipped.baseline.to_json()
    assert round(volume.signal_bytes_per_response, 1) == shipped.signal_bytes_per_response
    assert round(volume.stock_bytes_per_response, 1) == shipped.stock_bytes_per_response


def _lkfr_cost(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    """``lkfr cost`` on the example environments, over the template this module synthesized (the
    command's own synthesis of the same environment takes a minute)."""
    monkeypatch.setattr(cost_command, "_template", lambda env, context: template)
    code = cost_command.main(["--config", str(EXAMPLE_CONFIG), "--env", EXAMPLE_ENVIRONMENT, *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_lkfr_cost_bills_everything_the_product_causes(
    template: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Any,
) -> None:
    prices = tmp_path / "ap-northeast-2.json"
    # A price file for the stack's own region (figures copied from us-east-1: a test, not a price).
    prices.write_text(json.dumps({**price_file_document(US_EAST_1), "region": "ap-northeast-2"}))
    code, out, err = _lkfr_cost(
        template,
        monkeypatch,
        capsys,
        "--tasks",
        "50",
        "--responses-per-minute",
        "2000",
        "--prices",
        str(prices),
        "--json",
    )
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert document["prices"]["region"] == "ap-northeast-2"
    parts = document["components"]
    for line in ("agent_signal_lines", "xray", "kms_keys", "secret_reads", "insights_dashboard", "lambda"):
        assert parts[line] > 0, line
    assert parts["drills"] == 0
    assert document["kms_keys_by_year"] == {"1": 1.0, "2": 2.0, "3": 3.0}
    assert document["with_incident"]["monthly_usd"] >= document["monthly_usd"]
    assert document["dashboard_loads_per_day"] == 24


def test_the_dashboards_use_is_an_input(
    template: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    load = ("--tasks", "50", "--responses-per-minute", "2000", "--price-region", "us-east-1", "--json")
    _, daily, _ = _lkfr_cost(template, monkeypatch, capsys, *load, "--dashboard-loads-per-day", "24")
    _, open_all_day, _ = _lkfr_cost(
        template, monkeypatch, capsys, *load, "--dashboard-hours-open", "8", "--refresh-minutes", "1"
    )
    one, many = json.loads(daily), json.loads(open_all_day)
    assert many["dashboard_loads_per_day"] == 480
    assert many["components"]["insights_dashboard"] == pytest.approx(
        one["components"]["insights_dashboard"] * 20,
        rel=0.05,  # each rounded to 0.1 cent
    )


def test_a_region_without_prices_is_refused_before_anything_is_synthesized(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def never(env: str, context: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("synthesized")

    monkeypatch.setattr(cost_command, "_template", never)
    code = cost_command.main(
        [
            "--config",
            str(EXAMPLE_CONFIG),
            "--env",
            EXAMPLE_ENVIRONMENT,
            "--tasks",
            "5",
            "--responses-per-minute",
            "1",
        ]
    )
    _, err = capsys.readouterr()
    assert code == 1
    assert err.startswith("cost failed: UnpricedRegion: no price table for ap-northeast-2")
    assert err.count("\n") == 1


def test_a_price_file_missing_a_price_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    document = {**price_file_document(US_EAST_1), "region": "ap-northeast-2"}
    del document["prices"]["xray_trace_recorded"]
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(document))
    code = cost_command.main(
        [
            "--config",
            str(EXAMPLE_CONFIG),
            "--env",
            EXAMPLE_ENVIRONMENT,
            "--tasks",
            "5",
            "--responses-per-minute",
            "1",
            "--prices",
            str(prices),
        ]
    )
    _, err = capsys.readouterr()
    assert code == 1
    assert "BadPriceFile" in err
    assert "xray_trace_recorded" in err
