"""Fake one failure on one task of your own fleet and watch the product handle it.

    lkfr drill --env NAME --fault tts-silence|cpu-starved|abandoned-session
               [--service S] [--task ID] [--minutes N] [--via hook|fis] [--json] [--config F]
               [--region R]

The drill tags ONE running task of the agent service with the marker the agent package's drill hook
reads (``livekit-fleet-drill = <fault>:<until>:<id>``; the agents must run ``livekit_fleet_agent``
with the drill hook wired, see the docs' drill page), then reads the product's own record
(``lkfr audit``: the functions' reports and the drainer's ledger) until the remediation has acted on
that task (in ``dry-run``: decided it would) or the drill's minutes run out, removes the marker, and
prints pass or fail with the timeline. The marker also ends by itself at its ``until`` second.

``--via fis`` drills through the construct's AWS FIS experiment template instead (``drills.fis``;
cpu-starved, and tts-silence where the TTS provider's hosts are configured): FIS picks the one task,
the command watches it as above and stops the experiment at the end (``drill_fis_run``).

It refuses an environment whose configuration does not allow drills (``drills.enabled``), a service
or environment whose switch is ``off``, a time outside the disruption window, a task that is not a
running task of the service, an excluded or draining task, and a second drill in the same service.
Exit status: 0 the drill passed, 1 it failed or was refused (one line on stderr says why), 2 bad
arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from fleet_remediation.adapters.action_events import EventBridgeActionEvents
from fleet_remediation.adapters.aws_clients import aws_client
from fleet_remediation.adapters.drill_marker import (
    put_marker,
    read_drilled_mode,
    remove_marker,
    running_tasks,
)
from fleet_remediation.contract.agent_services import AgentServiceConfig
from fleet_remediation.contract.budgets import ACTION_EVENTS_PUT, DRILL_TAG_CALL, KILL_SWITCH_READ
from fleet_remediation.contract.drills import MAX_DRILL_SECONDS, DrillFault, DrillMarker
from fleet_remediation.core.announce import ActionEventSink
from fleet_remediation.core.errors import RemediationError
from fleet_remediation.domain.drill_steps import (
    DrillRun,
    DrillTarget,
    check_allowed,
    choose_task,
    drill_event,
    told,
)
from livekit_fleet_remediation.cli.audit import read as read_audit
from livekit_fleet_remediation.cli.audit_sources import Clients, Progress
from livekit_fleet_remediation.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CommandFailed,
    InvalidConfig,
    UsageError,
    add_common,
    configuration,
)
from livekit_fleet_remediation.cli.drill_fis_run import FisClients, FisDrill, FisRequest
from livekit_fleet_remediation.cli.drill_run import document, iso, render
from livekit_fleet_remediation.config import EnvironmentConfig

DRILL_FUNCTION = "lkfr drill"


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="lkfr drill", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common(found)
    found.add_argument(
        "--fault", required=True, choices=[fault.value for fault in DrillFault], help="the failure to fake"
    )
    found.add_argument("--service", help="the agent service (default: the environment's only one)")
    found.add_argument("--task", help="the task id or ARN to drill (default: the longest-running one)")
    found.add_argument("--minutes", type=float, default=15.0, help="how long to wait for the answer")
    found.add_argument("--poll-seconds", type=float, default=20.0, help="how often to read the audit")
    found.add_argument("--json", action="store_true", help="one JSON document instead of the timeline")
    found.add_argument(
        "--via",
        choices=["hook", "fis"],
        default="hook",
        help="hook: the agent package's drill hook; fis: the construct's AWS FIS experiment template",
    )
    return found


def _service_of(config: EnvironmentConfig, wanted: str | None) -> AgentServiceConfig:
    """The agent service ``--service`` names, else the environment's only one."""
    names = [service.name for service in config.agent_services]
    name = wanted or (names[0] if len(names) == 1 else None)
    if name not in names:
        raise UsageError(f"--service must be one of {', '.join(names)}")
    return config.agent_services[names.index(name)]


def check_minutes(minutes: float) -> None:
    if not 0 < minutes * 60 <= MAX_DRILL_SECONDS:
        raise UsageError(f"--minutes must be more than 0 and at most {MAX_DRILL_SECONDS // 60}")


