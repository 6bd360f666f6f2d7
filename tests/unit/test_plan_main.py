"""``lkfr plan``'s ``main`` with the plan itself stood in: the region it runs in, the notifier and
the ledger table it hands the plan, and what it prints on stdout and stderr for each way a plan
ends. The plan against livekit-server and moto: tests/integration/test_plan_cli.py."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fleet_remediation.core.errors import ConfigurationError
from livekit_fleet_remediation.cli import plan
from livekit_fleet_remediation.config import EnvironmentConfig, load_config_file

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "examples" / "standalone" / "environments.json"
PROD = ["--env", "prod", "--config", str(CONFIG)]
SUBJECT, TEXT = "[prod] the reaper would delete 1 room", "would delete room-1"


# A dry-run report as the reaper's handler returns one (the fields the renderer reads).
REPORT: dict[str, Any] = {
    "function": "zombie_reaper",
    "environment": "prod",
    "mode": "dry-run",
    "status": "ok",
    "candidates": [],
    "actions": [],
    "errors": [],
    "summary": {"rooms": 2},
}


@dataclass
class PlanStandIn:
    """Stands in for ``plan_reaper`` or ``plan_drainer`` (the handler against LiveKit and AWS):
    records what ``main`` hands it and the region boto3 would use, publishes one notification
    through the notifier it was given, then answers ``answer`` or raises ``error``."""

    answer: dict[str, Any] = field(default_factory=lambda: REPORT)
    error: Exception | None = None
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    regions: list[str | None] = field(default_factory=list)

    def __call__(self, env: str, config: EnvironmentConfig, notifier: Any, *rest: Any) -> dict[str, Any]:
        self.calls.append((env, config, *rest))
        self.regions.append(os.environ.get("AWS_DEFAULT_REGION"))
        if self.error is not None:
            raise self.error
        notifier.publish(SUBJECT, TEXT)
        return self.answer


def stand_in_for(function: str, monkeypatch: pytest.MonkeyPatch) -> PlanStandIn:
    """Stands in ``function``'s plan; the other function's plan fails the run if ``main`` calls it."""
    planned = PlanStandIn()
    for name in ("reaper", "drainer"):
        wrong = PlanStandIn(error=AssertionError(f"the {name} was planned"))
        monkeypatch.setattr(plan, f"plan_{name}", planned if name == function else wrong)
    # main sets boto3's default region: the test's own is put back after it.
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    return planned


@pytest.fixture
def reaper(monkeypatch: pytest.MonkeyPatch) -> PlanStandIn:
    return stand_in_for("reaper", monkeypatch)


@pytest.fixture
def drainer(monkeypatch: pytest.MonkeyPatch) -> PlanStandIn:
    return stand_in_for("drainer", monkeypatch)


def test_the_reaper_plan_runs_in_the_region_given_and_shows_what_it_would_publish(
    reaper: PlanStandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    assert plan.main(["reaper", *PROD, "--region", "eu-central-1"]) == 0
    assert reaper.calls == [("prod", load_config_file(CONFIG, "prod"))]
    assert reaper.regions == ["eu-central-1"]
    printed = capsys.readouterr()
    assert printed.out.splitlines()[-3:] == ["notification it would send:", f"Subject: {SUBJECT}", TEXT]
    assert printed.err == ""


@pytest.mark.parametrize("ledger", [["--ledger-table", "lkfr-prod-agents-ledger"], []], ids=["given", "read"])
def test_the_drainer_plan_gets_the_ledger_table_given_else_none_and_shows_what_it_would_publish(
    ledger: list[str], drainer: PlanStandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    assert plan.main(["drainer", *PROD, *ledger]) == 0
    # None: the plan reads the deployed drainer's own.
    table = ledger[1] if ledger else None
    assert drainer.calls == [("prod", load_config_file(CONFIG, "prod"), table)]
    # Without --region, a default region already set stays.
    assert drainer.regions == ["us-west-2"]
    assert capsys.readouterr().out.splitlines()[-3:] == [
        "notification it would send:",
        f"Subject: {SUBJECT}",
        TEXT,
    ]


def test_json_prints_the_raw_report_indented_by_two(
    reaper: PlanStandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    assert plan.main(["reaper", *PROD, "--json"]) == 0
    assert capsys.readouterr().out == json.dumps(REPORT, indent=2) + "\n"


def test_an_environment_the_file_lacks_prints_the_usage_and_the_error_on_stderr_only(
    reaper: PlanStandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    assert plan.main(["reaper", "--env", "qa", "--config", str(CONFIG)]) == 2
    assert reaper.calls == []
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err == (
        plan.parser().format_usage()
        + f"lkfr plan: error: {CONFIG}: environment 'qa' is not there (have: prod, staging)\n"
    )


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (
            ConfigurationError("environments.prod.reaper: no agent service"),
            "plan failed: ConfigurationError: environments.prod.reaper: no agent service\n",
        ),
        (RuntimeError("boom"), "plan failed: InternalError: RuntimeError: boom\n"),
    ],
    ids=["typed", "unexpected"],
)
def test_a_plan_that_raised_is_one_typed_line_on_stderr_and_exit_1(
    error: Exception, line: str, reaper: PlanStandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    reaper.error = error
    assert plan.main(["reaper", *PROD]) == 1
    printed = capsys.readouterr()
    assert (printed.out, printed.err) == ("", line)


def test_a_failed_report_ends_with_its_first_error_and_where_the_refused_key_came_from(
    reaper: PlanStandIn, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("LIVEKIT_API_KEY", raising=False)
    refused = {"code": "LiveKitApiError", "message": "LiveKit ListRooms failed: HTTP 401: unauthorized"}
    reaper.answer = {**REPORT, "status": "failed", "errors": [refused]}
    assert plan.main(["reaper", *PROD]) == 1
    secret = load_config_file(CONFIG, "prod").livekit_secret_name
    printed = capsys.readouterr()
    assert "  !! LiveKitApiError: LiveKit ListRooms failed: HTTP 401: unauthorized" in printed.out
    assert printed.err == (
        "plan failed: LiveKitApiError: LiveKit ListRooms failed: HTTP 401: unauthorized (the key and "
        f"secret came from the secret {secret} ({CONFIG}: environments.prod.livekit_secret_name))\n"
    )
