"""``lkfr audit`` on moto: the deployed functions found by their configuration, the reports the
functions log (real Powertools lines from ``run_reported``) and the drainer's ledger (written by
``DynamoLedger``) read back as one timeline; a step only the ledger holds is ``unknown``; a log group
named by LoggingConfig (moto keeps none: ``LambdaWithLoggingConfig`` stands in for that one call);
the errors for missing credentials and for an environment with nothing deployed."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from devkit import moto_deployment
from fleet_remediation.contract.naming import PER_SERVICE_FUNCTIONS, FunctionName, lambda_function_name
from fleet_remediation.core.invocation import run_reported
from fleet_remediation.core.report import ReportBuilder
from fleet_remediation.core.report_model import Decision, Mode, Outcome
from livekit_fleet_remediation.cli import audit
from livekit_fleet_remediation.cli.audit_sources import Clients
from worker_drainer.adapters.ledger import AuditKey, DynamoLedger

ENV = "audit"
REGION = "eu-west-1"
TABLE = "audit-drainer-ledger"
TASK = "2789d238aa5f4b0f9c3e8d1b2a4c6e8f"


def ledger_table() -> None:
    boto3.client("dynamodb").create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )


@pytest.fixture
def account() -> Iterator[None]:
    with mock_aws():
        ledger_table()
        moto_deployment.deploy(ENV, TABLE)
        yield


def reaper_run(invocation: str, mode: Mode) -> dict[str, Any]:
    """One reaper invocation's report, logged into its log group as in Lambda."""

    def body(report: ReportBuilder) -> None:
        report.environment, report.mode, report.incident = ENV, mode, f"{ENV}.zombie-reaper.test"
        decision = Decision.ACT if mode is Mode.ENFORCE else Decision.WOULD_ACT
        report.candidate("test-room-1", decision, "reap: age 3365s >= max 1800s")
        if mode is Mode.ENFORCE:
            report.action("test-room-1", "delete-room", Outcome.DONE)

    with moto_deployment.logged(ENV, FunctionName.ZOMBIE_REAPER):
        return run_reported(FunctionName.ZOMBIE_REAPER.value, invocation, body)


def audit_json(
    capsys: pytest.CaptureFixture[str], *extra: str, clients: Clients | None = None
) -> dict[str, Any]:
    argv = ["--env", ENV, "--hours", "1", "--region", REGION, "--json", *extra]
    assert audit.main(argv, clients=clients) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    assert captured.err == ""
    document: dict[str, Any] = json.loads(captured.out)
    return document


def test_the_reports_and_the_ledger_make_one_timeline(
    account: None, capsys: pytest.CaptureFixture[str]
) -> None:
    reaper_run("inv-dry", Mode.DRY_RUN)
    reaper_run("inv-reap", Mode.ENFORCE)
    # A drainer step whose intent was recorded and whose invocation never logged a report.
    DynamoLedger(TABLE, "agent-svc").audit(
        TASK,
        AuditKey("inv-lost", datetime.now(UTC), 0),
        {"action": "cordon", "planned_because": "degraded", "outcome": "intended", "incident": f"{ENV}.vad"},
    )
    document = audit_json(capsys)
    assert (
        document["functions"][lambda_function_name(ENV, FunctionName.WORKER_DRAINER, "agents")][
            "ledger_table"
        ]
        == TABLE
    )
    steps = [(e["function"], e["kind"], e["action"], e["target"], e["source"]) for e in document["entries"]]
    assert steps == [
        ("worker_drainer", "unknown", "cordon", TASK, "ledger"),
        ("zombie_reaper", "acted", "delete-room", "test-room-1", "report"),
        ("zombie_reaper", "would-act", "delete-room", "test-room-1", "report"),
    ]
    lost, reaped, planned = document["entries"]
    assert lost["undo"] == f"lkfr undo --env {ENV} --task {TASK} --region {REGION}"
    assert lost["reason"].startswith("intent recorded, no outcome")
    assert lost["incident"] == f"{ENV}.vad"
    assert reaped["undo"] is None  # a deleted room does not come back
    assert reaped["reason"] == "reap: age 3365s >= max 1800s"
    assert (reaped["incident"], reaped["invocation"], reaped["mode"]) == (
        f"{ENV}.zombie-reaper.test",
        "inv-reap",
        "enforce",
    )
    assert planned["mode"] == "dry-run"


