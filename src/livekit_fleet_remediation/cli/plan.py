"""What the reaper or the drainer would do right now, against the live LiveKit and AWS, from a laptop.

    lkfr plan reaper|drainer --env NAME [--json] [--config FILE] [--region R] [--ledger-table NAME]

Always a dry run: the kill switch is fixed at ``dry-run`` (the SSM switch is never read, so it can
never say ``enforce``), the event is a manual dry run, and nothing is published. It runs the
function's own handler with its settings built from the environments file, exactly as the stack
builds them, and prints the report through the same renderer as ``cli/render.py`` (``--json``: the
raw report), followed by the notification the function would send.

LiveKit (``cli/plan_livekit.py``): ``LIVEKIT_URL`` (``wss://``, ``ws://``, ``https://`` or
``http://``), ``LIVEKIT_API_KEY`` and ``LIVEKIT_API_SECRET`` when set (the URL falls back to the
environment's ``livekit_url``); otherwise the key comes from the Secrets Manager secret it names
(``livekit_secret_name``). AWS: the usual credential chain; the region is ``--region``, else the
environment's. The drainer also needs its ledger table: ``--ledger-table``, or read from the
deployed drainer's configuration.

Exit status: 0 when the plan ran (whatever it found), 1 on a typed failure (the error on one line on
stderr), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.adapters.logs_insights import CloudWatchLogsInsights
from fleet_remediation.contract.budgets import LAMBDA_CONFIGURATION_READ
from fleet_remediation.contract.naming import (
    FunctionName,
    function_mode_parameter_name,
    lambda_function_name,
    mode_parameter_name,
)
from fleet_remediation.contract.settings import (
    DrainerSettings,
    ReaperSettings,
    SettingsT,
    settings_for_deployment,
)
from fleet_remediation.contract.signals import SignalCatalog
from fleet_remediation.core.error_hints import CONFIGURATION, credentials_hint
from fleet_remediation.core.errors import ConfigurationError, RemediationError
from fleet_remediation.core.messages import REPORT_LINK_LABEL
from fleet_remediation.core.observability import logger
from fleet_remediation.core.report_model import Mode
from livekit_fleet_remediation.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CommandFailed,
    InvalidConfig,
    UsageError,
    add_common,
    configuration,
    use_region,
)
from livekit_fleet_remediation.cli.plan_livekit import (
    PlanFailed,
    credentials_source,
    livekit_url,
    rooms_factory,
)
from livekit_fleet_remediation.cli.render import render_report
from livekit_fleet_remediation.config import EnvironmentConfig
from livekit_fleet_remediation.offline.fixed_mode import FixedModeSwitch
from livekit_fleet_remediation.offline.lambda_context import LocalLambdaContext

FUNCTIONS = {"reaper": FunctionName.ZOMBIE_REAPER, "drainer": FunctionName.WORKER_DRAINER}
NOT_PUBLISHED = "plan: nothing is published"


class HeldNotifier:
    """Keeps what the function would publish instead of publishing it."""

    def __init__(self) -> None:
        self.held: list[tuple[str, str]] = []

    def publish(self, subject: str, message: str, attributes: dict[str, str] | None = None) -> str:
        self.held.append((subject, message))
        return f"held-{len(self.held)}"


class NoWorkerProbe:
    """A laptop cannot reach the tasks' ``/worker`` endpoints: the drainer falls back to live rooms,
    as it does when it does not run in the agents' VPC."""

    calls = 0

    def active_jobs(self, task: Any) -> int | None:
        return None


def settings(model: type[SettingsT], env: str, config: EnvironmentConfig, **values: object) -> SettingsT:
    """The function's settings model from cdk.json, as ``deployed_settings`` builds it at synth."""
    common: dict[str, object] = {
        "environment_name": env,
        "mode_parameter_name": mode_parameter_name(env),
        "function_mode_parameter_name": function_mode_parameter_name(env, model.function),
        "notification_topic_arn": NOT_PUBLISHED,
        "runbook_base_url": config.runbook_base_url,
        "runbook_links": config.runbook_links,
        "aws_region": config.region,
        "livekit_url": livekit_url(config),
        "livekit_secret_id": config.livekit_secret_name,
    }
    return settings_for_deployment(model, {**common, **values}, f"environments.{env}.")


def plan_reaper(env: str, config: EnvironmentConfig, notifier: HeldNotifier) -> dict[str, Any]:
    from zombie_reaper import handler
    from zombie_reaper.dependencies import ReaperDependencies

    reaper = settings(
        ReaperSettings, env, config, reaper=config.reaper, agent_services=config.service_identities
    )
    deps = ReaperDependencies(
        settings=reaper,
        mode_switch=FixedModeSwitch(Mode.DRY_RUN),
        notifier=notifier,
        room_service_factory=rooms_factory(reaper, reaper.reaper.livekit_request_timeout_seconds),
    )
    return dict(handler.lambda_handler({"dry_run": True}, LocalLambdaContext(), dependencies=deps))


def deployed_ledger_table(env: str, service: str) -> str:
    name = lambda_function_name(env, FunctionName.WORKER_DRAINER, service)
    try:
        found = aws_client(LAMBDA_CONFIGURATION_READ).get_function_configuration(FunctionName=name)
    except (ClientError, BotoCoreError) as exc:
        hint = credentials_hint(exc, action="GetFunctionConfiguration", resource=name)
        if hint is not None:
            raise PlanFailed("ConfigurationError", f"cannot read {name}'s configuration: {hint}") from exc
        raise PlanFailed(
            "ConfigurationError",
            f"cannot read {name}'s configuration for its ledger table ({exc}); deploy the stack or pass "
            "--ledger-table",
        ) from exc
    table = found.get("Environment", {}).get("Variables", {}).get("LEDGER_TABLE_NAME")
    if not table:
        raise PlanFailed("ConfigurationError", f"{name} has no LEDGER_TABLE_NAME: pass --ledger-table")
    return str(table)


