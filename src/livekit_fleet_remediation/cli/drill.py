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
from fleet_remediation.contract.budgets import ACTION_EVENTS_PUT, KILL_SWITCH_READ, AwsCallBudget
from fleet_remediation.contract.drainer_steps import TAKING_OUT
from fleet_remediation.contract.drills import DRILL_TAG, MAX_DRILL_SECONDS, DrillFault, DrillMarker
from fleet_remediation.contract.naming import (
    FunctionName,
    mode_parameter_name,
    service_mode_parameter_name,
)
from fleet_remediation.core.announce import ActionEventSink
from livekit_fleet_remediation.cli.audit import read as read_audit
from livekit_fleet_remediation.cli.audit_sources import Clients, Progress
from livekit_fleet_remediation.cli.audit_timeline import ACTED, WOULD_ACT, Entry
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
from livekit_fleet_remediation.cli.drill_events import drill_event, told
from livekit_fleet_remediation.cli.drill_fis_run import FisClients, FisDrill, FisRequest
from livekit_fleet_remediation.cli.drill_run import DrillRun, iso, render
from livekit_fleet_remediation.cli.drill_target import DrillTarget, choose_task, running_tasks
from livekit_fleet_remediation.config import EnvironmentConfig

# One tag write or read on the drilled task: idempotent (the same value again is the same tag), so a
# lost reply is re-read, not feared.
DRILL_TAG_CALL = AwsCallBudget("ecs", connect_timeout_seconds=1.0, read_timeout_seconds=3.0, attempts=3)
# What counts as the remediation answering each fault: the drainer taking the task out, or the
# reaper deleting the held room.
ANSWERS = {
    DrillFault.TTS_SILENCE: (FunctionName.WORKER_DRAINER, TAKING_OUT),
    DrillFault.CPU_STARVED: (FunctionName.WORKER_DRAINER, TAKING_OUT),
    DrillFault.ABANDONED_SESSION: (FunctionName.ZOMBIE_REAPER, frozenset({"delete-room"})),
}


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


def check_allowed(config: EnvironmentConfig, env: str, minutes: float, now: datetime) -> None:
    if not config.drills.enabled:
        raise CommandFailed(
            "DrillNotAllowed",
            f"environment {env} is not named for drills: set drills.enabled in its configuration",
        )
    if not 0 < minutes * 60 <= MAX_DRILL_SECONDS:
        raise UsageError(f"--minutes must be more than 0 and at most {MAX_DRILL_SECONDS // 60}")
    if config.disruption_window is not None and not config.disruption_window.allows(now):
        raise CommandFailed(
            "DrillHeld", "outside the disruption window: a drill disrupts like the drainer does"
        )


def current_mode(ssm: Any, env: str, service: str) -> str:
    """The effective mode (the environment's switch is the ceiling); unreadable is a refusal."""
    names = [mode_parameter_name(env), service_mode_parameter_name(env, service)]
    values = []
    for name in names:
        try:
            values.append(ssm.get_parameter(Name=name)["Parameter"]["Value"])
        except ssm.exceptions.ParameterNotFound:
            continue
        except (ClientError, BotoCoreError) as exc:
            raise CommandFailed("ModeUnknown", f"cannot read the kill switch {name}: {exc}") from exc
    if not values:
        raise CommandFailed("ModeUnknown", f"no kill switch {names[0]}: is environment {env} deployed here?")
    if "off" in values:
        raise CommandFailed("DrillNotAllowed", f"remediation is off in {env}/{service}: nothing would answer")
    return "dry-run" if "dry-run" in values else "enforce"


def answer_of(fault: DrillFault, entries: Sequence[Entry], target: DrillTarget, mode: str) -> Entry | None:
    function, actions = ANSWERS[fault]
    wanted_kind = WOULD_ACT if mode == "dry-run" else ACTED
    for entry in sorted(entries, key=lambda e: e.at):
        on_target = fault is DrillFault.ABANDONED_SESSION or target.task_id in entry.target
        if entry.function == function and entry.action in actions and entry.kind == wanted_kind and on_target:
            return entry
    return None


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
        self._tag(target, marker)
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
            run.seen = [entry for entry in entries if entry.at >= run.started]
            run.answered = answer_of(run.fault, run.seen, run.target, run.mode)
            if run.answered is not None or self.clock() >= deadline:
                return
            self.sleep(min(poll_seconds, max(0.0, (deadline - self.clock()).total_seconds())))

    def record(self, run: DrillRun, action: str, outcome: str) -> None:
        if self.events is None:
            return
        problem = told(self.events, drill_event(run, self.env, self.service, action, outcome, self.clock()))
        if problem:
            self.progress.write(problem)

    def stop(self, run: DrillRun) -> None:
        try:
            self.ecs.untag_resource(resourceArn=run.target.task_arn, tagKeys=[DRILL_TAG])
            run.marker_removed = True
        except (ClientError, BotoCoreError) as exc:
            self.progress.write(
                f"drill: could not remove the marker ({exc}); it ends by itself at {iso(run.until)}, or: "
                f"aws ecs untag-resource --resource-arn {run.target.task_arn} --tag-keys {DRILL_TAG}"
            )

    def _tag(self, target: DrillTarget, marker: DrillMarker) -> None:
        try:
            self.ecs.tag_resource(
                resourceArn=target.task_arn, tags=[{"key": DRILL_TAG, "value": marker.value()}]
            )
        except (ClientError, BotoCoreError) as exc:
            raise CommandFailed("DrillNotStarted", f"could not mark task {target.task_id}: {exc}") from exc


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
        service_names = [service.name for service in config.agent_services]
        service = args.service or (service_names[0] if len(service_names) == 1 else None)
        if service not in service_names:
            raise UsageError(f"--service must be one of {', '.join(service_names)}")
        agent = next(s for s in config.agent_services if s.name == service)
        check_allowed(config, env, args.minutes, datetime.now(UTC))
        args.mode = current_mode(ssm or aws_client(KILL_SWITCH_READ, region_name=region), env, service)
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
        drill.record(run, "drill-verdict", "pass" if run.answered else "fail")
    except (UsageError, InvalidConfig) as exc:
        print(f"lkfr drill: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (CommandFailed, ClientError, BotoCoreError) as exc:
        print(f"drill failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        json.dump(run.document(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render(run, sys.stdout)
    return EXIT_OK if run.answered and run.marker_removed else EXIT_FAILED