def test_the_text_timeline_names_each_step_and_its_undo(
    account: None, capsys: pytest.CaptureFixture[str]
) -> None:
    reaper_run("inv-reap", Mode.ENFORCE)
    assert audit.main(["--env", ENV, "--hours", "2", "--region", REGION]) == 0
    out = capsys.readouterr().out
    assert "zombie_reaper   acted     delete-room test-room-1" in out
    assert f"incident {ENV}.zombie-reaper.test  invocation inv-reap  (mode enforce; from report)" in out


class LambdaWithLoggingConfig:
    """Lambda's GetFunctionConfiguration with a LoggingConfig (moto keeps none): each function logs
    into a generated group, as the construct may name it."""

    def __init__(self, groups: dict[str, str]) -> None:
        self.groups = groups

    def get_function_configuration(self, *, FunctionName: str) -> dict[str, Any]:
        assert FunctionName in self.groups, FunctionName
        return {"LoggingConfig": {"LogFormat": "JSON", "LogGroup": self.groups[FunctionName]}}


def test_the_log_group_comes_from_the_functions_logging_config(
    account: None, capsys: pytest.CaptureFixture[str]
) -> None:
    name = lambda_function_name(ENV, FunctionName.ZOMBIE_REAPER)
    generated = "LiveKitFleetRemediation-audit-ReaperLogGroupA1B2C3"
    logs = boto3.client("logs")
    logs.create_log_group(logGroupName=generated)
    logs.create_log_stream(logGroupName=generated, logStreamName="s")
    builder = ReportBuilder(FunctionName.ZOMBIE_REAPER.value, "inv-1")
    builder.action("test-room-1", "delete-room", Outcome.DONE)
    # Only in the generated group: the default group (which the demo's deploy also made) stays empty.
    report = builder.finish().model_dump(mode="json")
    line = {"level": "INFO", "message": "remediation report", "report": report}
    stamp = int(datetime.now(UTC).timestamp() * 1000)
    logs.put_log_events(
        logGroupName=generated,
        logStreamName="s",
        logEvents=[{"timestamp": stamp, "message": json.dumps(line)}],
    )
    groups = {
        lambda_function_name(ENV, f, "agents" if f in PER_SERVICE_FUNCTIONS else None): f"/generated/{f.slug}"
        for f in FunctionName
    } | {name: generated}
    clients = Clients(REGION, LambdaWithLoggingConfig(groups), logs, boto3.client("dynamodb"))
    document = audit_json(capsys, clients=clients)
    assert (
        document["functions"][lambda_function_name(ENV, FunctionName.ZOMBIE_REAPER)]["log_group"] == generated
    )
    assert [(e["invocation"], e["action"]) for e in document["entries"]] == [("inv-1", "delete-room")]


def test_an_environment_with_nothing_deployed_is_a_typed_failure(capsys: pytest.CaptureFixture[str]) -> None:
    with mock_aws():
        assert audit.main(["--env", "nowhere", "--hours", "1", "--region", REGION]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("audit failed: ConfigurationError: none of lkfr-nowhere-zombie-reaper")


def test_missing_credentials_say_how_to_sign_in(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # A fresh default session (an earlier test's caches its credentials), and no endpoint to reach.
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    for name in [n for n in os.environ if n.startswith("AWS_") and n != "AWS_DEFAULT_REGION"]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert audit.main(["--env", ENV, "--hours", "1", "--region", REGION]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"audit failed: AwsApiError: GetFunctionConfiguration lkfr-{ENV}-zombie-reaper: ")
    assert "no AWS credentials found: sign in" in line