@dataclass
class Drill:
    """One drill's calls, with the waits injectable (tests run it on a simulated clock)."""

    ecs: Any
    audit_clients: Clients
    env: str
    service: str
    progress: Progress
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    # Where the drill's own action events go (the command's default: the account's default bus).
    events: ActionEventSink | None = None

    def start(
        self, fault: DrillFault, target: DrillTarget, minutes: float, mode: str, drill_id: str
    ) -> DrillRun:
        now = self.clock()
        marker = DrillMarker(fault, int(now.timestamp() + minutes * 60), drill_id)
        put_marker(self.ecs, target, marker)
        run = DrillRun(fault, target, marker, now, mode)
        self.progress.write(
            f"drill {drill_id}: {fault.value} on task {target.task_id} until {iso(run.until)}"
        )
        return run

    def watch(self, run: DrillRun, poll_seconds: float) -> None:
        self.record(run, "drill-start", "started")
        deadline = run.until
        while True:
            _, entries = read_audit(self.env, run.started, self.audit_clients, self.progress, [self.service])
            run.look(entries)
            if run.answered is not None or self.clock() >= deadline:
                return
            self.sleep(min(poll_seconds, max(0.0, (deadline - self.clock()).total_seconds())))

    def record(self, run: DrillRun, action: str, outcome: str) -> None:
        if self.events is None:
            return
        event = drill_event(run, DRILL_FUNCTION, self.env, self.service, action, outcome, self.clock())
        problem = told(self.events, event)
        if problem:
            self.progress.write(problem)

    def stop(self, run: DrillRun) -> None:
        problem = remove_marker(self.ecs, run.target, iso(run.until))
        run.marker_removed = problem is None
        if problem:
            self.progress.write(f"drill: {problem}")


def _via_hook(
    drill: Drill, cluster: str, ecs_service: str, args: argparse.Namespace, run_id: str
) -> DrillRun:
    tasks = running_tasks(drill.ecs, cluster, ecs_service)
    target = DrillTarget(cluster, choose_task(tasks, args.task, drill.service))
    run = drill.start(DrillFault(args.fault), target, args.minutes, args.mode, run_id)
    try:
        drill.watch(run, args.poll_seconds)
    finally:
        drill.stop(run)
    return run


def main(
    argv: Sequence[str] | None = None,
    drill: Drill | None = None,
    ssm: Any = None,
    fis_clients: FisClients | None = None,
) -> int:
    args = parser().parse_args(argv)
    progress = Progress(lambda line: print(line, file=sys.stderr))
    try:
        env, config = configuration(args).load(args.env)
        region = args.region or config.region
        agent = _service_of(config, args.service)
        service = agent.name
        check_minutes(args.minutes)
        check_allowed(config.drills.enabled, env, config.disruption_window, datetime.now(UTC))
        ssm = ssm or aws_client(KILL_SWITCH_READ, region_name=region)
        args.mode = read_drilled_mode(ssm, env, service)
        drill = drill or Drill(
            aws_client(DRILL_TAG_CALL, region_name=region), Clients.budgeted(region), env, service, progress
        )
        if drill.events is None:
            drill.events = EventBridgeActionEvents(client=aws_client(ACTION_EVENTS_PUT, region_name=region))
        run_id = f"drill-{int(time.time())}"
        if args.via == "hook":
            run = _via_hook(drill, agent.ecs_cluster, agent.ecs_service, args, run_id)
        else:
            fault, cluster = DrillFault(args.fault), agent.ecs_cluster
            request = FisRequest(
                env, service, cluster, agent.ecs_service, fault, args.minutes, args.mode, run_id
            )
            clients = fis_clients or FisClients.budgeted(region)
            fis = FisDrill(clients, drill.ecs, progress, drill.sleep, drill.clock)
            run = fis.run(request, lambda started: drill.watch(started, args.poll_seconds))
        drill.record(run, "drill-verdict", run.verdict)
    except (UsageError, InvalidConfig) as exc:
        print(f"lkfr drill: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except RemediationError as exc:
        print(f"drill failed: {exc.code}: {exc.message}", file=sys.stderr)
        return EXIT_FAILED
    except (CommandFailed, ClientError, BotoCoreError) as exc:
        print(f"drill failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        json.dump(document(run), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render(run, sys.stdout)
    return EXIT_OK if run.answered and run.marker_removed else EXIT_FAILED