def plan_drainer(
    env: str, config: EnvironmentConfig, notifier: HeldNotifier, ledger_table: str | None
) -> dict[str, Any]:
    from fleet_remediation.adapters.alarm_state import CloudWatchAlarmStates
    from worker_drainer import handler
    from worker_drainer.adapters.ecs_tasks import BotoEcsTasks
    from worker_drainer.adapters.ledger import DynamoLedger
    from worker_drainer.adapters.worker_logs import InsightsWorkerLogs
    from worker_drainer.dependencies import DrainerDependencies

    # The plan covers the environment's first agent service.
    service = config.agent_service
    drainer = settings(
        DrainerSettings,
        env,
        config,
        reaper=config.reaper,
        drainer=config.drainer_of(service),
        signals=config.detection_of(service).signals,
        agent_service=service.name,
        ecs_cluster=service.ecs_cluster,
        ecs_service=service.ecs_service,
        ledger_table_name=ledger_table or deployed_ledger_table(env, service.name),
        agent_log_group=service.agent_log_group,
    )
    deps = DrainerDependencies(
        settings=drainer,
        mode_switch=FixedModeSwitch(Mode.DRY_RUN),
        notifier=notifier,
        ecs=BotoEcsTasks(
            drainer.ecs_cluster,
            drainer.ecs_service,
            request_timeout_seconds=drainer.drainer.ecs_request_timeout_seconds,
        ),
        ledger=DynamoLedger(drainer.ledger_table_name, drainer.ecs_service),
        worker_logs=InsightsWorkerLogs(
            CloudWatchLogsInsights(),
            drainer.agent_log_group,
            SignalCatalog.from_settings(drainer.signals),
        ),
        worker_probe=NoWorkerProbe(),
        room_service_factory=rooms_factory(drainer, drainer.drainer.livekit_request_timeout_seconds),
        alarm_states=CloudWatchAlarmStates(),
    )
    return dict(handler.lambda_handler({"action": "plan"}, LocalLambdaContext(), dependencies=deps))


def load_plan_config(args: argparse.Namespace) -> tuple[str, EnvironmentConfig, str]:
    """The environment's name and configuration, and where it was read from (file, stack or app). One
    that does not validate is a typed failure (exit 1), as the handler's own ConfigurationError would be."""
    try:
        source = configuration(args)
        return (*source.load(args.env), source.where)
    except InvalidConfig as exc:
        raise PlanFailed(ConfigurationError.code, str(exc)) from exc


@contextmanager
def quiet() -> Iterator[None]:
    """The plan prints the report itself: Powertools' JSON log lines and EMF documents stay off the
    terminal while it runs (and come back after, for whoever called ``main`` in-process). Tracing is
    off anyway outside Lambda."""
    level, disabled = logger.log_level, os.environ.get("POWERTOOLS_METRICS_DISABLED")
    logger.setLevel("WARNING")
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"
    try:
        yield
    finally:
        logger.setLevel(level)
        if disabled is None:
            os.environ.pop("POWERTOOLS_METRICS_DISABLED", None)
        else:
            os.environ["POWERTOOLS_METRICS_DISABLED"] = disabled


def _without_report_link(text: str) -> str:
    """A plan logs no report, so its message links to none."""
    return "\n".join(line for line in text.splitlines() if not line.startswith(f"- {REPORT_LINK_LABEL}:"))


def render(report: dict[str, Any], held: list[tuple[str, str]]) -> str:
    summary = dict(report.get("summary") or {})
    would = summary.pop("would_notify", None)
    lines = [render_report({**report, "summary": summary})]
    previews = [would] if would else [{"subject": s, "text": t} for s, t in held]
    for preview in previews:
        text = _without_report_link(preview["text"])
        lines += ["", "notification it would send:", f"Subject: {preview['subject']}", text]
    return "\n".join(lines)


def failure_line(report: dict[str, Any], env: str, config: EnvironmentConfig, where: str) -> str:
    first = report["errors"][0]
    message = " ".join(first["message"].split()).replace(CONFIGURATION, where)
    line = f"plan failed: {first['code']}: {message}"
    if first["code"] == "LiveKitApiError" and "HTTP 401" in first["message"]:
        line += f" ({credentials_source(env, config, where)})"
    return line


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(prog="lkfr plan", description=__doc__.split("\n\n")[0])
    found.add_argument("function", choices=sorted(FUNCTIONS), help="the function whose run to plan")
    add_common(found)
    found.add_argument("--json", action="store_true", help="print the raw report")
    found.add_argument("--ledger-table", help="the drainer's ledger table (default: the deployed one's)")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    command = parser()
    args = command.parse_args(argv)
    notifier = HeldNotifier()
    try:
        env, config, where = load_plan_config(args)
        use_region(args.region, config)
        with quiet():
            if args.function == "reaper":
                report = plan_reaper(env, config, notifier)
            else:
                report = plan_drainer(env, config, notifier, args.ledger_table)
    except UsageError as exc:
        command.print_usage(sys.stderr)
        print(f"{command.prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (PlanFailed, CommandFailed) as exc:
        print(f"plan failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except RemediationError as exc:
        print(f"plan failed: {exc.code}: {exc.message}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as exc:  # the handler reported it (InternalError) and re-raised it
        print(f"plan failed: InternalError: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps(report, indent=2) if args.json else render(report, notifier.held))
    if report["status"] == "failed":
        print(failure_line(report, env, config, where), file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
